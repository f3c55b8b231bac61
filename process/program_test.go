package process

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"go.temporal.io/sdk/worker"

	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/engine"
	"github.com/augceo/vibe/registry"
)

// TestProgramAndFilters reads a running process's program back from its
// history, and lists processes by status and name on the engine.
func TestProgramAndFilters(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	ctx := context.Background()
	eng, err := engine.Start(ctx, engine.Options{SearchAttributes: durable.SearchAttributes, DataDir: t.TempDir(), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	var acts action.Registry
	(&meetingActions{}).register(t, &acts)
	w := worker.New(eng.Client(), durable.TaskQueue, worker.Options{})
	register(t, eng.Client(), w, &durable.Activities{Provider: &scripted{answers: meetingAnswers}, Actions: &acts, Logger: quietLogger()})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	reg, err := registry.Open("../examples/schedule-meeting/registry")
	if err != nil {
		t.Fatal(err)
	}
	c := &Client{Temporal: eng.Client(), Registry: reg, Actions: acts.Names()}
	p := meeting(t)
	st, err := c.Start(ctx, StartOptions{Process: "aug:processes/schedule-meeting"})
	if err != nil {
		t.Fatal(err)
	}
	prog, err := c.Program(ctx, st.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := p.Program()
	if len(prog.Chunks) != len(want.Chunks) || prog.Chunks[3].Name != "USER_userContext" || prog.Chunks[1].Steps[0].Action != "FetchAvailability_Activity" {
		t.Errorf("program %+v", prog.Chunks)
	}
	if _, err := c.Program(ctx, "no-such-process"); !errors.Is(err, ErrNotFound) {
		t.Errorf("an unknown id: %v", err)
	}

	ids := func(opts ListOptions) []string {
		t.Helper()
		page, err := c.List(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, s := range page.Processes {
			out = append(out, s.ID)
		}
		return out
	}
	// Visibility follows the workflow shortly after.
	until := func(what string, opts ListOptions, want bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for slices.Contains(ids(opts), st.ID) != want {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %v", what, ids(opts))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	until("waiting", ListOptions{Status: Waiting}, true)
	until("waiting, by its name's start", ListOptions{Status: Waiting, Process: st.Name[:5]}, true)
	until("another name", ListOptions{Process: "zzz"}, false)
	until("running", ListOptions{Status: Running}, false)
	until("completed", ListOptions{Status: Completed}, false)
	if _, err := c.List(ctx, ListOptions{Process: "x' OR '1'='1"}); err == nil {
		t.Error("a name with quotes was taken into the query")
	}
	if _, err := c.List(ctx, ListOptions{Status: "lost"}); err == nil {
		t.Error("an unknown status was taken")
	}
	if _, err := c.Answer(ctx, st.ID, mustParse(t, `{"confirmInvitation":{"decision":"Approve"}}`)); err != nil {
		t.Fatal(err)
	}
	until("completed", ListOptions{Status: Completed}, true)
	until("failed", ListOptions{Status: Failed}, false)
	until("no longer waiting", ListOptions{Status: Waiting}, false)
}
