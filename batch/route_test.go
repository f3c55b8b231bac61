package batch_test

import (
	"context"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/augceo/vibe"
	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/engine"
	"github.com/augceo/vibe/internal/llmtest"
	"github.com/augceo/vibe/llm/openai"
	"github.com/augceo/vibe/process"
)

// TestGroupModelCallWaitsForAWorkerThatHasIt: a group's multiplexed model
// call is scheduled on its model's task queue (GroupInput.ModelQueue),
// which a worker without a model does not poll: it waits there, neither
// taken nor failed with durable.ErrNoProvider, until a worker that has the
// model joins and answers it; every item completes.
func TestGroupModelCallWaitsForAWorkerThatHasIt(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	groupCallWaits(t, func(ctx context.Context, c client.Client, eng *engine.Engine, acts *action.Registry, m durable.Model) *batch.Client {
		// The worker with the actions and no model: it polls Vibe's queue.
		bare, err := vibe.StartWorker(c, vibe.WorkerOptions{Actions: acts, Logger: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(bare.Stop)
		pc := &process.Client{Temporal: c, Actions: acts.Names(), ModelQueue: durable.ModelQueue(m)}
		bc := batch.NewClient(pc)
		pc.Hosts = bc
		return bc
	})
}

// TestGroupAnyModelCallWaitsForAWorkerWithAModel: a batch run by a runtime
// with no model — a vibe serve without --llm — schedules its groups' model
// calls on the queue any model may answer (durable.AnyModelQueue), which
// the runtime's worker, having no model, does not poll: they wait until a
// worker with a model joins and answers them; every item completes.
func TestGroupAnyModelCallWaitsForAWorkerWithAModel(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	groupCallWaits(t, func(ctx context.Context, c client.Client, eng *engine.Engine, acts *action.Registry, m durable.Model) *batch.Client {
		rt, err := vibe.StartOn(ctx, eng, vibe.Options{Actions: acts, Logger: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rt.StopWorker() })
		return rt.Batches
	})
}

// groupCallWaits runs a batch with the client start gives, on an engine
// whose workers have no model, and checks that its group's model call
// waits untaken until a worker with model m joins and answers it.
func groupCallWaits(t *testing.T, start func(context.Context, client.Client, *engine.Engine, *action.Registry, durable.Model) *batch.Client) {
	const n = 4
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv := llmtest.NewServer(t, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{})
	eng, err := engine.Start(ctx, engine.Options{SearchAttributes: durable.SearchAttributes, DataDir: t.TempDir(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	c := eng.Client()
	rec := &recorder{}
	acts := rec.actions()
	m := durable.Model{Provider: "openai", Name: "m", Endpoint: srv.URL}
	bc := start(ctx, c, eng, acts, m)
	type ran struct {
		sum *batch.Summary
		err error
	}
	done := make(chan ran, 1)
	go func() {
		sum, err := bc.Run(ctx, strings.NewReader(llmtest.Comments(n)), func(batch.Result) error { return nil }, batch.Options{Process: moderate(t), ID: "routed", Size: n})
		done <- ran{sum, err}
	}()

	waitUntaken(ctx, t, c, batch.GroupID("routed", 0), batch.FillName, "the model")
	if srv.Requests() != 0 {
		t.Fatalf("%d model requests before a worker had the model", srv.Requests())
	}

	w, err := vibe.StartWorker(c, vibe.WorkerOptions{Provider: openai.New(openai.Options{Model: "m", BaseURL: srv.URL, APIKey: "k", MaxRetries: -1}),
		Model: m, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.sum.Done != n || r.sum.Failed != 0 || srv.Requests() == 0 {
		t.Fatalf("summary %+v, %d model requests", r.sum, srv.Requests())
	}
}

// TestProviderBatchWaitsForAWorkerThatHasIt: with --provider-batch, the
// submission of a provider batch calls the model's Batch API: it is
// scheduled on the batch's model queue (ProviderInput.ModelQueue), as the
// reading of its answers is (GroupInput.ModelQueue), so that a worker
// without the model never takes it and fails it; it waits until a worker
// that has the model joins, and every item completes.
func TestProviderBatchWaitsForAWorkerThatHasIt(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	const n = 4
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv := llmtest.NewServer(t, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{})
	eng, err := engine.Start(ctx, engine.Options{SearchAttributes: durable.SearchAttributes, DataDir: t.TempDir(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	c := eng.Client()
	rec := &recorder{}
	acts := rec.actions()
	bare, err := vibe.StartWorker(c, vibe.WorkerOptions{Actions: acts, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer bare.Stop()
	m := durable.Model{Provider: "openai", Name: "m", Endpoint: srv.URL}
	pc := &process.Client{Temporal: c, Actions: acts.Names(), ModelQueue: durable.ModelQueue(m)}
	bc := batch.NewClient(pc)
	pc.Hosts = bc
	type ran struct {
		sum *batch.Summary
		err error
	}
	done := make(chan ran, 1)
	go func() {
		sum, err := bc.Run(ctx, strings.NewReader(llmtest.Comments(n)), func(batch.Result) error { return nil },
			batch.Options{Process: moderate(t), ID: "routed-pb", Size: n, Call: providerCall})
		done <- ran{sum, err}
	}()

	waitUntaken(ctx, t, c, batch.ProviderID("routed-pb"), batch.SubmitName, "the model")
	if srv.Batches.Created() != 0 {
		t.Fatalf("%d provider batches made before a worker had the model", srv.Batches.Created())
	}

	w, err := vibe.StartWorker(c, vibe.WorkerOptions{Provider: openai.New(openai.Options{Model: "m", BaseURL: srv.URL, APIKey: "k", MaxRetries: -1}),
		Model: m, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.sum.Done != n || r.sum.Failed != 0 || srv.Batches.Created() != 1 || srv.Requests() != 0 {
		t.Fatalf("summary %+v, %d provider batches, %d direct requests", r.sum, srv.Batches.Created(), srv.Requests())
	}
}

// TestGroupActionWaitsForAWorkerThatHasIt: a batch's items' action calls
// go on their action's task queue (GroupInput.ActionQueues), which a
// worker without the action — here the one that has the model — does not
// poll: the group's call waits there, neither taken nor failed for want
// of the action, until a worker that has it joins and runs it; every item
// completes, each call made once.
func TestGroupActionWaitsForAWorkerThatHasIt(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	const n = 4
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv := llmtest.NewServer(t, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{})
	eng, err := engine.Start(ctx, engine.Options{SearchAttributes: durable.SearchAttributes, DataDir: t.TempDir(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	c := eng.Client()
	m := durable.Model{Provider: "openai", Name: "m", Endpoint: srv.URL}
	modelOnly, err := vibe.StartWorker(c, vibe.WorkerOptions{Provider: openai.New(openai.Options{Model: "m", BaseURL: srv.URL, APIKey: "k", MaxRetries: -1}),
		Model: m, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer modelOnly.Stop()
	rec := &recorder{}
	acts := rec.actions()
	pc := &process.Client{Temporal: c, Actions: acts.Names(), Registered: acts, ModelQueue: durable.ModelQueue(m)}
	bc := batch.NewClient(pc)
	pc.Hosts = bc
	type ran struct {
		sum *batch.Summary
		err error
	}
	done := make(chan ran, 1)
	go func() {
		sum, err := bc.Run(ctx, strings.NewReader(llmtest.Comments(n)), func(batch.Result) error { return nil }, batch.Options{Process: moderate(t), ID: "acted", Size: n})
		done <- ran{sum, err}
	}()

	waitUntaken(ctx, t, c, batch.GroupID("acted", 0), durable.ActionsName, "the action")

	withActions, err := vibe.StartWorker(c, vibe.WorkerOptions{Actions: acts, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer withActions.Stop()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.sum.Done != n || r.sum.Failed != 0 || rec.total != n {
		t.Fatalf("summary %+v, %d action calls", r.sum, rec.total)
	}
}

// waitUntaken waits up to a minute for workflow id to have a pending
// activity of type kind, then checks for a second, the workers polling
// all along, that it stays scheduled at its first attempt with no
// failure: no worker without what it needs (lacks) takes it.
func waitUntaken(ctx context.Context, t *testing.T, c client.Client, id, kind, lacks string) {
	t.Helper()
	pending := func() bool {
		t.Helper()
		d, err := c.DescribeWorkflowExecution(ctx, id, "")
		if err != nil {
			return false // not started yet
		}
		if st := d.GetWorkflowExecutionInfo().GetStatus(); st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			t.Fatalf("%s is %v, not running", id, st)
		}
		for _, a := range d.GetPendingActivities() {
			if a.GetActivityType().GetName() != kind {
				continue
			}
			if a.GetAttempt() != 1 || a.GetLastFailure() != nil || a.GetState() != enumspb.PENDING_ACTIVITY_STATE_SCHEDULED {
				t.Fatalf("%s's %s was taken by a worker without %s: %v, attempt %d, %v", id, kind, lacks, a.GetState(), a.GetAttempt(), a.GetLastFailure())
			}
			return true
		}
		return false
	}
	for deadline := time.Now().Add(time.Minute); !pending(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s's %s was never scheduled", id, kind)
		}
	}
	for range 20 {
		if !pending() {
			t.Fatalf("%s's %s was taken by a worker without %s", id, kind, lacks)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
