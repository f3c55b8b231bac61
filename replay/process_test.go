package replay_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/internal/llmtest"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/replay"
	"github.com/augceo/vibe/replay/record"
)

// TestReplayProcesses replays processes of their own, selected by a
// filter, after their engine is gone: the person's recorded answers
// serve, an unchanged server input takes the recorded output, and a
// changed one stops the item as needing the server — no action runs. A
// process that still waits for a person has kept a record as it began
// to wait, and is replayed up to there, counted apart.
func TestReplayProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	ctx := context.Background()
	store := &record.Store{Dir: t.TempDir()}
	acts := &counter{}
	m := llmtest.NewServer(t, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{})
	var waiting string
	func() { // the engine, gone when the replay runs
		pc, stop := recordingEngine(t, m.URL, acts, store)
		defer stop()
		await := func(id string, want process.Status) {
			t.Helper()
			for info, err := range pc.Watch(ctx, id, process.WatchOptions{Interval: 20 * time.Millisecond}) {
				if err != nil {
					t.Fatal(err)
				}
				if info.Status == want {
					return
				}
			}
			t.Fatalf("%s never %s", id, want)
		}
		for _, prompt := range []string{"comment 1", "comment 2", "comment 3", "comment 4"} {
			opts := doc(t, "testdata/review.json")
			opts.Prompt = prompt
			started, err := pc.Start(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			await(started.ID, process.Waiting)
			if prompt == "comment 4" {
				// Never answered: it keeps a record as it starts to wait.
				waiting = started.ID
				deadline := time.Now().Add(time.Minute)
				for _, err := store.Process(waiting); err != nil; _, err = store.Process(waiting) {
					if time.Now().After(deadline) {
						t.Fatalf("the waiting process has no record: %v", err)
					}
					time.Sleep(20 * time.Millisecond)
				}
				continue
			}
			if _, err := pc.Answer(ctx, started.ID, jsonv.ObjectValue(jsonv.Member{Name: "confirm", Value: jsonv.ObjectValue(jsonv.Member{Name: "approve", Value: jsonv.StringValue("yes")})})); err != nil {
				t.Fatal(err)
			}
			await(started.ID, process.Completed)
		}
	}()
	acted := acts.calls()
	recs, err := store.Processes(func(r *record.Record) bool { return r.Process == "review" && r.Status == "completed" })
	if err != nil || len(recs) != 3 {
		t.Fatalf("%d records, %v; want 3", len(recs), err)
	}
	w, err := store.Process(waiting)
	if err != nil || w.Status != "waiting" || len(w.Chunks) != 1 || w.Chunk("LLM_llmContext1") == nil {
		t.Fatalf("the waiting process's record: %+v, %v; want its model's chunk, waiting", w, err)
	}
	recs = append(recs, w)
	if u := recs[0].Chunk("USER_userContext1"); u == nil || string(jsonv.Marshal(u.Answer)) != `{"confirm":{"approve":"yes"}}` {
		t.Fatalf("the person's answer is not kept: %+v", u)
	}

	// The changed process may escalate; the model escalates comment 2.
	changed := llmtest.NewServer(t, llmtest.Multiplexed(func(step, prompt string, repair bool) string {
		if step == "decide" && prompt == "comment 2" {
			return `{"decision":"escalate"}`
		}
		return llmtest.Verdict(step, prompt, repair)
	}), llmtest.Options{})
	start, _, err := (&process.Client{Actions: acts.actions().Names()}).Prepare(ctx,
		doc(t, "testdata/review.json", `"publish",
                "hide"`, `"publish",
                "hide",
                "escalate"`))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := replay.Run(ctx, recs, replay.Options{Name: start.Name, Program: start.Program, Provider: model(changed.URL), Model: "test-model",
		Missing: []replay.Missing{{ID: "never-started"}}})
	if err != nil {
		t.Fatal(err)
	}
	if acts.calls() != acted {
		t.Errorf("the replay ran the action %d times", acts.calls()-acted)
	}
	if changed.Requests() != 1 {
		t.Errorf("%d model requests, want the 4 items in 1", changed.Requests())
	}
	s := rep.Summary
	if s.Same != 3 || s.NeedsServer != 1 || s.NoRecord != 1 || s.Replayed != 4 || s.Unfinished != 1 || s.UnfinishedBy["waiting"] != 1 || !rep.AnyChanged() {
		t.Fatalf("summary %+v", s)
	}
	if it := rep.Items[3]; it.ID != waiting || it.Recorded != "waiting" || it.Outcome != replay.Same || len(it.Asked) != 1 {
		t.Errorf("the waiting item, replayed up to the person's step: %+v", it)
	}
	for _, it := range rep.Items {
		if it.Outcome == replay.NeedsServer && (it.Needs != "step serverContext1.record: its input changed" || len(it.Changes) != 2) {
			t.Errorf("the item that needs the server: %+v", it)
		}
	}
}

// TestReplayWaitingBatch: a batch's items that wait for a person keep
// their group's records as they begin to wait, before the group ends; a
// replay of the batch takes each up to the person's step and counts them
// apart, as waiting.
func TestReplayWaitingBatch(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	const n = 4
	ctx := context.Background()
	store := &record.Store{Dir: t.TempDir()}
	acts := &counter{}
	m := llmtest.NewServer(t, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{})
	func() { // the engine, gone when the replay runs
		pc, stop := recordingEngine(t, m.URL, acts, store)
		defer stop()
		c := batch.NewClient(pc)
		pc.Hosts = c
		bctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		defer func() { cancel(); <-done }()
		go func() {
			defer close(done)
			_, _ = c.Run(bctx, strings.NewReader(llmtest.Comments(n)), func(batch.Result) error { return nil }, batch.Options{Process: doc(t, "testdata/review.json"), ID: "waits", Size: n})
		}()
		deadline := time.Now().Add(2 * time.Minute)
		for {
			recs, err := store.Batch("waits")
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) == n && !slices.ContainsFunc(recs, func(r record.Record) bool { return r.Status != "waiting" }) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the waiting items' records: %+v", recs)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	recs, missing, err := replay.Select(store, replay.Selection{IDs: []string{"waits"}})
	if err != nil || len(recs) != n || len(missing) != 0 {
		t.Fatalf("%d records, missing %v, %v", len(recs), missing, err)
	}
	start, _, err := (&process.Client{Actions: acts.actions().Names()}).Prepare(ctx, doc(t, "testdata/review.json"))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := replay.Run(ctx, recs, replay.Options{Name: start.Name, Program: start.Program})
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Summary
	if s.Replayed != n || s.Same != n || s.Unfinished != n || s.UnfinishedBy["waiting"] != n || s.Requests != 0 || s.ActionsSkipped != 0 {
		t.Fatalf("summary %+v", s)
	}
	for _, it := range rep.Items {
		if it.Recorded != "waiting" || it.Outcome != replay.Same || len(it.Asked) != 0 {
			t.Errorf("line %d: %+v, want replayed up to the person's step", it.Line, it)
		}
	}
}
