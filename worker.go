package vibe

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nexus-rpc/sdk-go/nexus"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

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
	// Model names the model Provider asks: the worker polls that model's
	// task queue (durable.ModelQueue), where the processes and batches
	// started for the model schedule their model calls, and no other
	// model's, and the queue of the calls any model may answer
	// (durable.AnyModelQueue). Its zero value is the model Provider says
	// it asks (durable.Model{Name: llm.ModelOf(Provider)}). A worker
	// without a Provider polls no model's queue: a routed model call
	// waits for a worker that has its model rather than fail on one that
	// has none.
	Model durable.Model
	// StopTimeout is how long the worker's Stop lets its activities in
	// flight finish, taking no more tasks, before it cancels their
	// contexts (worker.Options.WorkerStopTimeout); 0 cancels them at once.
	StopTimeout time.Duration
	// ActionStopTimeout, when above StopTimeout, is the action workers'
	// (Options.ActionStopTimeout).
	ActionStopTimeout time.Duration
}

// NewWorker returns a worker on Vibe's task queue with every workflow and
// activity registered, not yet started: the activities every workflow
// shares (durable.Register) once, then each runtime's workflows and own
// activities. Beside it, the worker polls the task queue of each of its
// actions (durable.ActionQueue) and no other action's, and, with a
// Provider, its model's (durable.ModelQueue) and the one any model answers
// (durable.AnyModelQueue): a call of an action or a
// model it lacks waits for a worker that has it, untaken. The workers stop
// together, within one StopTimeout.
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
	names := opts.Actions.Names()
	if len(names) > 0 {
		// Calls on Vibe's own queue — a Vessel's tools', a process's
		// started before actions were routed — go to a worker with
		// actions, as they did.
		durable.Register(w, acts)
	} else {
		durable.RegisterCheck(w)
		durable.RegisterKeep(w, opts.Records)
		w.RegisterActivityWithOptions(acts.Fill, activity.RegisterOptions{Name: durable.FillName})
	}
	racts := &request.Activities{Model: acts, Loader: opts.Loader, Actions: names}
	request.RegisterActivities(w, racts)
	bacts := &batch.Activities{Provider: opts.Provider, Logger: opts.Logger}
	batch.RegisterActivities(w, bacts)
	ws := append(workers{w}, durable.ActionWorkers(c, acts, worker.Options{WorkerStopTimeout: max(opts.StopTimeout, opts.ActionStopTimeout)})...)
	if q := modelQueue(opts.Provider, opts.Model); q != "" {
		// Its model's own calls, and those any model may answer.
		for _, q := range []string{q, durable.AnyModelQueue} {
			mw := durable.ModelWorker(c, q, acts, worker.Options{WorkerStopTimeout: opts.StopTimeout})
			batch.RegisterActivities(mw, bacts) // each calls the model: the multiplexed call, the provider batches'
			request.RegisterModelActivities(mw, racts)
			ws = append(ws, mw)
		}
	}
	if len(ws) == 1 {
		return w
	}
	return ws
}

// modelQueue is the task queue of the model calls p answers, m naming
// its model (WorkerOptions.Model, Options.Model): "" without a provider.
// A worker with a provider also answers durable.AnyModelQueue's.
func modelQueue(p llm.Provider, m durable.Model) string {
	if p == nil {
		return ""
	}
	if m == (durable.Model{}) {
		m.Name = llm.ModelOf(p)
	}
	return durable.ModelQueue(m)
}

// workers are a worker on Vibe's task queue (the first, whose registry
// they are) and those on its actions' and its models' queues, started
// and stopped together.
type workers []worker.Worker

var _ worker.Worker = workers(nil)

// Start starts every worker, or none: those started are stopped when one
// fails.
func (ws workers) Start() error {
	for i, w := range ws {
		if err := w.Start(); err != nil {
			for _, s := range ws[:i] {
				s.Stop()
			}
			return err
		}
	}
	return nil
}

// Run starts the workers and stops them when interruptCh is closed or
// receives.
func (ws workers) Run(interruptCh <-chan any) error {
	if err := ws.Start(); err != nil {
		return err
	}
	<-interruptCh
	ws.Stop()
	return nil
}

// Stop stops the workers together: each takes no more work at once and
// lets what it runs finish within its WorkerStopTimeout, so the whole stop
// takes one bound, not one per worker.
func (ws workers) Stop() {
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Go(w.Stop)
	}
	wg.Wait()
}

func (ws workers) RegisterWorkflow(w any) { ws[0].RegisterWorkflow(w) }
func (ws workers) RegisterWorkflowWithOptions(w any, o workflow.RegisterOptions) {
	ws[0].RegisterWorkflowWithOptions(w, o)
}
func (ws workers) RegisterDynamicWorkflow(w any, o workflow.DynamicRegisterOptions) {
	ws[0].RegisterDynamicWorkflow(w, o)
}
func (ws workers) RegisterActivity(a any) { ws[0].RegisterActivity(a) }
func (ws workers) RegisterActivityWithOptions(a any, o activity.RegisterOptions) {
	ws[0].RegisterActivityWithOptions(a, o)
}
func (ws workers) RegisterDynamicActivity(a any, o activity.DynamicRegisterOptions) {
	ws[0].RegisterDynamicActivity(a, o)
}
func (ws workers) RegisterNexusService(s *nexus.Service) { ws[0].RegisterNexusService(s) }

// StartWorker is NewWorker, started: the worker polls until Stop.
func StartWorker(c client.Client, opts WorkerOptions) (worker.Worker, error) {
	w := NewWorker(c, opts)
	if err := w.Start(); err != nil {
		return nil, fmt.Errorf("start the worker: %w", err)
	}
	return w, nil
}
