package engine

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
)

// BenchmarkBareActivity runs b.N one-activity workflows (Greet) one after
// another on an embedded engine, each from start to result. It is the
// baseline for Vibe's per-step overhead: a Vibe step should be compared
// with this bare Temporal activity step measured in the same run.
//
// Besides the mean (ns/op) it reports the median (p50-ns/op): a few results
// in a hundred reach run.Get only when the server's history long poll
// expires (see dynamicConfig), which adds up to half a second to that op.
func BenchmarkBareActivity(b *testing.B) {
	e := startEngine(b, Options{})
	startWorker(b, e.Client(), []any{Greet}, []any{Hello})
	runGreet(b, e.Client(), "warm-up") // the first workflow also warms caches
	ctx := context.Background()
	opts := client.StartWorkflowOptions{TaskQueue: taskQueue}
	var took []time.Duration
	for b.Loop() {
		t0 := time.Now()
		run, err := e.Client().ExecuteWorkflow(ctx, opts, Greet, "bench")
		if err != nil {
			b.Fatal(err)
		}
		if err := run.Get(ctx, nil); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(t0))
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Nanoseconds()), "p50-ns/op")
}

// BenchmarkStartStop starts the embedded engine on a data directory that
// already holds a database and stops it again, b.N times, and reports the
// mean of each half: with Temporal's system workers, as vibe serve runs
// it, and without, as a one-shot command (`vibe batch`, `vibe run`) does;
// and without them on a new data directory each time (/new), whose start
// writes the database.
func BenchmarkStartStop(b *testing.B) {
	for _, c := range []struct {
		no, fresh bool
	}{{false, false}, {true, false}, {true, true}} {
		name := fmt.Sprintf("NoSystemWorkers=%v", c.no)
		if c.fresh {
			name += "/new"
		}
		b.Run(name, func(b *testing.B) {
			opts := Options{DataDir: b.TempDir(), Logger: testLogger(b), NoSystemWorkers: c.no}
			e, err := Start(context.Background(), opts)
			if err != nil {
				b.Fatal(err)
			}
			e.Close()
			var start, stop time.Duration
			for b.Loop() {
				if c.fresh {
					opts.DataDir = b.TempDir()
				}
				t0 := time.Now()
				e, err := Start(context.Background(), opts)
				if err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if err := e.Close(); err != nil {
					b.Fatal(err)
				}
				start, stop = start+t1.Sub(t0), stop+time.Since(t1)
			}
			b.ReportMetric(float64(start.Milliseconds())/float64(b.N), "start-ms")
			b.ReportMetric(float64(stop.Milliseconds())/float64(b.N), "stop-ms")
		})
	}
}
