package engine

import (
	"context"
	"testing"

	"go.temporal.io/sdk/client"
)

// BenchmarkBareActivity runs b.N one-activity workflows (Greet) one after
// another on an embedded engine, each from start to result. It is the
// baseline for Vibe's per-step overhead: a Vibe step should be compared
// with this bare Temporal activity step measured in the same run.
func BenchmarkBareActivity(b *testing.B) {
	e := startEngine(b, Options{})
	startWorker(b, e.Client(), []any{Greet}, []any{Hello})
	runGreet(b, e.Client(), "warm-up") // the first workflow also warms caches
	ctx := context.Background()
	opts := client.StartWorkflowOptions{TaskQueue: taskQueue}
	for b.Loop() {
		run, err := e.Client().ExecuteWorkflow(ctx, opts, Greet, "bench")
		if err != nil {
			b.Fatal(err)
		}
		if err := run.Get(ctx, nil); err != nil {
			b.Fatal(err)
		}
	}
}
