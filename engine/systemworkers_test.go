package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"
)

// Parent starts n children that wait for ever, each with the default
// parent-close policy (terminate), and waits for ever itself.
func Parent(ctx workflow.Context, n int) error {
	for i := range n {
		cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowID: fmt.Sprintf("%s-child-%d", workflow.GetInfo(ctx).WorkflowExecution.ID, i)})
		if err := workflow.ExecuteChildWorkflow(cctx, Child).GetChildWorkflowExecution().Get(ctx, nil); err != nil {
			return err
		}
	}
	return workflow.Await(ctx, func() bool { return false })
}

// Child waits for ever.
func Child(ctx workflow.Context) error { return workflow.Await(ctx, func() bool { return false }) }

// TestNoSystemWorkers: an engine without Temporal's worker service runs
// workflows as usual, and a parent that closes with more open children
// than the server hands to its system workers (ten) still has them
// terminated, by the history service itself.
func TestNoSystemWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an embedded engine")
	}
	e := startEngine(t, Options{NoSystemWorkers: true})
	startWorker(t, e.Client(), []any{Greet, Parent, Child}, []any{Hello})
	runGreet(t, e.Client(), "light")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const n = 12
	run, err := e.Client().ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "parent", TaskQueue: taskQueue}, Parent, n)
	if err != nil {
		t.Fatal(err)
	}
	last := fmt.Sprintf("parent-child-%d", n-1)
	for {
		if _, err := e.Client().DescribeWorkflowExecution(ctx, last, ""); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the children did not start: %v", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	if err := e.Client().TerminateWorkflow(ctx, "parent", run.GetRunID(), "test"); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		id := fmt.Sprintf("parent-child-%d", i)
		for {
			d, err := e.Client().DescribeWorkflowExecution(ctx, id, "")
			if err != nil {
				t.Fatal(err)
			}
			if st := d.WorkflowExecutionInfo.Status; st == enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED {
				break
			} else if st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
				t.Fatalf("%s is %v, want terminated", id, st)
			}
			select {
			case <-ctx.Done():
				t.Fatalf("%s is still running after its parent was terminated", id)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}
