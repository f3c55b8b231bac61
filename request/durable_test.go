package request

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/engine"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm/openai"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/vessel"
)

// tally is an action that records each call's n as it finishes; after
// stopAfter calls it blocks until its context ends, as a server that dies
// mid-batch would leave them.
type tally struct {
	mu        sync.Mutex
	done      map[int64]int
	stopAfter int
	// applied holds the idempotency keys whose effect was applied: a call
	// that finished just as its worker stopped may be delivered again, and
	// its key tells the repeat apart (at least once, effect once).
	applied map[string]int64
}

func (ta *tally) run(ctx context.Context, in jsonv.Value) (jsonv.Value, error) {
	n, _ := in.Lookup("n").Int()
	ta.mu.Lock()
	if ta.stopAfter > 0 && len(ta.done) >= ta.stopAfter {
		ta.mu.Unlock()
		<-ctx.Done()
		return jsonv.Value{}, ctx.Err()
	}
	if key := action.IdempotencyKey(ctx); ta.applied[key] == 0 {
		ta.applied[key] = n
		ta.done[n]++
	}
	ta.mu.Unlock()
	return jsonv.IntValue(n * n), nil
}

func (ta *tally) count() int {
	ta.mu.Lock()
	defer ta.mu.Unlock()
	return len(ta.done)
}

func startWorker(t *testing.T, eng *engine.Engine, acti *durable.Activities) worker.Worker {
	t.Helper()
	w := worker.New(eng.Client(), durable.TaskQueue, worker.Options{})
	register(t, eng.Client(), w, acti, &Activities{})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	return w
}

// TestResumeMidBatch stops a Vessel request's engine in the middle of a
// batch of 40 action calls, starts it again on the same data directory,
// and sees the request finish with every call's effect applied once: a
// call that finished before the stop is not run again, except one whose
// completion the stop cut off, which comes again under the same
// idempotency key.
func TestResumeMidBatch(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine twice")
	}
	dir := t.TempDir()
	ctx := context.Background()
	ts := &vessel.Toolset{Vessel: "batch", Tools: []*vessel.Tool{{Name: "tally", Kind: vessel.Action, Action: "tally", Schema: mustJSON(t, `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)}}}
	var calls []string
	for i := 1; i <= 40; i++ {
		calls = append(calls, fmt.Sprintf(`{"_tool":"tally","n":%d}`, i))
	}
	in, err := vessel.NewRequest(ts, mustJSON(t, `[]`), vessel.RequestOptions{Decision: mustJSON(t, `{"calls":[`+strings.Join(calls, ",")+`]}`)})
	if err != nil {
		t.Fatal(err)
	}
	actions := func(ta *tally) *action.Registry {
		var acts action.Registry
		acts.Register(action.Action{Name: "tally", Run: ta.run, Timeout: 3 * time.Second,
			Retry: &temporal.RetryPolicy{InitialInterval: 100 * time.Millisecond, MaximumAttempts: 20}})
		return &acts
	}

	applied := map[string]int64{} // the endpoint's memory of keys, across the restart
	first := &tally{done: map[int64]int{}, stopAfter: 10, applied: applied}
	eng, err := engine.Start(ctx, engine.Options{SearchAttributes: durable.SearchAttributes, DataDir: dir, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	w := startWorker(t, eng, &durable.Activities{Actions: actions(first), Logger: quiet()})
	run, err := eng.Client().ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "vessel-batch", TaskQueue: durable.TaskQueue}, WorkflowName, in)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for first.count() < 10 {
		if time.Now().After(deadline) {
			t.Fatal("the first 10 calls did not finish")
		}
		time.Sleep(20 * time.Millisecond)
	}
	w.Stop()
	eng.Close()
	before := first.done

	second := &tally{done: map[int64]int{}, applied: applied}
	eng, err = engine.Start(ctx, engine.Options{SearchAttributes: durable.SearchAttributes, DataDir: dir, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	w = startWorker(t, eng, &durable.Activities{Actions: actions(second), Logger: quiet()})
	defer w.Stop()
	var res vessel.Result
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := eng.Client().GetWorkflow(wctx, run.GetID(), "").Get(wctx, &res); err != nil {
		t.Fatal(err)
	}
	for n := range before {
		if second.done[n] > 0 {
			t.Errorf("call n=%d was applied before the stop and again after it", n)
		}
	}
	if len(before)+len(second.done) != 40 || len(applied) != 40 {
		t.Errorf("%d calls applied before and %d after, %d keys: want all 40, each once", len(before), len(second.done), len(applied))
	}
	for _, c := range res.Calls {
		if c.Error != "" {
			t.Errorf("call %d: %s", c.Index, c.Error)
		}
		n, _ := c.Params.Lookup("n").Int()
		if r, _ := c.Result.Int(); r != n*n {
			t.Errorf("call %d: result %s", c.Index, jsonv.Marshal(c.Result))
		}
	}
}

// TestLaunch: a Vessel launches BillingReportProcess through LaunchProcess;
// the process starts with its first chunk already done — the model is
// asked for the decision, then for the report, never for the first chunk.
func TestLaunch(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	ts, _ := example(t, "billing-report", "accountant.vessel.json")
	ctx := context.Background()
	eng, err := engine.Start(ctx, engine.Options{SearchAttributes: durable.SearchAttributes, DataDir: t.TempDir(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	model := newChatByName(t, map[string]string{
		"decision":        `{"_reasoning":"a report is asked for","calls":[{"_tool":"BillingReportProcess","name":"BillingReportProcess","llmContext1":{"_considerations":"Q1 for cust-042","reportParameters":{"customerId":"cust-042","from":"2026-01-01","to":"2026-03-31","currency":"EUR"},"_feedback":"ok"},"_outputPath":"state.launched"}]}`,
		"LLM_llmContext2": `{"writeReport":{"_arithmetic":"100+250=350","total":350,"outstanding":250,"summary":"Two invoices in Q1; one is unpaid.","$confidence":0.9}}`,
	})
	var acts action.Registry
	acts.Register(action.Action{Name: "FetchInvoices_Activity", Run: func(ctx context.Context, in jsonv.Value) (jsonv.Value, error) {
		return jsonv.Parse([]byte(`{"invoices":[{"number":"A-1","date":"2026-01-15","amount":100,"paid":true},{"number":"A-2","date":"2026-02-15","amount":250,"paid":false}]}`))
	}})
	w := startWorker(t, eng, &durable.Activities{Provider: openai.New(openai.Options{Model: "m", BaseURL: model.URL, APIKey: "k"}), Actions: &acts, Logger: quiet()})
	defer w.Stop()
	req, err := vessel.NewRequest(ts, mustJSON(t, `[]`), vessel.RequestOptions{Prompt: "Billing report for cust-042, Q1 2026, in euros."})
	if err != nil {
		t.Fatal(err)
	}
	res, _, err := Run(ctx, eng.Client(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Calls) != 1 || res.Calls[0].Error != "" {
		t.Fatalf("calls %+v", res.Calls)
	}
	id := res.Calls[0].Result.Lookup("id").Str()
	if !strings.HasPrefix(id, "BillingReportProcess-") || res.States[""].Lookup("launched").Lookup("id").Str() != id {
		t.Fatalf("launch result %s, state %s", jsonv.Marshal(res.Calls[0].Result), jsonv.Marshal(res.States[""]))
	}
	c := &process.Client{Temporal: eng.Client()}
	var info *process.Info
	deadline := time.Now().Add(time.Minute)
	for {
		info, err = c.Get(ctx, id)
		if err == nil && info.Status == process.Completed {
			break
		}
		if time.Now().After(deadline) || (info != nil && info.Status == process.Failed) {
			t.Fatalf("process %s: %+v %v", id, info, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := info.State.Lookup("llmContext2").Lookup("writeReport").Lookup("outstanding").Literal(); got != "250" {
		t.Errorf("report %s", jsonv.Marshal(info.State))
	}
	if got := info.State.Lookup("llmContext1").Lookup("reportParameters").Lookup("customerId").Str(); got != "cust-042" {
		t.Errorf("the first chunk is not the Vessel's: %s", jsonv.Marshal(info.State))
	}
	// The launched process is listed by its name.
	page, err := c.List(ctx, process.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	list := page.Processes
	if i := slices.IndexFunc(list, func(s process.Summary) bool { return s.ID == id }); i < 0 || list[i].Process != info.Process || info.Process == "" {
		t.Errorf("launched %s (%q) not listed by name: %+v", id, info.Process, list)
	}
	if asked := model.Asked(); asked["decision"] != 1 || asked["LLM_llmContext2"] != 1 || asked["LLM_llmContext1"] != 0 {
		t.Errorf("model requests %v: the first chunk was filled by the Vessel", asked)
	}
	// The launched process records its action's queue, as one a client
	// starts does: only a worker that has the action takes its calls.
	hist := eng.Client().GetWorkflowHistory(ctx, id, "", false, 0)
	ev, err := hist.Next()
	if err != nil {
		t.Fatal(err)
	}
	var start durable.Start
	if err := converter.GetDefaultDataConverter().FromPayloads(ev.GetWorkflowExecutionStartedEventAttributes().GetInput(), &start); err != nil {
		t.Fatal(err)
	}
	if got, want := start.ActionQueues["FetchInvoices_Activity"], durable.ActionQueue("FetchInvoices_Activity"); got != want || len(start.ActionQueues) != 1 {
		t.Errorf("the launched process's action queues %v, want FetchInvoices_Activity on %s", start.ActionQueues, want)
	}
}
