package request

import (
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/augceo/vibe/action"
)

// RegisterWorkflow registers the Vessel workflow on a worker or a
// replayer; actions are the worker's registered actions, for their retry
// policies and timeouts.
func RegisterWorkflow(w worker.WorkflowRegistry, actions *action.Registry) {
	wf := &Workflows{Actions: actions}
	w.RegisterWorkflowWithOptions(wf.Request, workflow.RegisterOptions{Name: WorkflowName})
}

// RegisterActivities registers acts's activities — a request's decision
// and the loading of a delegate — on a worker. The model calls and
// actions a request runs are the shared activities (durable.Register).
func RegisterActivities(w worker.ActivityRegistry, acts *Activities) {
	RegisterModelActivities(w, acts)
	w.RegisterActivityWithOptions(acts.Delegate, activity.RegisterOptions{Name: DelegateName})
}

// RegisterModelActivities registers acts's decision alone (DecideName):
// for the worker on the task queue of its provider's model
// (durable.ModelWorker), where a request schedules it
// (vessel.Request.ModelQueue).
func RegisterModelActivities(w worker.ActivityRegistry, acts *Activities) {
	w.RegisterActivityWithOptions(acts.Decide, activity.RegisterOptions{Name: DecideName})
}
