package request

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/engine"
	"github.com/augceo/vibe/internal/golden"
	"github.com/augceo/vibe/internal/llmtest"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm/openai"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/vessel"
)

// TestReplayHistories replays the Vessel workflow's histories recorded
// under testdata/histories with today's workflow code: a change that would
// make running requests nondeterministic after an upgrade fails here. Run
// with -update to record them again on the embedded engine.
func TestReplayHistories(t *testing.T) {
	if golden.Update() {
		recordHistories(t)
	}
	r := worker.NewWorkflowReplayer()
	RegisterWorkflow(r, nil)
	process.RegisterWorkflows(r, nil)
	for _, f := range golden.Histories(t, "./request") {
		t.Run(golden.HistoryName(f), func(t *testing.T) {
			file, err := os.Open(f)
			if err != nil {
				t.Fatal(err)
			}
			defer file.Close()
			h, err := client.HistoryFromJSON(file, client.HistoryJSONOptions{})
			if err != nil {
				t.Fatal(err)
			}
			// The ids of children are derived from the request's own: replay
			// under the id it ran with.
			id := "replay-" + strings.TrimSuffix(filepath.Base(f), ".json")
			if err := r.ReplayWorkflowHistoryWithOptions(nil, h, worker.ReplayWorkflowHistoryOptions{OriginalExecution: workflow.Execution{ID: id, RunID: "replayed"}}); err != nil {
				t.Errorf("replay of %s: %v", f, err)
			}
		})
	}
}

// recordHistories runs requests that take each path of the workflow — a
// decision with a follow-up, a repair decision after a call whose
// parameters broke their tool, a plan, a launch, nested delegates — and
// writes each one's history.
func recordHistories(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	eng, err := engine.Start(ctx, engine.Options{SearchAttributes: durable.SearchAttributes, DataDir: t.TempDir(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	model := llmtest.NewWith(t, func(name, body string) string {
		switch {
		case name == "LLM_llmContext2":
			return `{"writeReport":{"_arithmetic":"100+250=350","total":350,"outstanding":250,"summary":"Two invoices.","$confidence":0.9}}`
		case strings.Contains(body, "record producer"), strings.Contains(body, "You are a composer"), strings.Contains(body, "sound engineer"):
			return musicAnswer(name, body)
		case strings.Contains(body, "These calls failed"):
			return `{"_reasoning": "fixed", "calls": [{"_tool": "count", "n": 7}]}`
		case strings.Contains(body, "Your decision made no call for"):
			return `{"_reasoning": "B too", "calls": [{"_tool": "note", "_instance": "B", "n": 2, "_outputPath": "state.note"}]}`
		case strings.Contains(body, "moderate"):
			return `{"_reasoning": "A", "calls": [{"_tool": "note", "_instance": "A", "n": 1, "_outputPath": "state.note"}]}`
		case strings.Contains(body, "Billing report"):
			return `{"_reasoning":"a report","calls":[{"_tool":"BillingReportProcess","name":"BillingReportProcess","llmContext1":{"_considerations":"Q1","reportParameters":{"customerId":"cust-042","from":"2026-01-01","to":"2026-03-31","currency":"EUR"},"_feedback":"ok"}}]}`
		}
		return `{"_reasoning": "x", "calls": [{"_tool": "count", "n": 1}, {"_tool": "count", "n": "†state.label"}]}`
	})
	var acts action.Registry
	acts.Register(action.Action{Name: "count", Run: func(ctx context.Context, in jsonv.Value) (jsonv.Value, error) { return in, nil }})
	acts.Register(action.Action{Name: "FetchInvoices_Activity", Run: func(ctx context.Context, in jsonv.Value) (jsonv.Value, error) {
		return jsonv.Parse([]byte(`{"invoices":[{"number":"A-1","date":"2026-01-15","amount":100,"paid":true},{"number":"A-2","date":"2026-02-15","amount":250,"paid":false}]}`))
	}})
	_, musicReg := example(t, "music", "producer.vessel.json")
	w := worker.New(eng.Client(), durable.TaskQueue, worker.Options{})
	acti := &durable.Activities{Provider: openai.New(openai.Options{Model: "m", BaseURL: model.URL, APIKey: "k"}), Actions: &acts, Logger: quiet()}
	register(t, eng.Client(), w, acti, &Activities{Loader: &vessel.Loader{Registry: musicReg}})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	params := mustJSON(t, `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)
	tools := &vessel.Toolset{Vessel: "t", System: "moderate", FollowUps: 2, Tools: []*vessel.Tool{
		{Name: "note", Kind: vessel.Instruction, Schema: params},
		{Name: "count", Kind: vessel.Action, Action: "count", Schema: params}}}
	counter := &vessel.Toolset{Vessel: "c", Tools: tools.Tools}
	billing, _ := example(t, "billing-report", "accountant.vessel.json")
	music, _ := example(t, "music", "producer.vessel.json")
	for _, tc := range []struct {
		name    string
		ts      *vessel.Toolset
		context string
		prompt  string
	}{
		{"follow-up", tools, `[{"type":"input","_instance":"A","input":1},{"type":"input","_instance":"B","input":2}]`, ""},
		{"repair", counter, `[{"type":"state","data":{"label":"seven"}}]`, ""},
		{"plan", counter, `[{"type":"state","data":{"n":3}},{"type":"plan","calls":[{"_tool":"count","n":"†state.n","_outputPath":"state.copy"}]}]`, ""},
		{"launch", billing, `[]`, "Billing report for cust-042, Q1 2026."},
		{"delegates", music, `[{"type": "input", "input": {"album": "Autumn"}}]`, "Make the album's first track."},
	} {
		req, err := vessel.NewRequest(tc.ts, mustJSON(t, tc.context), vessel.RequestOptions{Prompt: tc.prompt})
		if err != nil {
			t.Fatal(err)
		}
		run, err := eng.Client().ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "replay-" + tc.name, TaskQueue: durable.TaskQueue}, WorkflowName, req)
		if err != nil {
			t.Fatal(err)
		}
		var res vessel.Result
		if err := run.Get(ctx, &res); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		golden.WriteHistory(t, ctx, eng.Client(), run.GetID(), filepath.Join("testdata/histories", tc.name+".json"))
	}
}

// musicAnswer answers the producer, the composer and the sound engineer by
// their system text.
func musicAnswer(name, body string) string {
	switch {
	case strings.Contains(body, "record producer"):
		return `{"_reasoning": "a song", "calls": [{"_tool": "compose", "brief": "a rainy-day ballad"}]}`
	case strings.Contains(body, "You are a composer") && name == "decision":
		return `{"_reasoning": "a pad", "calls": [{"_tool": "synthesize", "sound": "warm pad", "seconds": 8}]}`
	case strings.Contains(body, "You are a composer"):
		return `{"title": "Rain Ballad", "key": "D minor", "structure": ["verse"], "melody": "D F A"}`
	}
	return `{"_physics": "saws", "patch": {"oscillator": "saw", "cutoffHz": 1200, "attackMs": 400, "releaseMs": 900}, "notes": "chorus on"}`
}
