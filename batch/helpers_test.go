package batch_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/augceo/vibe"
	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/engine"
	"github.com/augceo/vibe/internal/llmtest"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/llm/openai"
	"github.com/augceo/vibe/process"
)

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// moderate is the test process: one LLM chunk of two steps (assess,
// decide) and a server step that records the decision.
func moderate(t testing.TB) process.StartOptions {
	doc, err := os.ReadFile("testdata/moderate.json")
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonv.Parse(doc)
	if err != nil {
		t.Fatal(err)
	}
	return process.StartOptions{Document: v, File: "testdata/moderate.json"}
}

// reviewProcess is moderate with a person's step between the model's
// and the server's: a person confirms the decision (userContext1.confirm).
func reviewProcess(t testing.TB) process.StartOptions {
	doc, err := os.ReadFile("testdata/review.json")
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonv.Parse(doc)
	if err != nil {
		t.Fatal(err)
	}
	return process.StartOptions{Document: v, File: "testdata/review.json"}
}

// recorder is the counting action: how many times each item's decision
// was recorded.
type recorder struct {
	mu    sync.Mutex
	calls map[string]int // by idempotency key
	total int
}

func (r *recorder) actions() *action.Registry {
	acts := &action.Registry{}
	acts.Register(action.Action{Name: "record", Run: func(ctx context.Context, in jsonv.Value) (jsonv.Value, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.calls == nil {
			r.calls = map[string]int{}
		}
		r.calls[action.IdempotencyKey(ctx)]++
		r.total++
		return jsonv.ObjectValue(jsonv.Member{Name: "recorded", Value: jsonv.IntValue(int64(r.total))}), nil
	}})
	return acts
}

// stack is an embedded engine with a worker whose model is at url.
func stack(t testing.TB, url string, acts *action.Registry) *batch.Client {
	t.Helper()
	return stackWith(t, openai.New(openai.Options{Model: "m", BaseURL: url, APIKey: "k", MaxRetries: -1}), acts)
}

// stackWith is an embedded engine with a worker whose model is p.
func stackWith(t testing.TB, p llm.Provider, acts *action.Registry) *batch.Client {
	t.Helper()
	c, _ := stackOn(t, p, acts)
	return c
}

// stackOn is stackWith that gives the engine too.
func stackOn(t testing.TB, p llm.Provider, acts *action.Registry) (*batch.Client, *engine.Engine) {
	t.Helper()
	ctx := context.Background()
	eng, err := engine.Start(ctx, engine.Options{SearchAttributes: durable.SearchAttributes, DataDir: t.TempDir(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	w, err := vibe.StartWorker(eng.Client(), vibe.WorkerOptions{
		Provider: p, Actions: acts, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	pc := &process.Client{Temporal: eng.Client(), Actions: acts.Names()}
	c := batch.NewClient(pc)
	pc.Hosts = c
	return c, eng
}

// callSizes are the items of each request in bodies (1 for a single
// item's), for messages.
func callSizes(bodies []string) []int {
	out := make([]int, len(bodies))
	for i, b := range bodies {
		out[i] = len(llmtest.Read(b).Prompts)
	}
	return out
}

func mustParse(t testing.TB, s string) jsonv.Value {
	t.Helper()
	v, err := jsonv.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// checkVerdicts checks that results are n completed lines in order, each
// output what verdict answers for its comment, and each id the item's of
// batch id (unchecked for "").
func checkVerdicts(t testing.TB, results []batch.Result, n int, id string) {
	t.Helper()
	if len(results) != n {
		t.Fatalf("%d results, want %d", len(results), n)
	}
	for i, r := range results {
		line := i + 1
		prompt := fmt.Sprintf("comment %d", line)
		want := fmt.Sprintf(`{"llmContext1":{"assess":%s,"decide":%s}`, llmtest.Verdict("assess", prompt, false), llmtest.Verdict("decide", prompt, false))
		if r.Line != line || r.Status != batch.StatusCompleted || (id != "" && r.ID != batch.ItemID(id, line)) || !strings.HasPrefix(string(r.Output), want) {
			t.Fatalf("line %d: %+v; want output starting %s", line, r, want)
		}
	}
}
