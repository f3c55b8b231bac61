package agent

import (
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/augceo/vibe/action"
)

// RegisterWorkflow registers only the Vessel workflow, for a replayer or a
// worker that runs no activities. actions are the worker's registered
// actions, for their retry policies and timeouts.
func RegisterWorkflow(w worker.WorkflowRegistry, actions *action.Registry) {
	wf := &Workflows{Actions: actions}
	w.RegisterWorkflowWithOptions(wf.Request, workflow.RegisterOptions{Name: WorkflowName})
}

// Register registers the Vessel workflow and acts's activities on a
// worker; the model calls and actions it runs are process.Register's.
func Register(w worker.Registry, acts *Activities) {
	RegisterWorkflow(w, acts.Process.Actions)
	w.RegisterActivityWithOptions(acts.Decide, activity.RegisterOptions{Name: DecideName})
	w.RegisterActivityWithOptions(acts.Delegate, activity.RegisterOptions{Name: DelegateName})
}
