package vibe

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/process"
)

// drafter answers every model call with one draft, and counts them.
type drafter struct{ calls atomic.Int32 }

func (d *drafter) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	d.calls.Add(1)
	return &llm.Response{Content: `{"draft": {"text": "Hello"}}`, Model: "m"}, nil
}

// TestModelCallWaitsForAWorkerThatHasIt: a process's model call waits on
// its model's task queue (durable.ModelQueue), which no worker without
// that model polls — the runtime's own worker with no --llm, a query-only
// one — so that none takes it and fails it with durable.ErrNoProvider;
// the first worker that has the model answers it, and the process
// completes.
func TestModelCallWaitsForAWorkerThatHasIt(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an embedded engine")
	}
	ctx, rt := timedRuntime(t, Options{})
	c := rt.Processes.Temporal
	queryWorker(t, c)

	// The process is started by a client whose model is m, as vibe run
	// --llm does, on an engine whose only workers have no model.
	m := durable.Model{Provider: "openai", Name: "m", Endpoint: "http://127.0.0.1:9/v1"}
	queue := durable.ModelQueue(m)
	starter := &process.Client{Temporal: c, ModelQueue: queue}
	doc, _ := jsonv.Parse([]byte(`{"type": "object", "properties": {
  "draft": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}}`))
	s, err := starter.Start(ctx, process.StartOptions{Document: doc, Prompt: "Say hello"})
	if err != nil {
		t.Fatal(err)
	}

	for activityPollers(ctx, t, c, durable.TaskQueue) == 0 { // the runtime's worker polls Vibe's queue
		time.Sleep(10 * time.Millisecond)
	}
	if n := activityPollers(ctx, t, c, queue); n != 0 {
		t.Fatalf("%d workers without the model poll its queue", n)
	}
	untaken(ctx, t, c, s.ID, durable.FillName, "the model", nil)
	stalledOn(ctx, t, starter, s.ID, "model", queue) // vibe show says so

	// A worker of another model polls its own queue, not this one.
	other := &drafter{}
	ow, err := StartWorker(c, WorkerOptions{Provider: other, Model: durable.Model{Provider: "openai", Name: "other"}, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	defer ow.Stop()

	// A worker that has the model answers the call, and the process
	// completes.
	model := &drafter{}
	w, err := StartWorker(c, WorkerOptions{Provider: model, Model: m, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	last := finalInfo(ctx, t, starter, s.ID)
	if last == nil || last.Status != process.Completed || model.calls.Load() != 1 || other.calls.Load() != 0 || last.Stalled != nil {
		t.Fatalf("with the model: %+v, %d calls, %d of another model", last, model.calls.Load(), other.calls.Load())
	}
}

// TestModelQueue: a model's queue is stable, differs by provider, model
// and endpoint, and holds no more than a digest of them.
func TestModelQueue(t *testing.T) {
	m := durable.Model{Provider: "openai", Name: "gpt-4o-mini", Endpoint: "http://localhost:8000/v1"}
	q := durable.ModelQueue(m)
	if q != durable.ModelQueue(m) || len(q) != len(durable.ModelQueuePrefix)+16 || q[:len(durable.ModelQueuePrefix)] != durable.ModelQueuePrefix {
		t.Fatalf("queue %q", q)
	}
	for _, o := range []durable.Model{{Provider: "anthropic", Name: m.Name, Endpoint: m.Endpoint}, {Provider: m.Provider, Name: "gpt-4o", Endpoint: m.Endpoint},
		{Provider: m.Provider, Name: m.Name}} {
		if durable.ModelQueue(o) == q {
			t.Errorf("%+v shares %+v's queue", o, m)
		}
	}
	if got := modelQueue(nil, m); got != "" {
		t.Errorf("no provider: queue %q", got)
	}
	if got, want := modelQueue(&drafter{}, durable.Model{}), durable.ModelQueue(durable.Model{}); got != want {
		t.Errorf("a provider that names no model: %q, want %q", got, want)
	}
}

// TestMissingModel: a process started for a model, waiting for a person
// with a model call after the answer, goes on with a model that a client
// of another model, or of none, has not (vibe answer refuses to send the
// answer there); its own model's client has it, and so has every client
// once no model call is left.
func TestMissingModel(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an embedded engine")
	}
	ctx, rt := timedRuntime(t, Options{})
	c := rt.Processes.Temporal
	m := durable.Model{Provider: "openai", Name: "m"}
	starter := &process.Client{Temporal: c, ModelQueue: durable.ModelQueue(m)}
	doc, _ := jsonv.Parse([]byte(`{"type": "object", "properties": {
  "draft": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
  "approve_User": {"type": "object", "references": ["draft"], "properties": {"note": {"type": "string"}}, "required": ["note"]},
  "summary": {"type": "object", "references": ["approve_User"], "properties": {"text": {"type": "string"}}, "required": ["text"]}}}`))
	first, _ := jsonv.Parse([]byte(`{"draft": {"text": "Hello"}}`))
	s, err := starter.Start(ctx, process.StartOptions{Document: doc, First: first})
	if err != nil {
		t.Fatal(err)
	}
	untilWaiting(ctx, t, starter, s.ID)
	checkMissing(ctx, t, s.ID,
		missingCase{"its own model", starter, false},
		missingCase{"another model", &process.Client{Temporal: c, ModelQueue: durable.ModelQueue(durable.Model{Provider: "openai", Name: "other"})}, true},
		missingCase{"no model", &process.Client{Temporal: c}, true})

	// Without the summary, no model call is left after the answer.
	doc, _ = jsonv.Parse([]byte(`{"type": "object", "properties": {
  "draft": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
  "approve_User": {"type": "object", "references": ["draft"], "properties": {"note": {"type": "string"}}, "required": ["note"]}}}`))
	s, err = starter.Start(ctx, process.StartOptions{Document: doc, First: first})
	if err != nil {
		t.Fatal(err)
	}
	untilWaiting(ctx, t, starter, s.ID)
	checkMissing(ctx, t, s.ID, missingCase{"no model call left", &process.Client{Temporal: c}, false})
}

// TestAnyModelCallWaitsForAWorkerWithAModel: a process started by a
// runtime with no model — a vibe serve without --llm — schedules its model
// call on the queue any model may answer (durable.AnyModelQueue), which
// the runtime's own worker, having no model, does not poll: the call
// waits, neither taken nor failed with durable.ErrNoProvider, until a
// worker with a model joins (vibe worker --llm) and answers it. A client
// with no model misses a model to answer such a process; one with a model
// has one (process.Client.MissingModel).
func TestAnyModelCallWaitsForAWorkerWithAModel(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an embedded engine")
	}
	ctx, rt := timedRuntime(t, Options{})
	c := rt.Processes.Temporal

	doc, _ := jsonv.Parse([]byte(`{"type": "object", "properties": {
  "approve_User": {"type": "object", "properties": {"note": {"type": "string"}}, "required": ["note"]},
  "draft": {"type": "object", "references": ["approve_User"], "properties": {"text": {"type": "string"}}, "required": ["text"]}}}`))
	s, err := rt.Processes.Start(ctx, process.StartOptions{Document: doc, Prompt: "Say hello"})
	if err != nil {
		t.Fatal(err)
	}
	untilWaiting(ctx, t, rt.Processes, s.ID)
	model := &process.Client{Temporal: c, ModelQueue: durable.ModelQueue(durable.Model{Provider: "openai", Name: "m"})}
	checkMissing(ctx, t, s.ID, missingCase{"the runtime's, with no model", rt.Processes, true},
		missingCase{"no model", &process.Client{Temporal: c}, true}, missingCase{"a model", model, false})
	note, _ := jsonv.Parse([]byte(`{"approve_User": {"note": "ok"}}`))
	if _, err := rt.Processes.Answer(ctx, s.ID, note); err != nil {
		t.Fatal(err)
	}

	untaken(ctx, t, c, s.ID, durable.FillName, "a model", nil)

	// A worker with a model, whichever, answers it.
	d := &drafter{}
	w, err := StartWorker(c, WorkerOptions{Provider: d, Model: durable.Model{Provider: "openai", Name: "other"}, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	last := finalInfo(ctx, t, rt.Processes, s.ID)
	if last == nil || last.Status != process.Completed || d.calls.Load() != 1 {
		t.Fatalf("with a model: %+v, %d calls", last, d.calls.Load())
	}
}
