// Package execution reads Temporal workflow executions the way Vibe's
// clients need them: by id, and only when the workflow is of the type the
// client serves, so that an id of another kind of workflow (a Vessel
// request asked for as a process, a batch's group asked for as a batch)
// is not found rather than misread.
package execution

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// Describe returns what the engine holds of the workflow id (its latest
// run) when it is of one of the types. When no workflow has that id, or
// it is of another type, the error wraps notFound and names the id; any
// other error of the engine is returned wrapped as it is.
func Describe(ctx context.Context, c client.Client, id string, notFound error, types ...string) (*workflowpb.WorkflowExecutionInfo, error) {
	desc, err := DescribeAll(ctx, c, id, notFound, types...)
	if err != nil {
		return nil, err
	}
	return desc.GetWorkflowExecutionInfo(), nil
}

// DescribeAll is Describe with all the engine says: the activities the
// workflow waits on too.
func DescribeAll(ctx context.Context, c client.Client, id string, notFound error, types ...string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	desc, err := c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		if IsNotFound(err) {
			return nil, fmt.Errorf("%w: %s", notFound, id)
		}
		return nil, fmt.Errorf("read %s: %w", id, err)
	}
	if !slices.Contains(types, desc.GetWorkflowExecutionInfo().GetType().GetName()) {
		return nil, fmt.Errorf("%w: %s", notFound, id)
	}
	return desc, nil
}

// IsNotFound reports whether err is the engine's "not found": no workflow
// (or no run, or no query handler on a closed one) of that id.
func IsNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}
