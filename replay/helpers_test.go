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
func recorded(t testing.TB, p llm.Provider, acts *action.Registry, store *record.Store, opts process.StartOptions, n int) string {
	t.Helper()
	ctx := context.Background()
	eng, err := engine.Start(ctx, engine.Options{SearchAttributes: durable.SearchAttributes, DataDir: t.TempDir(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	w, err := vibe.StartWorker(eng.Client(), vibe.WorkerOptions{Provider: p, Actions: acts, Logger: quiet(), Records: store})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	pc := &process.Client{Temporal: eng.Client(), Actions: acts.Names()}
	c := batch.NewClient(pc)
	pc.Hosts = c
	var in strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&in, "%q\n", fmt.Sprintf("comment %d", i))
	}
	sum, err := c.Run(ctx, strings.NewReader(in.String()), func(batch.Result) error { return nil }, batch.Options{Process: opts, ID: "recorded", Size: 8})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Done != n {
		t.Fatalf("the recorded batch did %d of %d items: %+v", sum.Done, n, sum)
	}
	return "recorded"
}
