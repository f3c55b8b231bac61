package request

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/augceo/vibe/action"
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

// scriptedDecisions answers the n-th decision request with answers[n]
// (the last again after that) and keeps what each was sent.
func scriptedDecisions(t *testing.T, answers ...string) *llmtest.Server {
	n := 0
	var mu sync.Mutex
	return llmtest.NewWith(t, func(name, body string) string {
		mu.Lock()
		defer mu.Unlock()
		a := answers[min(n, len(answers)-1)]
		n++
		return a
	})
}

// lastUser is the last user message a request sent: the repair turn, or
// the follow-up's prompt.
func lastUser(t *testing.T, body string) string {
	var req struct {
		Messages []struct{ Role, Content string } `json:"messages"`
	}
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatal(err)
	}
	return req.Messages[len(req.Messages)-1].Content
}

// TestSemanticRepairs: for each kind of mistake a schema cannot rule out,
// a model that makes it once is told — the repair names it by its JSON
// path — corrects it, and the request completes with no call run twice.
func TestSemanticRepairs(t *testing.T) {
	params := `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`
	tools := func() *vessel.Toolset {
		return &vessel.Toolset{Vessel: "t", Tools: []*vessel.Tool{
			{Name: "note", Kind: vessel.Instruction, Schema: mustJSON(t, params)},
			{Name: "count", Kind: vessel.Action, Action: "count", Schema: mustJSON(t, params)}}}
	}
	for _, tt := range []struct {
		name, context string
		answers       []string
		repair        string // in the repair the model is sent
		calls         int    // calls of the final result
	}{
		{"a path the state's schema has no place for",
			`[{"type": "state", "schema": {"type": "object", "properties": {"total": {"type": "object"}}}, "data": {}}]`,
			[]string{`{"_reasoning": "x", "calls": [{"_tool": "note", "n": 1, "_outputPath": "state.totl"}]}`,
				`{"_reasoning": "x", "calls": [{"_tool": "note", "n": 1, "_outputPath": "state.total"}]}`},
			`/calls/0/_outputPath`, 1},
		{"a reference to a value nothing wrote",
			`[{"type": "state", "data": {"seed": 2}}]`,
			[]string{`{"_reasoning": "x", "calls": [{"_tool": "count", "n": "†state.sede"}]}`,
				`{"_reasoning": "x", "calls": [{"_tool": "count", "n": "†state.seed"}]}`},
			`/calls/0/n: call 1 (count) reads †state.sede, but no call writes it and the state does not have it`, 1},
		{"calls that wait for each other",
			`[]`,
			[]string{`{"_reasoning": "x", "calls": [{"_tool": "note", "n": "†state.b", "_outputPath": "state.a"}, {"_tool": "note", "n": "†state.a", "_outputPath": "state.b"}]}`,
				`{"_reasoning": "x", "calls": [{"_tool": "note", "n": 1, "_outputPath": "state.a"}, {"_tool": "note", "n": "†state.a.n", "_outputPath": "state.b"}]}`},
			`the calls form a cycle`, 2},
		{"parameters that break the tool once the references hold values",
			`[{"type": "state", "data": {"label": "seven"}}]`,
			[]string{`{"_reasoning": "x", "calls": [{"_tool": "count", "n": 1}, {"_tool": "count", "n": "†state.label"}]}`,
				`{"_reasoning": "x", "calls": [{"_tool": "count", "n": 7}]}`},
			`call 2 (count): parameters break the tool's schema`, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			ran := map[string]int{}
			var acts action.Registry
			acts.Register(action.Action{Name: "count", Run: func(ctx context.Context, in jsonv.Value) (jsonv.Value, error) {
				mu.Lock()
				ran[action.IdempotencyKey(ctx)]++
				mu.Unlock()
				return in, nil
			}})
			model := scriptedDecisions(t, tt.answers...)
			res, err := execute(t, Input{Toolset: tools(), Context: mustJSON(t, tt.context)}, model.URL, &acts, &vessel.Loader{})
			if err != nil {
				t.Fatal(err)
			}
			bodies := model.Bodies()
			if len(bodies) != 2 || !strings.Contains(lastUser(t, bodies[1]), tt.repair) {
				t.Fatalf("%d requests; the second sent:\n%s", len(bodies), lastUser(t, bodies[len(bodies)-1]))
			}
			if len(res.Calls) != tt.calls {
				t.Errorf("%d calls, want %d: %+v", len(res.Calls), tt.calls, res.Calls)
			}
			for _, c := range res.Calls {
				if c.Error != "" {
					t.Errorf("call %d: %s", c.Index, c.Error)
				}
			}
			for key, n := range ran {
				if n != 1 {
					t.Errorf("action call %s ran %d times", key, n)
				}
			}
			if res.Usage.PromptTokens != 200 {
				t.Errorf("usage %+v: the repair is counted", res.Usage)
			}
		})
	}
}

// instances is a context of n instances, each with an input.
func instances(n int) jsonv.Value {
	msgs := make([]jsonv.Value, n)
	for i := range msgs {
		msgs[i] = jsonv.ObjectValue(
			jsonv.Member{Name: "type", Value: jsonv.StringValue("input")},
			jsonv.Member{Name: "_instance", Value: jsonv.StringValue(fmt.Sprintf("i%04d", i+1))},
			jsonv.Member{Name: "input", Value: jsonv.IntValue(int64(i + 1))})
	}
	return jsonv.ArrayValue(msgs...)
}

// answerFor decides a call for each instance the request's schema offers,
// but only the first `share` of them.
func answerFor(body string, share float64) string {
	ids := offered(body)
	var calls []string
	for _, id := range ids[:int(float64(len(ids))*share)] {
		calls = append(calls, fmt.Sprintf(`{"_tool": "note", "_instance": %q, "n": 1, "_outputPath": "state.note"}`, id))
	}
	return `{"_reasoning": "each", "calls": [` + strings.Join(calls, ",") + `]}`
}

// TestFollowUp: 100 instances, and a model that decides for 60 of them:
// one follow-up names exactly the 40 others, and every instance ends with
// a result.
func TestFollowUp(t *testing.T) {
	ts := &vessel.Toolset{Vessel: "t", FollowUps: vessel.DefaultFollowUps, Tools: []*vessel.Tool{
		{Name: "note", Kind: vessel.Instruction, Schema: mustJSON(t, `{"type":"object","properties":{"n":{"type":"integer"}}}`)}}}
	first := true
	model := llmtest.NewWith(t, func(name, body string) string {
		share := 1.0
		if first {
			share, first = 0.6, false
		}
		return answerFor(body, share)
	})
	res, err := execute(t, Input{Toolset: ts, Context: instances(100)}, model.URL, nil, &vessel.Loader{})
	if err != nil {
		t.Fatal(err)
	}
	bodies := model.Bodies()
	if len(bodies) != 2 {
		t.Fatalf("%d decision requests, want the decision and one follow-up", len(bodies))
	}
	follow := lastUser(t, bodies[1])
	var want []string
	for i := 61; i <= 100; i++ {
		want = append(want, fmt.Sprintf("i%04d", i))
	}
	if !strings.Contains(follow, "made no call for 40 instance(s): "+strings.Join(want, ", ")+".") || strings.Contains(follow, "i0060,") {
		t.Errorf("the follow-up asks:\n%s", follow)
	}
	if len(res.Calls) != 100 || len(res.Unanswered) != 0 || len(res.FollowUps) != 1 {
		t.Errorf("%d calls, unanswered %v, %d follow-ups", len(res.Calls), res.Unanswered, len(res.FollowUps))
	}
	for i := 1; i <= 100; i++ {
		if res.States[fmt.Sprintf("i%04d", i)].Lookup("note").IsNull() {
			t.Errorf("instance %d has no result", i)
		}
	}
}

// TestManyInstances: 5,000 instances are decided in ⌈5000/K⌉ requests of
// K instances each (the Vessel's decisionSize), in parallel parts, and all
// complete.
func TestManyInstances(t *testing.T) {
	const n, k = 5000, 500
	ts := &vessel.Toolset{Vessel: "t", DecisionSize: k, Tools: []*vessel.Tool{
		{Name: "note", Kind: vessel.Instruction, Schema: mustJSON(t, `{"type":"object","properties":{"n":{"type":"integer"}}}`)}}}
	model := llmtest.NewWith(t, func(name, body string) string { return answerFor(body, 1) })
	res, err := execute(t, Input{Toolset: ts, Context: instances(n)}, model.URL, nil, &vessel.Loader{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := model.Requests(), (n+k-1)/k; got != want {
		t.Errorf("%d decision requests, want ⌈%d/%d⌉ = %d", got, n, k, want)
	}
	if len(res.Parts) != n/k || len(res.Unanswered) != 0 || res.Usage.PromptTokens != 100*n/k {
		t.Errorf("parts %d, unanswered %d, usage %+v", len(res.Parts), len(res.Unanswered), res.Usage)
	}
	for _, b := range model.Bodies() {
		if c := strings.Count(b, `"_instance":{"type":"string","enum":[`); c != 1 {
			t.Errorf("a request offers %d instance enums", c)
		}
	}
}
