package request

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/vessel"
)

// TestWatch: Watch yields each change of a request once, and ends once it
// has finished or when it is not found.
func TestWatch(t *testing.T) {
	view := func(status process.Status, calls int) *Info {
		return &Info{ID: "r-1", Vessel: "v", Status: status, Calls: make([]vessel.CallResult, calls)}
	}
	tests := []struct {
		name  string
		reads []any // *Info or error
		want  []string
	}{
		{
			name:  "until completed",
			reads: []any{view(process.Running, 0), view(process.Running, 0), view(process.Running, 1), view(process.Completed, 2)},
			want:  []string{"running 0", "running 1", "completed 2"},
		},
		{
			name:  "until failed",
			reads: []any{view(process.Running, 0), view(process.Failed, 0)},
			want:  []string{"running 0", "failed 0"},
		},
		{
			name:  "not found ends",
			reads: []any{fmt.Errorf("%w: r-1", ErrNotFound)},
			want:  []string{"error: no such request: r-1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := 0
			get := func(ctx context.Context, id string) (*Info, error) {
				if n >= len(tt.reads) {
					t.Fatalf("read %d: past the last", n+1)
				}
				r := tt.reads[n]
				n++
				if err, ok := r.(error); ok {
					return nil, err
				}
				return r.(*Info), nil
			}
			var got []string
			for info, err := range Watch(t.Context(), get, "r-1", WatchOptions{Interval: time.Millisecond}) {
				if err != nil {
					got = append(got, "error: "+err.Error())
					continue
				}
				got = append(got, fmt.Sprint(info.Status, " ", len(info.Calls)))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("yielded %q, want %q", got, tt.want)
			}
			if n != len(tt.reads) {
				t.Errorf("%d reads, want %d", n, len(tt.reads))
			}
		})
	}
}

// register registers what a worker of vibe.NewWorker has: the shared
// activities, the process and Vessel workflows, and own, the Vessel's
// activities, whose model calls go through shared; and it starts the
// workers of shared's actions on c until the test ends.
func register(t testing.TB, c client.Client, w worker.Registry, shared *durable.Activities, own *Activities) {
	t.Helper()
	for _, aw := range durable.ActionWorkers(c, shared, worker.Options{}) {
		if err := aw.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(aw.Stop)
	}
	registerIn(w, shared, own)
}

// registerIn is register without the actions' workers: for a test
// environment, which runs an activity whatever its task queue.
func registerIn(w worker.Registry, shared *durable.Activities, own *Activities) {
	durable.Register(w, shared)
	process.RegisterWorkflows(w, shared.Actions)
	RegisterWorkflow(w, shared.Actions)
	own.Model = shared
	RegisterActivities(w, own)
}
