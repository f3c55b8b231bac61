package vibe

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/request"
	"github.com/augceo/vibe/vessel"
)

// TestToolActionWaitsForAWorkerThatHasIt: a Vessel's action tool's call
// waits on its action's task queue, as a process's does: a worker with
// another action never takes it (and fails it for want of the action); the
// first worker that has the action runs it, once, and the request ends
// with its result.
func TestToolActionWaitsForAWorkerThatHasIt(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an embedded engine")
	}
	ctx, rt := timedRuntime(t, Options{})
	c := rt.Processes.Temporal

	register := func(name string, calls *atomic.Int32) *action.Registry {
		acts := &action.Registry{}
		if err := acts.Register(action.Action{Name: name, Run: func(ctx context.Context, in jsonv.Value) (jsonv.Value, error) {
			calls.Add(1)
			return jsonv.Parse([]byte(`{"sent": true}`))
		}}); err != nil {
			t.Fatal(err)
		}
		return acts
	}
	// A worker with another action polls Vibe's queue for actions, as
	// every worker with actions does.
	var otherCalls, sendCalls atomic.Int32
	ow, err := StartWorker(c, WorkerOptions{Actions: register("archive", &otherCalls), Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	defer ow.Stop()

	params, _ := jsonv.Parse([]byte(`{"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}`))
	ts := &vessel.Toolset{Vessel: "mailer", Tools: []*vessel.Tool{{Name: "send", Kind: vessel.Action, Action: "send", Schema: params}}}
	decision, _ := jsonv.Parse([]byte(`{"calls": [{"_tool": "send", "text": "hello"}]}`))
	req, err := vessel.NewRequest(ts, jsonv.ArrayValue(), vessel.RequestOptions{Decision: decision})
	if err != nil {
		t.Fatal(err)
	}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "vessel-mailer-routed", TaskQueue: durable.TaskQueue}, request.WorkflowName, req)
	if err != nil {
		t.Fatal(err)
	}
	pendingAction := func() bool {
		t.Helper()
		d, err := c.DescribeWorkflowExecution(ctx, run.GetID(), "")
		if err != nil {
			t.Fatal(err)
		}
		if st := d.GetWorkflowExecutionInfo().GetStatus(); st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			t.Fatalf("the request is %v, not running: its action was taken by a worker that lacks it", st)
		}
		for _, a := range d.GetPendingActivities() {
			if a.GetActivityType().GetName() != durable.ActionName {
				continue
			}
			if a.GetState() != enumspb.PENDING_ACTIVITY_STATE_SCHEDULED || a.GetAttempt() != 1 || a.GetLastFailure() != nil {
				t.Fatalf("the call was taken by a worker without the action: %v, attempt %d, %v", a.GetState(), a.GetAttempt(), a.GetLastFailure())
			}
			return true
		}
		return false
	}
	for !pendingAction() {
		time.Sleep(50 * time.Millisecond)
	}
	for range 20 { // the workers poll all along
		pendingAction()
		time.Sleep(50 * time.Millisecond)
	}

	w, err := StartWorker(c, WorkerOptions{Actions: register("send", &sendCalls), Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var res vessel.Result
	if err := run.Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
	if sendCalls.Load() != 1 || otherCalls.Load() != 0 {
		t.Fatalf("send ran %d times, the other action %d", sendCalls.Load(), otherCalls.Load())
	}
	if len(res.Calls) != 1 || res.Calls[0].Error != "" {
		t.Fatalf("result %+v", res)
	}
}
