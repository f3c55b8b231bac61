package batch

import (
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// RegisterWorkflows registers only the batch workflows, for a replayer or
// a worker that runs no activities.
func RegisterWorkflows(w worker.WorkflowRegistry) {
	wf := &Workflows{}
	w.RegisterWorkflowWithOptions(wf.Group, workflow.RegisterOptions{Name: GroupName})
	w.RegisterWorkflowWithOptions(wf.Batch, workflow.RegisterOptions{Name: BatchName})
}

// Register registers the batch workflows and acts's activity on a worker;
// the items' own workflows and activities are process.Register's.
func Register(w worker.Registry, acts *Activities) {
	RegisterWorkflows(w)
	w.RegisterActivityWithOptions(acts.Fill, activity.RegisterOptions{Name: FillName})
}
