package process

import (
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// RegisterWorkflows registers Vibe's workflows only: a worker that answers
// queries (vibe show) without running any model call or action.
func RegisterWorkflows(w worker.WorkflowRegistry, actions *Actions) {
	if actions == nil {
		actions = &Actions{}
	}
	wf := &Workflows{Actions: actions}
	w.RegisterWorkflowWithOptions(wf.Process, workflow.RegisterOptions{Name: WorkflowName})
	w.RegisterWorkflowWithOptions(wf.DirectCall, workflow.RegisterOptions{Name: DirectCallName})
	w.RegisterWorkflowWithOptions(wf.FireAndForget, workflow.RegisterOptions{Name: FireAndForgetName})
}

// Register registers Vibe's workflows and acts's activities on a worker
// (polling TaskQueue).
func Register(w worker.Registry, acts *Activities) {
	if acts.Actions == nil {
		acts.Actions = &Actions{}
	}
	RegisterWorkflows(w, acts.Actions)
	w.RegisterActivityWithOptions(acts.Fill, activity.RegisterOptions{Name: fillName})
	w.RegisterActivityWithOptions(acts.Action, activity.RegisterOptions{Name: actionName})
}
