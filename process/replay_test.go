package process

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/sdk/worker"

	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/engine"
	"github.com/augceo/vibe/internal/golden"
)

// TestReplayHistories replays the workflow histories recorded under
// testdata/histories with today's workflow code: a change that would make
// running processes nondeterministic after an upgrade fails here. Run with
// -update to record the histories again on the embedded engine.
func TestReplayHistories(t *testing.T) {
	if golden.Update() {
		recordHistories(t)
	}
	r := worker.NewWorkflowReplayer()
	RegisterWorkflows(r, nil)
	golden.ReplayHistories(t, "./process", r)
}

// recordHistories runs schedule-meeting on the embedded engine — once
// approved, once with a refused answer first and a failing action — and
// writes each workflow's history.
func recordHistories(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	eng, err := engine.Start(ctx, engine.Options{SearchAttributes: SearchAttributes, DataDir: t.TempDir(), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	var acts action.Registry
	m := &meetingActions{failFetch: 1}
	m.register(t, &acts)
	w := worker.New(eng.Client(), TaskQueue, worker.Options{})
	Register(w, &Activities{Provider: &scripted{answers: meetingAnswers}, Actions: &acts, Logger: quietLogger()})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	c := &Client{Temporal: eng.Client(), Actions: acts.Names()}
	doc := meeting(t).Document
	for _, tc := range []struct{ name, bad, good string }{
		{"schedule-meeting-approved", "", `{"confirmInvitation":{"decision":"Approve"}}`},
		{"schedule-meeting-refused-then-rejected", `{"confirmInvitation":{"decision":"Maybe"}}`, `{"confirmInvitation":{"decision":"Reject"}}`},
	} {
		st, err := c.Start(ctx, StartOptions{Document: doc, Prompt: "Schedule a meeting between Alice and Bob"})
		if err != nil {
			t.Fatal(err)
		}
		for {
			info, err := c.Get(ctx, st.ID)
			if err != nil {
				t.Fatal(err)
			}
			if info.Status == Waiting {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if tc.bad != "" {
			if _, err := c.Answer(ctx, st.ID, mustParse(t, tc.bad)); err == nil {
				t.Fatal("a bad answer was accepted")
			}
		}
		if _, err := c.Answer(ctx, st.ID, mustParse(t, tc.good)); err != nil {
			t.Fatal(err)
		}
		if err := eng.Client().GetWorkflow(ctx, st.ID, "").Get(ctx, nil); err != nil {
			t.Fatal(err)
		}
		golden.WriteHistory(t, ctx, eng.Client(), st.ID, filepath.Join("testdata/histories", tc.name+".json"))
	}
}
