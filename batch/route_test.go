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
	r := newRouteRig(t)
	r.worker(vibe.WorkerOptions{Actions: r.acts}) // the actions and no model: it polls Vibe's queue
	r.modelCallWaits(r.client(false))
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
	r := newRouteRig(t)
	rt, err := vibe.StartOn(r.ctx, r.eng, vibe.Options{Actions: r.acts, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.StopWorker() })
	r.modelCallWaits(rt.Batches)
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
	r := newRouteRig(t)
	r.worker(vibe.WorkerOptions{Actions: r.acts})
	done := r.run(r.client(false), batch.Options{ID: "routed-pb", Call: providerCall})

	waitUntaken(r.ctx, t, r.c, batch.ProviderID("routed-pb"), batch.SubmitName, "the model")
	if r.srv.Batches.Created() != 0 {
		t.Fatalf("%d provider batches made before a worker had the model", r.srv.Batches.Created())
	}
	r.worker(r.withModel())
	sum := r.finish(done)
	if sum.Done != routeItems || sum.Failed != 0 || r.srv.Batches.Created() != 1 || r.srv.Requests() != 0 {
		t.Fatalf("summary %+v, %d provider batches, %d direct requests", sum, r.srv.Batches.Created(), r.srv.Requests())
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
	r := newRouteRig(t)
	r.worker(r.withModel()) // the model and no actions
	done := r.run(r.client(true), batch.Options{ID: "acted"})

	waitUntaken(r.ctx, t, r.c, batch.GroupID("acted", 0), durable.ActionsName, "the action")
	r.worker(vibe.WorkerOptions{Actions: r.acts})
	sum := r.finish(done)
	if sum.Done != routeItems || sum.Failed != 0 || r.rec.total != routeItems {
		t.Fatalf("summary %+v, %d action calls", sum, r.rec.total)
	}
}

// routeItems is how many items the routing tests' batches have: one group.
const routeItems = 4

// routeRig is what the routing tests share: an embedded engine, a test
// model at srv (model m), and the record action.
type routeRig struct {
	t    *testing.T
	ctx  context.Context
	eng  *engine.Engine
	c    client.Client
	srv  *llmtest.Server
	m    durable.Model
	rec  *recorder
	acts *action.Registry
}

func newRouteRig(t *testing.T) *routeRig {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	srv := llmtest.NewServer(t, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{})
	eng, err := engine.Start(ctx, engine.Options{SearchAttributes: durable.SearchAttributes, DataDir: t.TempDir(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	rec := &recorder{}
	return &routeRig{t: t, ctx: ctx, eng: eng, c: eng.Client(), srv: srv, m: durable.Model{Provider: "openai", Name: "m", Endpoint: srv.URL}, rec: rec, acts: rec.actions()}
}

// worker starts a worker with opts, stopped when the test ends (before the
// engine closes).
func (r *routeRig) worker(opts vibe.WorkerOptions) {
	r.t.Helper()
	opts.Logger = quiet()
	w, err := vibe.StartWorker(r.c, opts)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(w.Stop)
}

// withModel are the options of a worker that has model m and no actions.
func (r *routeRig) withModel() vibe.WorkerOptions {
	return vibe.WorkerOptions{Provider: openai.New(openai.Options{Model: "m", BaseURL: r.srv.URL, APIKey: "k", MaxRetries: -1}), Model: r.m}
}

// client is a batch client whose model calls go on m's queue; registered
// routes its items' actions to their queues, as a client whose runtime
// has the actions does.
func (r *routeRig) client(registered bool) *batch.Client {
	pc := &process.Client{Temporal: r.c, Actions: r.acts.Names(), ModelQueue: durable.ModelQueue(r.m)}
	if registered {
		pc.Registered = r.acts
	}
	bc := batch.NewClient(pc)
	pc.Hosts = bc
	return bc
}

// ran is how a batch run in the background ended.
type ran struct {
	sum *batch.Summary
	err error
}

// run runs a batch of routeItems comments of the moderate process with
// bc in the background, with opts (its ID, its Call).
func (r *routeRig) run(bc *batch.Client, opts batch.Options) <-chan ran {
	opts.Process, opts.Size = moderate(r.t), routeItems
	done := make(chan ran, 1)
	go func() {
		sum, err := bc.Run(r.ctx, strings.NewReader(llmtest.Comments(routeItems)), func(batch.Result) error { return nil }, opts)
		done <- ran{sum, err}
	}()
	return done
}

// finish waits for the run done to end, and fails the test on its error.
func (r *routeRig) finish(done <-chan ran) *batch.Summary {
	r.t.Helper()
	res := <-done
	if res.err != nil {
		r.t.Fatal(res.err)
	}
	return res.sum
}

// modelCallWaits runs a batch with bc, on an engine whose workers have no
// model, and checks that its group's model call waits untaken until a
// worker with model m joins and answers it.
func (r *routeRig) modelCallWaits(bc *batch.Client) {
	done := r.run(bc, batch.Options{ID: "routed"})
	waitUntaken(r.ctx, r.t, r.c, batch.GroupID("routed", 0), batch.FillName, "the model")
	if r.srv.Requests() != 0 {
		r.t.Fatalf("%d model requests before a worker had the model", r.srv.Requests())
	}
	r.worker(r.withModel())
	sum := r.finish(done)
	if sum.Done != routeItems || sum.Failed != 0 || r.srv.Requests() == 0 {
		r.t.Fatalf("summary %+v, %d model requests", sum, r.srv.Requests())
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
