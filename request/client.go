package request

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/client"

	"github.com/augceo/vibe/internal/wfid"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/vessel"
)

// Run runs a prepared request on the engine c talks to (a worker with
// Register must poll process.TaskQueue) and waits for its result. It
// returns the request's workflow id as well, also on failure.
func Run(ctx context.Context, c client.Client, req *vessel.Request) (*vessel.Result, string, error) {
	id := wfid.New("vessel-" + wfid.Slug(req.Toolset.Vessel, "request"))
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: process.TaskQueue, Memo: map[string]any{"vessel": req.Toolset.Vessel}}, WorkflowName, req)
	if err != nil {
		return nil, id, fmt.Errorf("start request: %w", err)
	}
	var res vessel.Result
	if err := run.Get(ctx, &res); err != nil {
		return nil, id, err
	}
	return &res, id, nil
}
