package vibe

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/engine"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/process"
)

// TestStart: the runtime loads its actions file into the clients and the
// worker, and a bad one is refused by file and path with nothing left
// running: the same data directory starts again at once.
func TestStart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	quiet := slog.New(slog.DiscardHandler)
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"Send": {"url": "ftp://x"}}`), 0o600)
	data := filepath.Join(dir, "data")
	_, err := Start(ctx, Options{Engine: engine.Options{DataDir: data}, ActionsFile: bad, Logger: quiet})
	if err == nil || !strings.Contains(err.Error(), bad+": /Send: action \"Send\" needs an http(s) URL") {
		t.Fatalf("a bad actions file: %v", err)
	}

	good := filepath.Join(dir, "actions.json")
	os.WriteFile(good, []byte(`{"SendInvitation": "http://127.0.0.1:9/send"}`), 0o600)
	rt, err := Start(ctx, Options{Engine: engine.Options{DataDir: data}, ActionsFile: good, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if got := rt.Actions.Names(); !slices.Equal(got, []string{"SendInvitation"}) {
		t.Errorf("actions %v", got)
	}
	if !slices.Equal(rt.Processes.Actions, []string{"SendInvitation"}) || rt.Processes.Registered != rt.Actions ||
		!slices.Equal(rt.Requests.Actions, rt.Processes.Actions) || rt.Batches.Processes != rt.Processes {
		t.Errorf("the clients do not share the worker's actions: %+v %+v", rt.Processes, rt.Requests)
	}
	if _, err := rt.Processes.List(ctx, process.ListOptions{}); err != nil {
		t.Errorf("list on the runtime's engine: %v", err)
	}
	// The batches say when a full disk holds them: the engine's word.
	if rt.Batches.Held == nil {
		t.Error("the batch client cannot tell a held batch: no Held")
	}
}

// TestQueryOnlyPollsNoActivities: a query-only worker (what read commands
// start: vibe ps, vibe show) polls workflow tasks and no activity task,
// so that it never takes — and fails — a model call or an action it
// cannot run.
func TestQueryOnlyPollsNoActivities(t *testing.T) {
	ctx := context.Background()
	rt, err := Start(ctx, Options{Engine: engine.Options{DataDir: filepath.Join(t.TempDir(), "data")}, Logger: slog.New(slog.DiscardHandler), QueryOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	c := rt.Processes.Temporal
	pollers := func(kind enumspb.TaskQueueType) int {
		resp, err := c.DescribeTaskQueue(ctx, durable.TaskQueue, kind)
		if err != nil {
			t.Fatal(err)
		}
		return len(resp.GetPollers())
	}
	// Both pollers start together: once the workflow one is seen, an
	// activity one would be too.
	for pollers(enumspb.TASK_QUEUE_TYPE_WORKFLOW) == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	for range 20 {
		if n := pollers(enumspb.TASK_QUEUE_TYPE_ACTIVITY); n != 0 {
			t.Fatalf("a query-only worker polls activity tasks (%d pollers)", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestActionWaitsForAWorkerThatHasIt: a process's action call waits on
// its action's task queue, which no worker without the action polls — the
// runtime's own worker with no actions file (what vibe answer typed
// without one starts), a query-only one (vibe ps) — so that none takes,
// fails or spends it; the process goes on waiting, not failed, and the
// first worker that has the action runs it, once.
func TestActionWaitsForAWorkerThatHasIt(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an embedded engine")
	}
	ctx, rt := timedRuntime(t, Options{})
	c := rt.Processes.Temporal
	queryWorker(t, c)

	var calls atomic.Int32
	acts := &action.Registry{}
	if err := acts.Register(action.Action{Name: "send_Activity", Run: func(ctx context.Context, in jsonv.Value) (jsonv.Value, error) {
		calls.Add(1)
		return jsonv.Parse([]byte(`{"id": "m-1"}`))
	}}); err != nil {
		t.Fatal(err)
	}
	// The process is started by a client that has the action, as vibe run
	// --actions-file does, and answered on an engine whose workers lack it.
	starter := &process.Client{Temporal: c, Actions: acts.Names(), Registered: acts}
	doc, _ := jsonv.Parse([]byte(`{"type": "object", "properties": {
  "draft": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
  "approve_User": {"type": "object", "references": ["draft"], "properties": {"note": {"type": "string"}}, "required": ["note"]},
  "send_Activity": {"type": "object", "references": ["draft.text", "approve_User"], "properties": {"id": {"type": "string"}}}}}`))
	first, _ := jsonv.Parse([]byte(`{"draft": {"text": "Hello"}}`))
	s, err := starter.Start(ctx, process.StartOptions{Document: doc, First: first})
	if err != nil {
		t.Fatal(err)
	}
	for info, err := range starter.Watch(ctx, s.ID, process.WatchOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		if info.Status == process.Waiting {
			break
		}
	}
	note, _ := jsonv.Parse([]byte(`{"approve_User": {"note": "ok"}}`))
	if _, err := starter.Answer(ctx, s.ID, note); err != nil {
		t.Fatal(err)
	}

	// The call is scheduled on the action's queue, which nobody polls.
	for activityPollers(ctx, t, c, durable.TaskQueue) == 0 { // the runtime's worker polls its model calls' queue
		time.Sleep(10 * time.Millisecond)
	}
	if n := activityPollers(ctx, t, c, durable.ActionQueue("send_Activity")); n != 0 {
		t.Fatalf("%d workers without the action poll its queue", n)
	}
	// However long it waits (a second here, and the workers poll all
	// along), no attempt is made.
	untaken(ctx, t, c, s.ID, durable.ActionName, "the action", func() int { return int(calls.Load()) })
	stalledOn(ctx, t, starter, s.ID, "action", durable.ActionQueue("send_Activity")) // vibe show says so

	// A worker that has the action runs it, and the process completes.
	w, err := StartWorker(c, WorkerOptions{Actions: acts, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var last *process.Info
	for info, err := range starter.Watch(ctx, s.ID, process.WatchOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		last = info
	}
	if last == nil || last.Status != process.Completed || calls.Load() != 1 {
		t.Fatalf("with the action: %+v, %d calls", last, calls.Load())
	}
}
