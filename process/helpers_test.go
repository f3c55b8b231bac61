package process

import (
	"log/slog"
	"testing"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/augceo/vibe/durable"
)

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// register registers the process workflows and the shared activities on
// w, and starts the workers of acts' actions on c until the test ends, as
// a worker of vibe.NewWorker has them.
func register(t testing.TB, c client.Client, w worker.Registry, acts *durable.Activities) {
	registerIn(w, acts)
	startActions(t, c, acts)
}

// registerIn registers the process workflows and the shared activities on
// w: a test environment's, which runs an activity whatever its task queue.
func registerIn(w worker.Registry, acts *durable.Activities) {
	durable.Register(w, acts)
	RegisterWorkflows(w, acts.Actions)
}

// startActions starts the workers of acts' actions (durable.ActionWorkers)
// until the test ends.
func startActions(t testing.TB, c client.Client, acts *durable.Activities) {
	t.Helper()
	for _, aw := range durable.ActionWorkers(c, acts, worker.Options{}) {
		if err := aw.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(aw.Stop)
	}
}
