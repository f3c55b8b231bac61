package replay_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/augceo/vibe/internal/llmtest"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/replay"
	"github.com/augceo/vibe/replay/record"
)

// mixed is the model after the enum changed: every comment is mixed, the
// decisions as before.
func mixed(step, prompt string, repair bool) string {
	if step == "assess" {
		return `{"sentiment":"mixed"}`
	}
	return llmtest.Verdict(step, prompt, repair)
}

// TestReplayModerate replays a batch of 200 comments through moderate —
// one model chunk, then the blocking action record — against changed
// processes: an enum the model now answers otherwise changes all 200 with
// the action called 0 times and only the changed chunk asked, multiplexed
// in at most 30 requests; a description the model answers alike changes
// none; the process unchanged asks nothing.
func TestReplayModerate(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	const n = 200
	ctx := context.Background()
	store := &record.Store{Dir: t.TempDir()}
	acts := &counter{}
	rec := llmtest.NewServer(t, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{})
	id := recorded(t, rec.URL, acts, store, doc(t, "testdata/moderate.json"), n)
	recs, err := store.Batch(id)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != n {
		t.Fatalf("%d records of %d items", len(recs), n)
	}
	acted := acts.calls()
	if acted != n {
		t.Fatalf("the recorded batch called the action %d times, want %d", acted, n)
	}

	tests := []struct {
		name    string
		edits   []string
		answer  func(step, prompt string, repair bool) string
		changed int
		maxReqs int // the most requests the replay may make
		minReqs int
	}{
		{name: "unchanged", answer: mixed, changed: 0, maxReqs: 0},
		{name: "enum", edits: []string{`"enum": ["positive", "neutral", "negative"]`, `"enum": ["positive", "neutral", "negative", "mixed"]`},
			answer: mixed, changed: n, minReqs: 1, maxReqs: 30},
		{name: "description", edits: []string{`"sentiment": {"type": "string",`, `"sentiment": {"type": "string", "description": "How the comment sounds to a reader",`},
			answer: llmtest.Verdict, changed: 0, minReqs: 1, maxReqs: 30},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := llmtest.NewServer(t, llmtest.Multiplexed(tc.answer), llmtest.Options{})
			start, _, err := (&process.Client{Actions: acts.actions().Names()}).Prepare(ctx, doc(t, "testdata/moderate.json", tc.edits...))
			if err != nil {
				t.Fatal(err)
			}
			rep, err := replay.Run(ctx, recs, replay.Options{Name: start.Name, Program: start.Program, Provider: model(m.URL), Model: "test-model", Size: 8})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %d of %d items changed, the action called %d times, %d model requests", tc.name, rep.Summary.Changed, n, acts.calls()-acted, m.Requests())
			if got := acts.calls(); got != acted {
				t.Errorf("the replay called the action %d times", got-acted)
			}
			if got := m.Requests(); got > tc.maxReqs || got < tc.minReqs || got != rep.Summary.Requests {
				t.Errorf("%d requests (summary %d), want %d to %d", got, rep.Summary.Requests, tc.minReqs, tc.maxReqs)
			}
			if rep.Summary.Changed != tc.changed || rep.Summary.Replayed != n || rep.AnyChanged() != (tc.changed > 0) {
				t.Fatalf("summary %+v, want %d changed of %d", rep.Summary, tc.changed, n)
			}
			if tc.changed == 0 {
				return
			}
			for _, it := range rep.Items {
				if len(it.Changes) != 1 || it.Changes[0].Path != "/assess/sentiment" || it.Changes[0].After.Str() != "mixed" {
					t.Fatalf("line %d: %+v, want /assess/sentiment changed to mixed", it.Line, it)
				}
			}
			if got := rep.Summary.Moves[`/assess/sentiment: "negative" → "mixed"`]; got != n/2 {
				t.Errorf("moves %v", rep.Summary.Moves)
			}
			if !rep.ChangedAt("/assess") || rep.ChangedAt("/decide") {
				t.Errorf("ChangedAt: /assess %v, /decide %v", rep.ChangedAt("/assess"), rep.ChangedAt("/decide"))
			}
		})
	}
}

// TestReplayThird changes the third of three chunks: the first two take
// their recorded answers, and the server steps their recorded outputs.
func TestReplayThird(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	const n = 6
	ctx := context.Background()
	store := &record.Store{Dir: t.TempDir()}
	acts := &counter{}
	rec := llmtest.NewServer(t, llmtest.Multiplexed(number), llmtest.Options{})
	id := recorded(t, rec.URL, acts, store, doc(t, "testdata/three.json"), n)
	recs, err := store.Batch(id)
	if err != nil {
		t.Fatal(err)
	}
	acted := acts.calls()
	m := llmtest.NewServer(t, llmtest.Multiplexed(thirdOnly(t)), llmtest.Options{})
	start := prepare(t, acts, oddThree(t))
	rep, err := replay.Run(ctx, recs, replay.Options{Name: start.Name, Program: start.Program, Provider: model(m.URL), Model: "test-model", Size: 8})
	if err != nil {
		t.Fatal(err)
	}
	if got := acts.calls(); got != acted {
		t.Errorf("the replay called the action %d times", got-acted)
	}
	if m.Requests() != 1 || rep.Summary.Asked["LLM_llmContext3"] != n || rep.Summary.Asked["LLM_llmContext1"]+rep.Summary.Asked["LLM_llmContext2"] != 0 {
		t.Errorf("%d requests, asked %v, reused %v; want 1 request, for the third chunk only", m.Requests(), rep.Summary.Asked, rep.Summary.Reused)
	}
	if rep.Summary.Changed != n/2 || rep.Summary.Same != n/2 || rep.Summary.ActionsSkipped != 2*n {
		t.Errorf("summary %+v, want %d changed, %d same, %d actions answered from records", rep.Summary, n/2, n/2, 2*n)
	}
}

// TestReplayProgress: Options.Progress is told the items done as each
// call of the changed last chunk comes back, and, at the end, every item
// done, those changed and the requests and tokens of the summary.
func TestReplayProgress(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	const n, k = 96, 8 // calls of k items each, answered in any order
	ctx := context.Background()
	store := &record.Store{Dir: t.TempDir()}
	acts := &counter{}
	two := recordedTwo(t, acts, store)
	m := llmtest.NewServer(t, llmtest.Multiplexed(thirdOnly(t)), llmtest.Options{Tokens: true})
	start := prepare(t, acts, oddThree(t))
	var told []replay.Progress
	rep, err := replay.Run(ctx, copies(two, "progress", n), replay.Options{Name: start.Name, Program: start.Program, Provider: model(m.URL),
		Model: "test-model", Size: k, Concurrency: 1, Progress: func(p replay.Progress) { told = append(told, p) }})
	if err != nil {
		t.Fatal(err)
	}
	calls := n / k
	if len(told) < calls+2 || told[0].Done != 0 || told[0].Items != n {
		t.Fatalf("told %d times, first %+v; want at least %d, from 0 of %d", len(told), told[0], calls+2, n)
	}
	for i := 1; i < len(told); i++ {
		if p, q := told[i-1], told[i]; q.Done < p.Done || q.Requests < p.Requests || q.Changed < p.Changed || q.Items != n {
			t.Fatalf("told %+v after %+v", q, p)
		}
	}
	for r := 1; r <= calls; r++ {
		if !slices.ContainsFunc(told, func(p replay.Progress) bool { return p.Requests == r && p.Done == r*k }) {
			t.Errorf("never told %d items done after %d calls: %+v", r*k, r, told)
			break
		}
	}
	s, last := rep.Summary, told[len(told)-1]
	if last.Done != n || last.Changed != s.Changed || s.Changed != n/2 || last.Requests != s.Requests || s.Requests != calls || last.Usage != s.Usage {
		t.Errorf("told last %+v; the summary: %d changed, %d requests, usage %+v", last, s.Changed, s.Requests, s.Usage)
	}
}

// TestReplayResumes: a replay run again with its answers file — as after
// a kill that left the answers of one call kept — asks only the calls not
// answered yet, and reports each item once.
func TestReplayResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	const n = 20
	ctx := context.Background()
	store := &record.Store{Dir: t.TempDir()}
	acts := &counter{}
	rec := llmtest.NewServer(t, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{})
	recs, err := store.Batch(recorded(t, rec.URL, acts, store, doc(t, "testdata/moderate.json"), n))
	if err != nil {
		t.Fatal(err)
	}
	start, _, err := (&process.Client{Actions: acts.actions().Names()}).Prepare(ctx,
		doc(t, "testdata/moderate.json", `"enum": ["positive", "neutral", "negative"]`, `"enum": ["positive", "neutral", "negative", "mixed"]`))
	if err != nil {
		t.Fatal(err)
	}
	answers := filepath.Join(t.TempDir(), "answers.jsonl")
	m := llmtest.NewServer(t, llmtest.Multiplexed(mixed), llmtest.Options{})
	opts := replay.Options{Name: start.Name, Program: start.Program, Provider: model(m.URL), Model: "test-model", Size: 8, Answers: answers}
	first, err := replay.Run(ctx, recs, opts)
	if err != nil || first.Summary.Changed != n || m.Requests() != 3 {
		t.Fatalf("first run: %+v, %d requests, %v", first.Summary, m.Requests(), err)
	}
	// As a kill after the first call would leave it: its 8 answers, and a
	// torn line.
	data, _ := os.ReadFile(answers)
	lines := strings.SplitAfter(string(data), "\n")
	os.WriteFile(answers, []byte(strings.Join(lines[:8], "")+`{"key":"torn`), 0o600)
	again, err := replay.Run(ctx, recs, opts)
	if err != nil {
		t.Fatal(err)
	}
	if m.Requests() != 3+2 || again.Summary.Resumed != 8 || again.Summary.Changed != n || len(again.Items) != n {
		t.Fatalf("run again: %+v, %d requests in all, want 2 more", again.Summary, m.Requests())
	}
	if _, err := replay.Run(ctx, recs, opts); err != nil || m.Requests() != 5 {
		t.Fatalf("a third run made %d requests in all, want none more: %v", m.Requests(), err)
	}
}
