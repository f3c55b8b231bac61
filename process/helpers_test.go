package process

import (
	"log/slog"

	"go.temporal.io/sdk/worker"

	"github.com/augceo/vibe/durable"
)

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// register registers the process workflows and the shared activities, as
// a worker of vibe.NewWorker has them.
func register(w worker.Registry, acts *durable.Activities) {
	durable.Register(w, acts)
	RegisterWorkflows(w, acts.Actions)
}
