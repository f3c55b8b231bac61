package batch_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/internal/llmtest"
)

// TestStop closes Options.Stop once the first group's results are out:
// Run reads no more, emits the results of the groups in flight, whole
// and in order, and returns ErrStopped. A second run from After goes on
// and asks the model only about the lines not written.
func TestStop(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	const n, k = 40, 4
	model := llmtest.NewServer(t, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{Delay: 200 * time.Millisecond})
	c := stack(t, model.URL, (&recorder{}).actions())
	var (
		mu    sync.Mutex
		lines []int
	)
	emit := func(r batch.Result) error {
		mu.Lock()
		defer mu.Unlock()
		if r.Status != batch.StatusCompleted {
			t.Errorf("line %d: %+v", r.Line, r)
		}
		lines = append(lines, r.Line)
		return nil
	}
	stop := make(chan struct{})
	opts := batch.Options{Process: moderate(t), ID: "stop-1", Size: k, Concurrency: 2, Stop: stop}
	opts.Progress = func(batch.Summary) {
		select {
		case <-stop:
		default:
			close(stop)
		}
	}
	sum, err := c.Run(context.Background(), strings.NewReader(llmtest.Comments(n)), emit, opts)
	if !errors.Is(err, batch.ErrStopped) {
		t.Fatalf("Run after Stop: %v", err)
	}
	written := len(lines)
	asked := model.Requests()
	if written == 0 || written == n || written%k != 0 || sum.Lines != written || asked != written/k {
		t.Fatalf("stopped with %d lines written (summary %d) and %d model calls, want whole groups of %d, each asked once, fewer than %d",
			written, sum.Lines, asked, k, n)
	}
	t.Logf("stopped with %d of %d lines written", written, n)

	opts.Stop, opts.Progress, opts.After = nil, nil, written
	if _, err := c.Run(context.Background(), strings.NewReader(llmtest.Comments(n)), emit, opts); err != nil {
		t.Fatal(err)
	}
	for i, line := range lines {
		if line != i+1 {
			t.Fatalf("result lines %v, want 1…%d once each, in order", lines, n)
		}
	}
	if len(lines) != n {
		t.Fatalf("%d result lines, want %d", len(lines), n)
	}
	for _, b := range model.Bodies()[asked:] {
		for _, p := range llmtest.Read(b).Prompts {
			if line, _ := strconv.Atoi(strings.TrimPrefix(p, "comment ")); line <= written {
				t.Errorf("line %d was written before the stop, yet asked again", line)
			}
		}
	}
}
