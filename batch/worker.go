package batch

import (
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/augceo/vibe/action"
)

// RegisterWorkflows registers the batch workflows on a worker or a
// replayer; actions gives the items' actions their
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

// RegisterActivities registers acts's activities on a worker: the
// multiplexed model call and the provider batches' submission, look,
// cancellation and collection. Each calls the model: a runtime registers
// them on the worker of its model's task queue too (durable.ModelWorker),
// where a group schedules them (GroupInput.ModelQueue) and the
// provider-batch workflow its own (ProviderInput.ModelQueue). The items'
// model calls with a loop and their actions are the shared activities
// (durable.Register).
func RegisterActivities(w worker.ActivityRegistry, acts *Activities) {
	w.RegisterActivityWithOptions(acts.Fill, activity.RegisterOptions{Name: FillName})
	w.RegisterActivityWithOptions(acts.Submit, activity.RegisterOptions{Name: SubmitName})
	w.RegisterActivityWithOptions(acts.Status, activity.RegisterOptions{Name: StatusName})
	w.RegisterActivityWithOptions(acts.Cancel, activity.RegisterOptions{Name: CancelName})
	w.RegisterActivityWithOptions(acts.Collect, activity.RegisterOptions{Name: CollectName})
}
