package process

import (
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/durable"
)

// RegisterWorkflows registers the process workflows (a process, a direct
// call, a fire-and-forget action) on a worker or a replayer; actions are
// the worker's, for their retry policies and timeouts (nil: the defaults).
// The activities they run are registered once for every workflow, by
// durable.Register (durable.RegisterCheck on a worker that runs no model
// call or action but takes a person's answer).
func RegisterWorkflows(w worker.WorkflowRegistry, actions *action.Registry) {
	if actions == nil {
		actions = &action.Registry{}
	}
	wf := &Workflows{Actions: actions}
	w.RegisterWorkflowWithOptions(wf.Process, workflow.RegisterOptions{Name: durable.ProcessWorkflow})
	w.RegisterWorkflowWithOptions(wf.DirectCall, workflow.RegisterOptions{Name: durable.DirectCallWorkflow})
	w.RegisterWorkflowWithOptions(wf.FireAndForget, workflow.RegisterOptions{Name: FireAndForgetName})
}
