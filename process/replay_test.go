package process

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/durable"
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
	eng, err := engine.Start(ctx, engine.Options{SearchAttributes: durable.SearchAttributes, DataDir: t.TempDir(), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	var acts action.Registry
	m := &meetingActions{failFetch: 1}
	m.register(t, &acts)
	w := worker.New(eng.Client(), durable.TaskQueue, worker.Options{})
	register(t, eng.Client(), w, &durable.Activities{Provider: &scripted{answers: meetingAnswers}, Actions: &acts, Logger: quietLogger()})
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

	// A direct server call, and a process whose fire-and-forget step runs
	// in a workflow of its own.
	reg, likes, _ := likeRegistry(t)
	w2 := worker.New(eng.Client(), durable.TaskQueue+"-likes", worker.Options{})
	register(t, eng.Client(), w2, &durable.Activities{Provider: &scripted{answers: map[string]string{
		"LLM_step1_compose_like": `{"step1_compose_like":{"_why":"nice","postId":"p42"},"step2_send_like":{"postId":"p42"},"step3_thank":{"note":"thanks"}}`,
	}}, Actions: likes, Logger: quietLogger()})
	if err := w2.Start(); err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	for _, tc := range []struct{ name, pipeline, workflow string }{
		{"like-direct", `"Like post 42" | ComposeLike | SendLike`, durable.DirectCallWorkflow},
		{"like-fire-and-forget", `"Like post 42" | ComposeLike | SendLike | Thank`, durable.ProcessWorkflow},
	} {
		p, err := compile.CompilePipeline(ctx, tc.pipeline, compile.Options{Registry: reg, Actions: likes.Names()})
		if err != nil {
			t.Fatal(err)
		}
		run, err := eng.Client().ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: tc.name, TaskQueue: durable.TaskQueue + "-likes"}, tc.workflow, durable.Start{Name: "pipeline", Program: p.Program()})
		if err != nil {
			t.Fatal(err)
		}
		if err := run.Get(ctx, nil); err != nil {
			t.Fatal(err)
		}
		golden.WriteHistory(t, ctx, eng.Client(), tc.name, filepath.Join("testdata/histories", tc.name+".json"))
	}
	child := FireAndForgetID("like-fire-and-forget", "step2_send_like")
	if err := eng.Client().GetWorkflow(ctx, child, "").Get(ctx, nil); err != nil {
		t.Fatal(err)
	}
	golden.WriteHistory(t, ctx, eng.Client(), child, filepath.Join("testdata/histories", "like-fire-and-forget-action.json"))
}
