package batch_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/internal/diskspace"
	"github.com/augceo/vibe/internal/llmtest"
)

// TestHeldBatch: while the engine holds its work (Client.Held: the data
// directory's disk is full), a running batch reads as held, with the
// reason, in its status and in the list; once space is freed it reads as
// running again, its counts as they were. A batch that ended is not held.
func TestHeldBatch(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	model := llmtest.NewServer(t, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{})
	rec := &recorder{}
	c := stack(t, model.URL, rec.actions())
	full := &diskspace.Error{Dir: "/data", Free: 1 << 20, What: "the engine cannot write temporal.db, so its work is held until space is freed"}
	var held error
	c.Held = func() error { return held }

	// A batch whose items wait for a person runs until they are answered.
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	go c.Run(rctx, strings.NewReader(llmtest.Comments(2)), func(batch.Result) error { return nil }, batch.Options{Process: reviewProcess(t), ID: "disk", Size: 2})
	status := func() *batch.Status {
		t.Helper()
		st, err := c.Status(ctx, "disk")
		if err != nil {
			return &batch.Status{}
		}
		return st
	}
	deadline := time.Now().Add(time.Minute)
	for st := status(); st.Waiting != 2; st = status() {
		if time.Now().After(deadline) {
			t.Fatalf("the items never waited: %+v", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st := status(); st.Status != batch.StatusRunning || st.Held != "" {
		t.Fatalf("with room: %q %q", st.Status, st.Held)
	}

	held = full
	st := status()
	if st.Status != batch.StatusHeld || st.Held != full.Error() || st.Waiting != 2 || st.Items != 2 {
		t.Errorf("on a full disk: status %q, held %q, %d waiting of %d", st.Status, st.Held, st.Waiting, st.Items)
	}
	list, _, err := c.List(ctx, durable.ListOptions{})
	if err != nil || len(list) != 1 || list[0].Status != batch.StatusHeld || list[0].Held == "" {
		t.Errorf("the list on a full disk: %+v %v", list, err)
	}

	held = nil
	if st := status(); st.Status != batch.StatusRunning || st.Held != "" || st.Waiting != 2 {
		t.Errorf("with room again: status %q, held %q, %d waiting", st.Status, st.Held, st.Waiting)
	}

	if _, err := c.Run(ctx, strings.NewReader(llmtest.Comments(2)), func(batch.Result) error { return nil }, batch.Options{Process: moderate(t), ID: "ended", Size: 2}); err != nil {
		t.Fatal(err)
	}
	held = full
	if st, err := c.Status(ctx, "ended"); err != nil || st.Status != batch.StatusCompleted || st.Held != "" {
		t.Errorf("an ended batch on a full disk: %+v %v", st, err)
	}
}
