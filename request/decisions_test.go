package request

import (
	"testing"

	"github.com/augceo/vibe/internal/llmtest"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
	"github.com/augceo/vibe/vessel"
)

// TestFirstValues: a model that answers every schema with the first value
// it allows — the shortest string each pattern matches, the first enum
// value, every property filled, as constrained decoding may — gets every
// example's request done, with no call failing: the decision schema admits
// only decisions the engine carries out.
func TestFirstValues(t *testing.T) {
	for _, ex := range []struct{ dir, vessel, context, prompt string }{
		{"moderation", "moderator.vessel.json", "comments.json", "Moderate these comments."},
		{"manager-employees", "manager.vessel.json", "context.json", ""},
		{"billing-report", "accountant.vessel.json", "", "Billing report for cust-042, Q1 2026."},
		{"speaker", "orchestrator.vessel.json", "", "Tell user u_123: Hello, world!"},
		{"music", "producer.vessel.json", "context.json", "Make the album's first track."},
	} {
		t.Run(ex.dir, func(t *testing.T) {
			ts, reg := example(t, ex.dir, ex.vessel)
			ctx := jsonv.ArrayValue()
			if ex.context != "" {
				var err error
				if ctx, err = schema.ReadFile("../examples/" + ex.dir + "/" + ex.context); err != nil {
					t.Fatal(err)
				}
				if c, ok := ctx.Get("context"); ok {
					ctx = c
				}
			}
			model := llmtest.NewWith(t, llmtest.FirstValue)
			res, err := runDelegating(t, Input{Toolset: ts, Context: ctx, Prompt: ex.prompt}, model, &vessel.Loader{Registry: reg})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Calls) == 0 {
				t.Fatal("no call was made")
			}
			for _, c := range res.Calls {
				if c.Error != "" {
					t.Errorf("call %d (%s): %s", c.Index, c.Tool, c.Error)
				}
			}
			t.Logf("%d calls, %d model requests, %d instances unanswered", len(res.Calls), model.Requests(), len(res.Unanswered))
		})
	}
}

// TestShortestMatch: the strings a constrained decoder may give for the
// decision schema's patterns.
func TestShortestMatch(t *testing.T) {
	for pattern, want := range map[string]string{
		`^state(\.[^.]+)*$`:  "state",
		`^state(\.[^.]+)+$`:  "state.a",
		`^†state(\.[^.]+)*$`: "†state",
		`^(c001|c2)$`:        "c2",
		`^[0-9]{3}-x$`:       "000-x",
	} {
		if got := llmtest.ShortestMatch(pattern); got != want {
			t.Errorf("ShortestMatch(%q) = %q, want %q", pattern, got, want)
		}
	}
}
