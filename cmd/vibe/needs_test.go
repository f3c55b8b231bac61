package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/engine"
	"github.com/augceo/vibe/internal/llmtest"
	"github.com/augceo/vibe/process"
)

// TestItemBatch: an item's id names its batch — the batch's id, '-', the
// item's line —, and a process's id, whose tail is eight hex digits that
// may all be digits, is read as an item's only when no record of its own
// is found.
func TestItemBatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		id, batch string
		ok        bool
	}{
		{"rev-1", "rev", true},
		{"my-batch-2-120", "my-batch-2", true},
		{"rev-0", "", false},
		{"rev-01", "", false},
		{"rev-", "", false},
		{"-3", "", false},
		{"meeting-1a2b3c4d", "", false},
		{"rev", "", false},
	}
	for _, tt := range tests {
		if b, ok := itemBatch(tt.id); b != tt.batch || ok != tt.ok {
			t.Errorf("itemBatch(%q) = %q, %v; want %q, %v", tt.id, b, ok, tt.batch, tt.ok)
		}
	}
}

// TestAnswerBatchItemWithoutFlags: vibe batch keeps what its items need
// in the data directory (DATA/needs/batches/ID.json: the actions file,
// the model and its endpoint, never a key); vibe batch is killed while
// its items wait for a person, and vibe answer ITEM J typed without
// --actions-file or --llm finishes the item with them, its action called.
func TestAnswerBatchItemWithoutFlags(t *testing.T) {
	t.Parallel() // vibe batch runs in a child process, on a data directory and model of its own
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	if os.Getenv("VIBE_LLM") != "" || os.Getenv("VIBE_LLM_API_KEY") != "" {
		t.Skip("$VIBE_LLM or $VIBE_LLM_API_KEY is set: vibe answer would take it rather than the record")
	}
	dir := t.TempDir()
	review, err := os.ReadFile(filepath.Join("..", "..", "batch", "testdata", "review.json"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "review.json"), review, 0o600)
	var recorded atomic.Int32
	record := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		recorded.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"recorded": 1}`)
	}))
	t.Cleanup(record.Close)
	actions := filepath.Join(dir, "actions.json")
	os.WriteFile(actions, []byte(fmt.Sprintf(`{"record": %q}`, record.URL)), 0o600)
	os.WriteFile(filepath.Join(dir, "items.jsonl"), []byte("\"comment 1\"\n\"comment 2\"\n"), 0o600)
	model := llmtest.NewServer(t, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{})
	data := filepath.Join(dir, "data")

	feeder, feederOut := child(t, "batch", filepath.Join(dir, "review.json"), "--in", filepath.Join(dir, "items.jsonl"), "--out", filepath.Join(dir, "out.jsonl"),
		"--id", "rev", "--data", data, "--actions-file", actions, "--llm", "openai:test-model", "--llm-base-url", model.URL)
	ctx := context.Background()
	var waiting int
	waitUntil(t, "both items to wait for a person", 2*time.Minute, func() bool {
		eng, err := engine.Attach(ctx, engine.Options{DataDir: data, Logger: quietLogger()})
		if err != nil {
			return false
		}
		defer eng.Close()
		st, err := batch.NewClient(&process.Client{Temporal: eng.Client()}).Status(ctx, "rev")
		if err == nil {
			waiting = st.Waiting
		}
		return waiting == 2
	})
	feeder.Process.Signal(syscall.SIGKILL)
	feeder.Wait()

	rec, err := os.ReadFile(batchNeedsFile(data, "rev"))
	if err != nil || !strings.Contains(string(rec), actions) || !strings.Contains(string(rec), model.URL) || !strings.Contains(string(rec), `"llm": "openai:test-model"`) {
		t.Fatalf("the batch's needs: %v\n%s\nvibe batch:\n%s", err, rec, feederOut)
	}
	id := batch.ItemID("rev", 1)
	status, stdout, stderr := run(t, "", "answer", id, `{"confirm":{"approve":"yes"}}`, "--data", data)
	if status != 0 || !strings.Contains(stderr, "completed") {
		t.Fatalf("answer %s without the flags: %d\n%s%s", id, status, stdout, stderr)
	}
	if got := recorded.Load(); got != 1 {
		t.Errorf("the record action was called %d times, want once", got)
	}
}
