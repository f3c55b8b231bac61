package vibe

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"go.temporal.io/sdk/worker"

	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/engine"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/replay/record"
	"github.com/augceo/vibe/request"
	"github.com/augceo/vibe/telemetry"
	"github.com/augceo/vibe/vessel"
)

// Options configures Start and StartOn. The zero value runs the embedded
// engine in engine.DefaultDataDir, with a worker that has no model and no
// actions: it still waits for people, and fails an LLM chunk saying that
// it has no model.
type Options struct {
	// Engine configures the engine Start starts: the embedded one, or a
	// client to a cluster (Engine.HostPort). SearchAttributes default to
	// durable.SearchAttributes. StartOn ignores it.
	Engine engine.Options
	// Registry is where processes, Vessels and their tools are found by
	// URI; nil means every process comes inline.
	Registry *registry.Registry
	// Provider answers model calls; nil leaves them to the workers that
	// have a model (Model). Wrap it in an llm.Limiter (Limiter.Provider,
	// its Transport in the SDK's HTTP client) to pace the calls to its
	// endpoint: a batch then plans its calls for the limiter's limit.
	Provider llm.Provider
	// Model names the model Provider asks (WorkerOptions.Model): the
	// processes and batches the runtime starts schedule their model calls
	// on its task queue (durable.ModelQueue), and the worker polls it.
	// Its zero value is the model Provider says it asks. Without a
	// Provider, model calls go on the queue any model may answer
	// (durable.AnyModelQueue): they wait for a worker that has a model
	// (vibe worker --llm joining a vibe serve without one).
	Model durable.Model
	// Actions are the server actions; nil means none, or those of
	// ActionsFile.
	Actions *action.Registry
	// ActionsFile, when set, is an actions file (action.Load) whose
	// actions are added to Actions. The sessions with the MCP servers it
	// names last until Close.
	ActionsFile string
	// Loader loads delegates; nil means anonymous ones only.
	Loader *vessel.Loader
	// Logger receives the engine's and the worker's records; nil means
	// slog.Default().
	Logger *slog.Logger
	// Telemetry, when set, installs OpenTelemetry's exporters
	// (telemetry.Setup) for the runtime's life; Close flushes them.
	Telemetry *telemetry.Options
	// QueryOnly starts a worker that registers the workflows and no
	// activity: it replays workflows to answer queries and runs nothing
	// (the command line's read-only commands).
	QueryOnly bool
	// Records keeps what a replay needs of each process and batch item
	// that ends (package replay/record); nil means DATA/replay for the
	// embedded engine's data directory DATA, and none for a cluster with
	// no data directory. Start prunes the records past its retention.
	Records *record.Store
	// StopTimeout is how long Close (StopWorker) lets the worker's
	// activities in flight — actions, model calls — finish once it takes
	// no more work, before it cancels them (worker.Options.WorkerStopTimeout);
	// 0 cancels them at once, and they run again, under the same
	// idempotency key, on the next worker.
	StopTimeout time.Duration
	// ActionStopTimeout, when above StopTimeout, is how long the action
	// calls in flight have instead: a command that ends once its work is
	// done (vibe run, vibe batch) lets an action's call finish rather
	// than make its endpoint see it twice, and cancels a model call at
	// once.
	ActionStopTimeout time.Duration
}

// Runtime is a running Vibe: an engine, a worker on it, and the clients
// of what the worker runs. Close stops them.
type Runtime struct {
	Engine *engine.Engine
	Worker worker.Worker
	// Processes starts, reads, watches, answers and cancels processes.
	Processes *process.Client
	// Requests starts, reads, watches and lists Vessel requests.
	Requests *request.Client
	// Batches runs batches and reads their results.
	Batches *batch.Client
	// Actions are the worker's server actions, Options.ActionsFile's
	// included.
	Actions *action.Registry
	// Records keeps the replay records (Options.Records); nil when none
	// are kept.
	Records *record.Store

	mcp       action.MCPPool
	telemetry func(context.Context) error
}

// Start starts the engine opts.Engine names and a worker on it.
func Start(ctx context.Context, opts Options) (*Runtime, error) {
	eopts := opts.Engine
	if eopts.SearchAttributes == nil {
		eopts.SearchAttributes = durable.SearchAttributes
	}
	if eopts.Logger == nil {
		eopts.Logger = opts.Logger
	}
	eng, err := engine.Start(ctx, eopts)
	if err != nil {
		return nil, err
	}
	if opts.Records == nil && eopts.DataDir != "" && eopts.HostPort == "" {
		opts.Records = &record.Store{Dir: filepath.Join(eopts.DataDir, "replay")}
	}
	rt, err := StartOn(ctx, eng, opts)
	if err != nil {
		eng.Close()
		return nil, err
	}
	return rt, nil
}

// StartOn starts a worker on eng, which the Runtime then owns: its Close
// closes eng too.
func StartOn(ctx context.Context, eng *engine.Engine, opts Options) (_ *Runtime, err error) {
	rt := &Runtime{Engine: eng, Actions: opts.Actions, Records: opts.Records}
	if !opts.QueryOnly {
		if _, err := rt.Records.Prune(time.Now()); err != nil {
			cmp.Or(opts.Logger, slog.Default()).Warn("replay records not pruned", "error", err)
		}
	}
	defer func() {
		if err != nil {
			rt.mcp.Close()
		}
	}()
	if rt.Actions == nil {
		rt.Actions = &action.Registry{}
	}
	if opts.ActionsFile != "" {
		list, err := action.Load(opts.ActionsFile, &rt.mcp)
		if err != nil {
			return nil, err
		}
		for _, a := range list {
			if err := rt.Actions.Register(a); err != nil {
				return nil, fmt.Errorf("%s: %w", opts.ActionsFile, err)
			}
		}
	}
	c := eng.Client()
	names := rt.Actions.Names()
	rt.Processes = &process.Client{Temporal: c, Registry: opts.Registry, Actions: names, Registered: rt.Actions,
		ModelQueue: cmp.Or(modelQueue(opts.Provider, opts.Model), durable.AnyModelQueue)}
	rt.Requests = &request.Client{Temporal: c, Registry: opts.Registry, Actions: names, Loader: opts.Loader, ModelQueue: rt.Processes.ModelQueue}
	rt.Batches = batch.NewClient(rt.Processes)
	rt.Batches.Held = eng.Space     // a full disk holds every batch's work
	rt.Processes.Hosts = rt.Batches // a batch's items run in their groups' workflows
	rt.Batches.Limiter = llm.LimiterOf(opts.Provider)
	rt.Batches.OutputLimit = llm.DefaultModels().Limits(llm.ModelOf(opts.Provider)).Output
	if opts.Telemetry != nil {
		if rt.telemetry, err = telemetry.Setup(ctx, *opts.Telemetry); err != nil {
			return nil, err
		}
	}
	wopts := WorkerOptions{Provider: opts.Provider, Model: opts.Model, Actions: rt.Actions, Loader: opts.Loader, Logger: opts.Logger, QueryOnly: opts.QueryOnly, Records: opts.Records,
		StopTimeout: opts.StopTimeout, ActionStopTimeout: opts.ActionStopTimeout}
	if rt.Worker, err = StartWorker(c, wopts); err != nil {
		rt.flush()
		return nil, err
	}
	return rt, nil
}

// flush flushes and stops the telemetry exporters, if any.
func (rt *Runtime) flush() {
	if rt.telemetry == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rt.telemetry(ctx)
	rt.telemetry = nil
}

// StopWorker stops the worker: it takes no more tasks, and its activities
// in flight have Options.StopTimeout to finish before their contexts are
// cancelled; the engine stays up meanwhile, to be told how they ended. It
// returns how long that took. Close stops the worker too, unless it is
// stopped.
func (rt *Runtime) StopWorker() time.Duration {
	if rt.Worker == nil {
		return 0
	}
	began := time.Now()
	rt.Worker.Stop()
	rt.Worker = nil
	return time.Since(began)
}

// Close stops the worker (StopWorker), flushes the telemetry, ends the
// sessions with MCP servers and closes the engine.
func (rt *Runtime) Close() error {
	rt.StopWorker()
	rt.flush()
	err := rt.mcp.Close()
	if rt.Engine != nil {
		err = errors.Join(err, rt.Engine.Close())
	}
	return err
}
