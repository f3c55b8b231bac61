package durable

import (
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/replay/record"
	"github.com/augceo/vibe/schema"
)

// How a workflow runs the shared activities: the options of each are built
// here once, so that a process, a Vessel request and a batch's group ask a
// model, run an action and check a value alike.

var (
	// FillTimeout bounds one attempt of an LLM chunk, repair turns included.
	FillTimeout = 10 * time.Minute
	// FillRetry retries an LLM chunk whose endpoint failed past its client's
	// own retries.
	FillRetry = &temporal.RetryPolicy{InitialInterval: 2 * time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 5}
)

// FillOptions are the activity options of every model call: one attempt
// is bounded by FillTimeout, a worker that dies is noticed within
// HeartbeatTimeout, and an endpoint that keeps failing is retried by
// FillRetry.
func FillOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{StartToCloseTimeout: FillTimeout, HeartbeatTimeout: HeartbeatTimeout, RetryPolicy: FillRetry}
}

// ActionOptions are the activity options of a call of the action name:
// its retry policy and timeout from acts (or action's defaults), the
// timeout given rounds times — an activity that runs many calls a slot at
// a time (RunActions) gives each its attempt's time — and HeartbeatTimeout.
// The lookup is exact: a name the worker resolves another way (a pipeline
// step's) runs with the defaults.
func ActionOptions(acts *action.Registry, name string, rounds int) workflow.ActivityOptions {
	retry, timeout := action.DefaultRetry, action.DefaultTimeout
	if a, ok := acts.Lookup(name); ok {
		if a.Retry != nil {
			retry = a.Retry
		}
		if a.Timeout > 0 {
			timeout = a.Timeout
		}
	}
	return workflow.ActivityOptions{StartToCloseTimeout: time.Duration(max(rounds, 1)) * timeout, HeartbeatTimeout: HeartbeatTimeout, RetryPolicy: retry}
}

// ExecuteFill runs the model-call activity, on the task queue in.Queue
// (the workflow's own when it is ""): the one way every workflow of Vibe
// asks a model. The workflow's id is filled in for logs and metrics.
func ExecuteFill(ctx workflow.Context, in FillInput) (FillOutput, error) {
	in.Process = workflow.GetInfo(ctx).WorkflowExecution.ID
	opts := FillOptions()
	opts.TaskQueue = in.Queue
	var out FillOutput
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), FillName, in).Get(ctx, &out)
	return out, err
}

// ExecuteAction runs a server action as an activity, with the action's
// retry policy and timeout from acts (ActionOptions), on the task queue
// in.Queue (the workflow's own when it is ""): the one way every
// workflow of Vibe runs an action. The workflow's id is filled in, and the
// call's idempotency key derived from it and in.Step unless in.Key is set.
func ExecuteAction(ctx workflow.Context, acts *action.Registry, in ActionInput) (jsonv.Value, error) {
	if in.Process == "" {
		in.Process = workflow.GetInfo(ctx).WorkflowExecution.ID
	}
	if in.Key == "" {
		in.Key = action.Key(in.Process, in.Step)
	}
	opts := ActionOptions(acts, in.Action, 1)
	opts.TaskQueue = in.Queue
	var out jsonv.Value
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), ActionName, in).Get(ctx, &out)
	return out, err
}

// ExecuteActions starts the activity that runs many calls of one step's
// action (RunActions), at most in.Concurrency at a time, each with its own
// idempotency key (the key ExecuteAction would give it, when it has none).
// Every call gets its attempt's time, however many wait for a slot.
func ExecuteActions(ctx workflow.Context, acts *action.Registry, in ActionsInput) workflow.Future {
	for i := range in.Calls {
		if in.Calls[i].Key == "" {
			in.Calls[i].Key = action.Key(in.Calls[i].Process, in.Calls[i].Step)
		}
	}
	conc := in.Concurrency
	if conc <= 0 || conc > len(in.Calls) {
		conc = len(in.Calls)
	}
	rounds := (len(in.Calls) + max(conc, 1) - 1) / max(conc, 1)
	var name, queue string
	if len(in.Calls) > 0 {
		name, queue = in.Calls[0].Action, in.Calls[0].Queue
	}
	opts := ActionOptions(acts, name, rounds)
	opts.TaskQueue = queue // one step's action: its calls share a queue
	return workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), ActionsName, in)
}

// checkTimeout bounds the local activity that checks a value.
const checkTimeout = 10 * time.Second

// Check validates v against s in the local activity CheckValue, so that
// no workflow runs the validator itself: the problems by path, none when
// v fits.
func Check(ctx workflow.Context, s, v jsonv.Value) ([]schema.Invalid, error) {
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: checkTimeout})
	var problems []schema.Invalid
	err := workflow.ExecuteLocalActivity(lctx, CheckName, CheckInput{Schema: s, Value: v}).Get(ctx, &problems)
	return problems, err
}

// Start is a process workflow's input (ProcessWorkflow,
// DirectCallWorkflow): everything the workflow needs, prepared before it
// starts — by package process's Client, or by a Vessel's launch.
type Start struct {
	// Name names the process (schedule-meeting); it is shown and searchable.
	Name string `json:"name"`
	// Program is the compiled process, prepared for the runtime.
	Program *compile.Program `json:"program"`
	// Prompt is the person's request.
	Prompt string `json:"prompt,omitempty"`
	// Input is data the process starts with, kept in state under "input".
	Input jsonv.Value `json:"input,omitzero"`
	// First is the value of the first LLM chunk when it was filled already —
	// by a Vessel's LaunchProcess tool — so that no model is asked for it.
	First jsonv.Value `json:"first,omitzero"`
	// System is the system text of the process's model calls.
	System string `json:"system,omitempty"`
	// Instance is what the process is one of, when it is: a batch item,
	// a Vessel instance. It tags the process's metrics; without it they
	// are tagged with the process's own id.
	Instance string `json:"instance,omitempty"`
	// ActionQueues are the task queues of the process's actions, by the
	// name its steps call them (a step's action, or its name when the
	// compiler was not told the actions): ActionQueue of the action the
	// name resolves to when the process starts. A process started before
	// actions were routed has none, and runs its actions on its own task
	// queue.
	ActionQueues map[string]string `json:"actionQueues,omitempty"`
	// ModelQueue is the task queue of the process's model calls
	// (ModelQueue of the model of the client that started it), so that
	// only a worker that has that model takes them. A process started
	// before model calls were routed, or by a client with no model, has
	// none, and runs its model calls on its own task queue.
	ModelQueue string `json:"modelQueue,omitempty"`
}

// LaunchOptions are the options of a process that a workflow starts as its
// child (a Vessel's launch): the workflow id, a process that outlives its
// launcher (ParentClosePolicy ABANDON), listed like any process — by name
// (vibe ps, GET /v1/processes) and in Temporal's own UI — and running from
// its start.
func LaunchOptions(id, name string) workflow.ChildWorkflowOptions {
	return workflow.ChildWorkflowOptions{
		WorkflowID:            id,
		ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_ABANDON,
		Memo:                  map[string]any{MemoProcess: name},
		TypedSearchAttributes: temporal.NewSearchAttributes(ProcessAttribute.ValueSet(name), StatusAttribute.ValueSet(statusRunning)),
	}
}

// statusRunning is a running process's VibeStatus (package process's
// Running).
const statusRunning = "running"

// keepTimeout bounds writing a process's replay records.
const keepTimeout = time.Minute

// Keep keeps the replay records recs (KeepName) as the process, or the
// batch group, ends, or a process starts to wait for a person
// (KeepWaitingChange): on a context of its own, so that a cancelled
// process keeps its record too. A record that cannot be written is
// logged, not the process's failure. Histories from before records were
// kept replay without it.
func Keep(ctx workflow.Context, recs func() []record.Record) {
	if workflow.GetVersion(ctx, KeepName, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return
	}
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	lctx := workflow.WithLocalActivityOptions(dctx, workflow.LocalActivityOptions{StartToCloseTimeout: keepTimeout,
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 3}})
	if err := workflow.ExecuteLocalActivity(lctx, KeepName, recs()).Get(dctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn("the replay record was not kept", "error", err)
	}
}

// ActionQueues are the task queues of prog's actions (Start.ActionQueues),
// by the name its steps call them. With resolve — a starting client's
// lookup of its worker's actions (action.Registry.Resolve) — each name
// goes to the queue of the action it resolves to, or of the name itself
// when it resolves to none (a worker that has an action of that very name
// takes it, and no other), and a SERVER step that names no action is
// routed by its own name, which the worker matches to an action. Without
// (in a workflow, which may not look up a registry), only the steps that
// name their action are routed, by that name; the others run on the
// process's own queue rather than wait on a queue nobody polls. Nil when
// prog runs no routed action.
func ActionQueues(prog *compile.Program, resolve func(name string) (*action.Action, bool)) map[string]string {
	var queues map[string]string
	add := func(name string) {
		if name == "" {
			return
		}
		if queues == nil {
			queues = map[string]string{}
		}
		queues[name] = ActionQueue(name)
		if resolve != nil {
			if a, ok := resolve(name); ok {
				queues[name] = ActionQueue(a.Name)
			}
		}
	}
	for _, ch := range prog.Chunks {
		for _, s := range ch.Steps {
			switch {
			case s.Action != "":
				add(s.Action)
			case resolve != nil && ch.Kind == compile.Server:
				add(s.Name)
			}
		}
	}
	if prog.Direct != nil {
		add(prog.Direct.Action)
	}
	return queues
}
