package batch

import (
	"github.com/augceo/vibe/action"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// RegisterWorkflows registers only the batch workflows, for a replayer or
// a worker that runs no activities; actions gives the items' actions their
// retry policies and timeouts (nil: the defaults).
func RegisterWorkflows(w worker.WorkflowRegistry, actions *action.Registry) {
	if actions == nil {
		actions = &action.Registry{}
	}
	wf := &Workflows{Actions: actions}
	w.RegisterWorkflowWithOptions(wf.Group, workflow.RegisterOptions{Name: GroupName})
	w.RegisterWorkflowWithOptions(wf.Batch, workflow.RegisterOptions{Name: BatchName})
	w.RegisterWorkflowWithOptions(wf.ProviderBatches, workflow.RegisterOptions{Name: ProviderName})
}

// Register registers the batch workflows and acts's activity on a worker,
// with actions as RegisterWorkflows; the items' model calls (with a loop)
// and actions are process.Register's activities.
func Register(w worker.Registry, acts *Activities, actions *action.Registry) {
	RegisterWorkflows(w, actions)
	w.RegisterActivityWithOptions(acts.Fill, activity.RegisterOptions{Name: FillName})
	w.RegisterActivityWithOptions(acts.Submit, activity.RegisterOptions{Name: SubmitName})
	w.RegisterActivityWithOptions(acts.Status, activity.RegisterOptions{Name: StatusName})
	w.RegisterActivityWithOptions(acts.Cancel, activity.RegisterOptions{Name: CancelName})
	w.RegisterActivityWithOptions(acts.Collect, activity.RegisterOptions{Name: CollectName})
}
