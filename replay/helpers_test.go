package replay_test

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
	"github.com/augceo/vibe/replay/record"
)

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// doc is a test process file, edited by each of edits (old, new pairs
// of its text) — the changed process of a replay.
func doc(t testing.TB, file string, edits ...string) process.StartOptions {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for i := 0; i+1 < len(edits); i += 2 {
		if !strings.Contains(s, edits[i]) {
			t.Fatalf("%s has no %q to change", file, edits[i])
		}
		s = strings.Replace(s, edits[i], edits[i+1], 1)
	}
	v, err := jsonv.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return process.StartOptions{Document: v, File: file}
}

// counter is the counting action "record".
type counter struct {
	mu    sync.Mutex
	total int
}

func (c *counter) calls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

func (c *counter) actions() *action.Registry {
	acts := &action.Registry{}
	acts.Register(action.Action{Name: "record", Run: func(ctx context.Context, in jsonv.Value) (jsonv.Value, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.total++
		return jsonv.ObjectValue(jsonv.Member{Name: "recorded", Value: jsonv.IntValue(int64(c.total))}), nil
	}})
	return acts
}

// model is the test model at url.
func model(url string) llm.Provider {
	return openai.New(openai.Options{Model: "m", BaseURL: url, APIKey: "k", MaxRetries: -1})
}

// recorded runs a batch of the process over n comments on an embedded
// engine whose worker keeps its records in store, and returns the
// batch's id.
func recorded(t testing.TB, url string, acts *counter, store *record.Store, opts process.StartOptions, n int) string {
	t.Helper()
	pc, stop := recordingEngine(t, url, acts, store)
	defer stop()
	c := batch.NewClient(pc)
	pc.Hosts = c
	sum, err := c.Run(context.Background(), strings.NewReader(llmtest.Comments(n)), func(batch.Result) error { return nil }, batch.Options{Process: opts, ID: "recorded", Size: 8})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Done != n {
		t.Fatalf("the recorded batch did %d of %d items: %+v", sum.Done, n, sum)
	}
	return "recorded"
}

// recordingEngine starts an embedded engine and a worker with the test
// model at url and acts's actions, keeping its records in store, and
// returns a client of its processes and what stops both.
func recordingEngine(t testing.TB, url string, acts *counter, store *record.Store) (*process.Client, func()) {
	t.Helper()
	eng, err := engine.Start(context.Background(), engine.Options{SearchAttributes: durable.SearchAttributes, DataDir: t.TempDir(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	w, err := vibe.StartWorker(eng.Client(), vibe.WorkerOptions{Provider: model(url), Actions: acts.actions(), Logger: quiet(), Records: store})
	if err != nil {
		eng.Close()
		t.Fatal(err)
	}
	stop := func() {
		w.Stop()
		eng.Close()
	}
	return &process.Client{Temporal: eng.Client(), Actions: acts.actions().Names()}, stop
}

// number is the recorded model of three.json: each of the first two
// chunks answers "comment N" with N, the third whether N is even or odd.
func number(step, prompt string, _ bool) string {
	var n int
	fmt.Sscanf(prompt, "comment %d", &n)
	if step == "third" {
		return map[bool]string{true: `{"kind":"even"}`, false: `{"kind":"odd"}`}[n%2 == 0]
	}
	return fmt.Sprintf(`{"n":%d}`, n)
}

// odd is the model of oddThree: every number is odd.
func odd(step, prompt string, repair bool) string {
	if step == "third" {
		return `{"kind":"odd"}`
	}
	return number(step, prompt, repair)
}

// thirdOnly is odd as the model of a replay of oddThree, which asks it the
// third chunk only: asked another, the test fails.
func thirdOnly(t testing.TB) func(step, prompt string, repair bool) string {
	return func(step, prompt string, repair bool) string {
		if step != "third" {
			t.Errorf("the replay asked the model for %s", step)
		}
		return odd(step, prompt, repair)
	}
}

// oddThree is three.json with the third chunk's instructions changed:
// every number is odd.
func oddThree(t testing.TB) process.StartOptions {
	return doc(t, "testdata/three.json", `"enum": ["even", "odd"]`, `"enum": ["even", "odd"], "description": "Odd, whatever the number"`)
}

// prepare compiles the changed process opts with acts's actions.
func prepare(t testing.TB, acts *counter, opts process.StartOptions) durable.Start {
	t.Helper()
	start, _, err := (&process.Client{Actions: acts.actions().Names()}).Prepare(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return start
}

// recordedTwo records two items of three.json on an embedded engine that
// keeps its records in store — the odd number's (line 1) and the even's
// (line 2) — and returns their records.
func recordedTwo(t testing.TB, acts *counter, store *record.Store) []record.Record {
	t.Helper()
	rec := llmtest.NewServer(t, llmtest.Multiplexed(number), llmtest.Options{})
	two, err := store.Batch(recorded(t, rec.URL, acts, store, doc(t, "testdata/three.json"), 2))
	if err != nil || len(two) != 2 {
		t.Fatalf("%d records, %v", len(two), err)
	}
	return two
}

// copies are n records of batch id, lines 1 to n, each line's prompt
// "comment LINE", copied from recordedTwo's two records.
func copies(two []record.Record, id string, n int) []record.Record {
	recs := make([]record.Record, n)
	for i := range recs {
		r := two[i%2]
		r.Batch, r.Line, r.ID, r.Prompt = id, i+1, batch.ItemID(id, i+1), fmt.Sprintf("comment %d", i+1)
		recs[i] = r
	}
	return recs
}
