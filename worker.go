package vibe

import (
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/replay/record"
	"github.com/augceo/vibe/request"
	"github.com/augceo/vibe/vessel"
)

// WorkerOptions configures NewWorker. The zero value is a worker with no
// model, no actions and delegates loaded from files only.
type WorkerOptions struct {
	// Provider answers model calls; nil fails them with
	// durable.ErrNoProvider (a worker without a model still runs actions
	// and waits for people).
	Provider llm.Provider
	// Actions are the server actions; nil means none.
	Actions *action.Registry
	// Loader loads delegates; nil means anonymous ones only.
	Loader *vessel.Loader
	// Logger receives the per-call records; nil means slog.Default().
	Logger *slog.Logger
	// QueryOnly registers the workflows and no activity: a worker that only
	// replays workflows to answer queries (vibe show) and runs nothing. It
	// polls no activity task, so that it never takes a model call or an
	// action it cannot run.
	QueryOnly bool
	// Records keeps the replay records of the processes and batch items
	// that end; nil keeps none.
	Records *record.Store
	// StopTimeout is how long the worker's Stop lets its activities in
	// flight finish, taking no more tasks, before it cancels their
	// contexts (worker.Options.WorkerStopTimeout); 0 cancels them at once.
	StopTimeout time.Duration
}

// NewWorker returns a worker on Vibe's task queue with every workflow and
// activity registered, not yet started: the activities every workflow
// shares (durable.Register) once, then each runtime's workflows and own
// activities.
func NewWorker(c client.Client, opts WorkerOptions) worker.Worker {
	if opts.Actions == nil {
		opts.Actions = &action.Registry{}
	}
	// A query-only worker runs a person's answer's check where its
	// workflow runs (a local activity) and takes no activity task: what it
	// cannot run is left for a worker that can.
	w := worker.New(c, durable.TaskQueue, worker.Options{LocalActivityWorkerOnly: opts.QueryOnly, WorkerStopTimeout: opts.StopTimeout})
	process.RegisterWorkflows(w, opts.Actions)
	request.RegisterWorkflow(w, opts.Actions)
	batch.RegisterWorkflows(w, opts.Actions)
	if opts.QueryOnly {
		durable.RegisterCheck(w) // a person's answer is checked where its workflow runs
		durable.RegisterKeep(w, opts.Records)
		return w
	}
	acts := &durable.Activities{Provider: opts.Provider, Actions: opts.Actions, Logger: opts.Logger, Records: opts.Records}
	durable.Register(w, acts)
	request.RegisterActivities(w, &request.Activities{Model: acts, Loader: opts.Loader, Actions: opts.Actions.Names()})
	batch.RegisterActivities(w, &batch.Activities{Provider: opts.Provider, Logger: opts.Logger})
	return w
}

// StartWorker is NewWorker, started: the worker polls until Stop.
func StartWorker(c client.Client, opts WorkerOptions) (worker.Worker, error) {
	w := NewWorker(c, opts)
	if err := w.Start(); err != nil {
		return nil, fmt.Errorf("start the worker: %w", err)
	}
	return w, nil
}
