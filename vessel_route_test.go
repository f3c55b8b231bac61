package vibe

import (
	"context"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"

	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/internal/llmtest"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm/openai"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/request"
	"github.com/augceo/vibe/vessel"
)

// TestVesselModelCallsWaitForAWorkerWithAModel: a Vessel request started
// by a runtime with no model — a vibe serve without --llm — schedules its
// decision on the queue any model may answer (durable.AnyModelQueue),
// which the runtime's worker, having no model, does not poll: it waits,
// neither taken nor failed with durable.ErrNoProvider, until a worker
// with a model joins and answers it. The process the request launches
// records that queue too, and its model call is answered by that worker,
// never failed by the runtime's.
func TestVesselModelCallsWaitForAWorkerWithAModel(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an embedded engine")
	}
	acts := &action.Registry{}
	if err := acts.Register(action.Action{Name: "FetchInvoices_Activity", Run: func(ctx context.Context, in jsonv.Value) (jsonv.Value, error) {
		return jsonv.Parse([]byte(`{"invoices":[{"number":"A-1","date":"2026-01-15","amount":100,"paid":true},{"number":"A-2","date":"2026-02-15","amount":250,"paid":false}]}`))
	}}); err != nil {
		t.Fatal(err)
	}
	ctx, rt := timedRuntime(t, Options{Actions: acts})
	c := rt.Processes.Temporal

	reg, err := registry.Open("examples/billing-report/registry")
	if err != nil {
		t.Fatal(err)
	}
	v, err := vessel.Load("examples/billing-report/accountant.vessel.json")
	if err != nil {
		t.Fatal(err)
	}
	ts, err := vessel.Build(ctx, v, vessel.BuildOptions{Registry: reg, Actions: acts.Names()})
	if err != nil {
		t.Fatal(err)
	}
	s, err := rt.Requests.Start(ctx, request.StartOptions{Toolset: ts, Prompt: "Billing report for cust-042, Q1 2026, in euros."})
	if err != nil {
		t.Fatal(err)
	}
	var seen bool
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the request's decision was never scheduled")
		}
		d, err := c.DescribeWorkflowExecution(ctx, s.ID, "")
		if err != nil {
			t.Fatal(err)
		}
		if st := d.GetWorkflowExecutionInfo().GetStatus(); st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			t.Fatalf("the request is %v, not running: its decision was taken by a worker without a model", st)
		}
		for _, a := range d.GetPendingActivities() {
			if a.GetActivityType().GetName() != request.DecideName {
				continue
			}
			if a.GetAttempt() != 1 || a.GetLastFailure() != nil || a.GetState() != enumspb.PENDING_ACTIVITY_STATE_SCHEDULED {
				t.Fatalf("the decision was taken by a worker without a model: %v, attempt %d, %v", a.GetState(), a.GetAttempt(), a.GetLastFailure())
			}
			seen = true
		}
		if seen {
			break
		}
	}
	time.Sleep(time.Second) // the worker without a model polls all along

	model := llmtest.New(t, llmtest.ByName(map[string]string{
		"decision":        `{"_reasoning":"a report is asked for","calls":[{"_tool":"BillingReportProcess","name":"BillingReportProcess","llmContext1":{"_considerations":"Q1 for cust-042","reportParameters":{"customerId":"cust-042","from":"2026-01-01","to":"2026-03-31","currency":"EUR"},"_feedback":"ok"},"_outputPath":"state.launched"}]}`,
		"LLM_llmContext2": `{"writeReport":{"_arithmetic":"100+250=350","total":350,"outstanding":250,"summary":"Two invoices in Q1; one is unpaid.","$confidence":0.9}}`,
	}))
	if model.Requests() != 0 {
		t.Fatalf("%d model requests before a worker had a model", model.Requests())
	}
	w, err := StartWorker(c, WorkerOptions{Provider: openai.New(openai.Options{Model: "m", BaseURL: model.URL, APIKey: "k", MaxRetries: -1}),
		Model: durable.Model{Provider: "openai", Name: "m", Endpoint: model.URL}, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var res vessel.Result
	if err := c.GetWorkflow(ctx, s.ID, "").Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Calls) != 1 || res.Calls[0].Error != "" {
		t.Fatalf("calls %+v", res.Calls)
	}
	id := res.Calls[0].Result.Lookup("id").Str()
	hist := c.GetWorkflowHistory(ctx, id, "", false, 0)
	ev, err := hist.Next()
	if err != nil {
		t.Fatal(err)
	}
	var start durable.Start
	if err := converter.GetDefaultDataConverter().FromPayloads(ev.GetWorkflowExecutionStartedEventAttributes().GetInput(), &start); err != nil {
		t.Fatal(err)
	}
	if start.ModelQueue != durable.AnyModelQueue {
		t.Errorf("the launched process's model queue %q, want %q", start.ModelQueue, durable.AnyModelQueue)
	}
	var info *process.Info
	for info, err = range rt.Processes.Watch(ctx, id, process.WatchOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if info == nil || info.Status != process.Completed {
		t.Fatalf("the launched process: %+v", info)
	}
	if asked := model.Asked(); asked["decision"] != 1 || asked["LLM_llmContext2"] != 1 {
		t.Errorf("model requests %v", asked)
	}
}
