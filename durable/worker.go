package durable

import (
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/replay/record"
)

// Register registers the shared activities on a worker, once for every
// workflow that runs them: the model call (Activities.Fill), the action
// (Activities.Action, Activities.RunActions) and the local activity that
// checks a value (CheckValue). Each runtime registers its own workflows
// and activities beside them. The local activity KeepName keeps replay
// records in acts.Records (none when it is nil).
func Register(w worker.ActivityRegistry, acts *Activities) {
	if acts.Actions == nil {
		acts.Actions = &action.Registry{}
	}
	RegisterCheck(w)
	w.RegisterActivityWithOptions(acts.Records.Keep, activity.RegisterOptions{Name: KeepName})
	w.RegisterActivityWithOptions(acts.Fill, activity.RegisterOptions{Name: FillName})
	w.RegisterActivityWithOptions(acts.Action, activity.RegisterOptions{Name: ActionName})
	w.RegisterActivityWithOptions(acts.RunActions, activity.RegisterOptions{Name: ActionsName})
}

// RegisterCheck registers only the local activity CheckValue: what a
// worker that runs no model call and no action needs to take a person's
// answer, which a workflow checks in it on the worker that runs the
// workflow.
func RegisterCheck(w worker.ActivityRegistry) {
	w.RegisterActivityWithOptions(CheckValue, activity.RegisterOptions{Name: CheckName})
}

// RegisterKeep registers the local activity KeepName alone, keeping
// records in store (none when it is nil): for a worker that registers
// RegisterCheck and not Register.
func RegisterKeep(w worker.ActivityRegistry, store *record.Store) {
	w.RegisterActivityWithOptions(store.Keep, activity.RegisterOptions{Name: KeepName})
}

// ActionWorkers are the workers that run acts' actions, not yet started:
// one on each action's task queue (ActionQueue), polling activity tasks
// only, with Activities.Action and Activities.RunActions registered. A
// worker polls no action's queue but those of its own actions, so that a
// call waits for a worker that has its action rather than fail on one
// that has not. None when acts has no action. Each worker has opts (its
// WorkerStopTimeout, say), with no workflow worker.
func ActionWorkers(c client.Client, acts *Activities, opts worker.Options) []worker.Worker {
	opts.DisableWorkflowWorker = true
	var ws []worker.Worker
	for _, name := range acts.Actions.Names() {
		w := worker.New(c, ActionQueue(name), opts)
		w.RegisterActivityWithOptions(acts.Action, activity.RegisterOptions{Name: ActionName})
		w.RegisterActivityWithOptions(acts.RunActions, activity.RegisterOptions{Name: ActionsName})
		ws = append(ws, w)
	}
	return ws
}

// ModelWorker is the worker that runs acts' model calls (Activities.Fill)
// on queue — the ModelQueue of its provider's model, or AnyModelQueue —
// not yet started: polling activity tasks only, with opts (its
// WorkerStopTimeout, say). A runtime registers its own model-call
// activities beside (a batch's multiplexed call and its provider batches',
// a Vessel's decision). A worker without a provider has none, so that a
// routed call waits for a worker that has its model.
func ModelWorker(c client.Client, queue string, acts *Activities, opts worker.Options) worker.Worker {
	opts.DisableWorkflowWorker = true
	w := worker.New(c, queue, opts)
	w.RegisterActivityWithOptions(acts.Fill, activity.RegisterOptions{Name: FillName})
	return w
}
