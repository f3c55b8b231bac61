package vibe

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/engine"
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
