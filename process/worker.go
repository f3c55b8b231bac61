package process

import (
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/augceo/vibe/action"
)

// RegisterWorkflows registers Vibe's process workflows and the local
// activity they check values with: a worker that answers queries (vibe
// show) without running any model call or action. The Vessel workflow
// (package agent) uses that local activity too.
func RegisterWorkflows(w worker.WorkflowRegistry, actions *action.Registry) {
	if actions == nil {
		actions = &action.Registry{}
	}
	wf := &Workflows{Actions: actions}
	w.RegisterWorkflowWithOptions(wf.Process, workflow.RegisterOptions{Name: WorkflowName})
	w.RegisterWorkflowWithOptions(wf.DirectCall, workflow.RegisterOptions{Name: DirectCallName})
	w.RegisterWorkflowWithOptions(wf.FireAndForget, workflow.RegisterOptions{Name: FireAndForgetName})
	// The workflows check values in a local activity, which runs on the
	// workflow's own worker; a replayer has no activities and needs none.
	if ar, ok := w.(worker.ActivityRegistry); ok {
		ar.RegisterActivityWithOptions(CheckValue, activity.RegisterOptions{Name: CheckName})
	}
}

// Register registers Vibe's workflows and acts's activities on a worker
// (polling TaskQueue).
func Register(w worker.Registry, acts *Activities) {
	if acts.Actions == nil {
		acts.Actions = &action.Registry{}
	}
	RegisterWorkflows(w, acts.Actions)
	w.RegisterActivityWithOptions(acts.Fill, activity.RegisterOptions{Name: FillName})
	w.RegisterActivityWithOptions(acts.Action, activity.RegisterOptions{Name: ActionName})
	w.RegisterActivityWithOptions(acts.RunActions, activity.RegisterOptions{Name: ActionsName})
}
