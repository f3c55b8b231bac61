package vibe

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/client"

	"github.com/augceo/vibe/process"
)

// discard is the tests' logger: it writes nothing.
var discard = slog.New(slog.DiscardHandler)

// timedRuntime is quietRuntime with a context that ends after three
// minutes, when the test does at the latest.
func timedRuntime(t *testing.T, opts Options) (context.Context, *Runtime) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx, quietRuntime(ctx, t, opts)
}

// queryWorker starts a query-only worker on c (as a read command's, vibe
// ps), stopped when the test ends.
func queryWorker(t *testing.T, c client.Client) {
	t.Helper()
	reads, err := StartWorker(c, WorkerOptions{QueryOnly: true, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reads.Stop)
}

// missingCase is a client and whether it misses the model a process goes
// on with (process.Client.MissingModel).
type missingCase struct {
	name    string
	c       *process.Client
	missing bool
}

// checkMissing checks what each client's MissingModel says of process id.
func checkMissing(ctx context.Context, t *testing.T, id string, cases ...missingCase) {
	t.Helper()
	for _, tt := range cases {
		if got, err := tt.c.MissingModel(ctx, id); err != nil || got != tt.missing {
			t.Errorf("%s: MissingModel = %v, %v; want %v", tt.name, got, err, tt.missing)
		}
	}
}

// quietRuntime starts a runtime with opts on an embedded engine of its
// own — a data directory of the test's, no system workers, a logger that
// discards — unless opts says otherwise, and closes it when the test ends.
func quietRuntime(ctx context.Context, t *testing.T, opts Options) *Runtime {
	t.Helper()
	if opts.Engine.DataDir == "" {
		opts.Engine.DataDir = filepath.Join(t.TempDir(), "data")
		opts.Engine.NoSystemWorkers = true
	}
	if opts.Logger == nil {
		opts.Logger = discard
	}
	rt, err := Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// untilWaiting watches process id through c until it waits for a person.
func untilWaiting(ctx context.Context, t *testing.T, c *process.Client, id string) {
	t.Helper()
	for info, err := range c.Watch(ctx, id, process.WatchOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		if info.Status == process.Waiting {
			return
		}
	}
	t.Fatalf("process %s ended without waiting for a person", id)
}

// finalInfo watches process id through c until it ends, and returns what
// it read last.
func finalInfo(ctx context.Context, t *testing.T, c *process.Client, id string) *process.Info {
	t.Helper()
	var last *process.Info
	for info, err := range c.Watch(ctx, id, process.WatchOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		last = info
	}
	return last
}

// untaken waits until process id has a pending activity of type kind,
// then checks for a second, the workers polling all along, that it stays
// scheduled at its first attempt with no failure — and, with made, that
// made reports no call: no worker that lacks (as said) what the call
// needs takes it.
func untaken(ctx context.Context, t *testing.T, c client.Client, id, kind, lacks string, made func() int) {
	t.Helper()
	pending := func() *workflowpb.PendingActivityInfo {
		t.Helper()
		d, err := c.DescribeWorkflowExecution(ctx, id, "")
		if err != nil {
			t.Fatal(err)
		}
		if st := d.GetWorkflowExecutionInfo().GetStatus(); st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			t.Fatalf("the process is %v, not running: its %s call was taken by a worker without %s", st, kind, lacks)
		}
		for _, a := range d.GetPendingActivities() {
			if a.GetActivityType().GetName() == kind {
				return a
			}
		}
		return nil
	}
	for pending() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	for range 20 {
		a := pending()
		var n int
		if made != nil {
			n = made()
		}
		if a.GetState() != enumspb.PENDING_ACTIVITY_STATE_SCHEDULED || a.GetAttempt() != 1 || a.GetLastFailure() != nil || n != 0 {
			t.Fatalf("the call was taken by a worker without %s: %v, attempt %d, %v, %d calls", lacks, a.GetState(), a.GetAttempt(), a.GetLastFailure(), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// activityPollers counts the workers polling queue for activity tasks.
func activityPollers(ctx context.Context, t *testing.T, c client.Client, queue string) int {
	t.Helper()
	resp, err := c.DescribeTaskQueue(ctx, queue, enumspb.TASK_QUEUE_TYPE_ACTIVITY)
	if err != nil {
		t.Fatal(err)
	}
	return len(resp.GetPollers())
}

// stalledOn waits until c's Get says process id's call waits on queue for
// a worker that has what it needs (process.Info.Stalled), a little past
// process.StallAfter.
func stalledOn(ctx context.Context, t *testing.T, c *process.Client, id, needs, queue string) {
	t.Helper()
	deadline := time.Now().Add(process.StallAfter + 20*time.Second)
	for {
		info, err := c.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range info.Stalled {
			if s.Needs == needs && s.Queue == queue && !s.Since.IsZero() {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("Get does not say the call waits on %s for a worker with its %s: %+v", queue, needs, info.Stalled)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
