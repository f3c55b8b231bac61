package request

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"go.temporal.io/sdk/worker"

	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/engine"
	"github.com/augceo/vibe/internal/llmtest"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm/openai"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/schema"
	"github.com/augceo/vibe/vessel"
)

// offered is the instances a decision request's schema offers its calls
// (the _instance enum), in order; none for a body it cannot read.
func offered(body string) []string {
	var req struct {
		ResponseFormat struct {
			JSONSchema struct {
				Schema struct {
					Properties struct {
						Calls struct {
							Items struct {
								AnyOf []struct {
									Properties struct {
										Instance struct{ Enum []string } `json:"_instance"`
									} `json:"properties"`
								} `json:"anyOf"`
							} `json:"items"`
						} `json:"calls"`
					} `json:"properties"`
				} `json:"schema"`
			} `json:"json_schema"`
		} `json:"response_format"`
	}
	if json.Unmarshal([]byte(body), &req) != nil {
		return nil
	}
	if any := req.ResponseFormat.JSONSchema.Schema.Properties.Calls.Items.AnyOf; len(any) > 0 {
		return any[0].Properties.Instance.Enum
	}
	return nil
}

// scripted is a model that answers every decision request with the calls
// of script whose _instance the request offers, in the script's order:
// the same answers whether one decision covers every instance or a part's
// covers some of them.
func scripted(t *testing.T, script []string) *llmtest.Server {
	return llmtest.NewWith(t, func(name, body string) string {
		ids := offered(body)
		var calls []string
		for _, c := range script {
			var call struct {
				Instance string `json:"_instance"`
			}
			if err := json.Unmarshal([]byte(c), &call); err != nil {
				t.Error(err)
			}
			if slices.Contains(ids, call.Instance) {
				calls = append(calls, c)
			}
		}
		return `{"_reasoning":"as scripted","calls":[` + strings.Join(calls, ",") + `]}`
	})
}

// embedded starts an embedded engine for the test, which closes it; with
// -short the test is skipped.
func embedded(t *testing.T) *engine.Engine {
	t.Helper()
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	eng, err := engine.Start(context.Background(), engine.Options{SearchAttributes: durable.SearchAttributes, DataDir: t.TempDir(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return eng
}

// TestSplitDecision: the manager-employees Vessel (seed 002) with one
// instance per decision ("decisionSize": 1) is split into a part per
// employee; read by its id, as vibe vessel, the console and GET
// /v1/requests/{id} read it, the request shows its parts, the calls the
// model decided in them in decision order, each employee's state as its
// part wrote it — what the unsplit request shows on the same answers —
// and so does Run's result.
func TestSplitDecision(t *testing.T) {
	eng := embedded(t)
	ctx := context.Background()
	team, err := schema.ReadFile("../examples/manager-employees/context.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		script []string
		// unanswered are the employees the script decides nothing for.
		unanswered []string
		// whole and split are the model requests each request makes: a
		// decision per part, and a follow-up for an employee left alone.
		whole, split int
	}{
		{"the seed's decision: B gets the report, A nothing", []string{
			`{"_tool":"updateTask","_instance":"employee_B","newTask":"Finalize the quarterly report","newStatus":"High Priority","output":"†state"}`},
			[]string{"employee_A"}, 2, 3},
		{"each gets a task, written into state", []string{
			`{"_tool":"updateTask","_instance":"employee_A","newTask":"Draft initial proposal","newStatus":"Done","_outputPath":"state.update"}`,
			`{"_tool":"updateTask","_instance":"employee_B","newTask":"Finalize the quarterly report","newStatus":"High Priority","output":"†state"}`},
			nil, 1, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			model := scripted(t, tt.script)
			w := worker.New(eng.Client(), durable.TaskQueue, worker.Options{})
			register(t, eng.Client(), w, &durable.Activities{Actions: &action.Registry{}, Logger: quiet(),
				Provider: openai.New(openai.Options{Model: "m", BaseURL: model.URL, APIKey: "k"})}, &Activities{Loader: &vessel.Loader{}})
			if err := w.Start(); err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			c := &Client{Temporal: eng.Client()}
			run := func(size int) *Info {
				t.Helper()
				ts, _ := example(t, "manager-employees", "manager.vessel.json")
				ts.DecisionSize = size
				started, err := c.Start(ctx, StartOptions{Toolset: ts, Context: team})
				if err != nil {
					t.Fatal(err)
				}
				return await(t, c, started.ID)
			}
			whole := run(0)
			before := model.Requests()
			split := run(1)
			if before != tt.whole || model.Requests()-before != tt.split {
				t.Errorf("%d model requests whole and %d split, want %d and %d", before, model.Requests()-before, tt.whole, tt.split)
			}
			if len(whole.Parts) != 0 || !slices.Equal(split.Parts, []string{split.ID + "-part-1", split.ID + "-part-2"}) {
				t.Fatalf("parts %v and %v: the split request has a part per employee", whole.Parts, split.Parts)
			}
			if split.Status != process.Completed || len(split.Calls) != len(tt.script) {
				t.Fatalf("the split request: %s, %d calls %s", split.Status, len(split.Calls), mustMarshal(t, split.Calls))
			}
			summaries := func(info *Info) string {
				var out []string
				for _, c := range info.Calls {
					out = append(out, string(jsonv.Marshal(c.Summary())))
				}
				return strings.Join(out, "\n")
			}
			if got, want := summaries(split), summaries(whole); got != want {
				t.Errorf("the split request's calls:\n%s\nthe unsplit one's:\n%s", got, want)
			}
			for i, c := range split.Calls {
				if c.Index != i || c.Error != "" {
					t.Errorf("call %d: index %d, error %q", i, c.Index, c.Error)
				}
			}
			if got, want := string(jsonv.Marshal(split.States)), string(jsonv.Marshal(whole.States)); got != want {
				t.Errorf("states %s, unsplit %s", got, want)
			}
			if got := split.States.Lookup("employee_B").Lookup("newTask").Str(); got != "Finalize the quarterly report" {
				t.Errorf("employee_B's state: %s", jsonv.Marshal(split.States))
			}
			if got := split.Decision.Lookup("calls").Len(); got != len(tt.script) {
				t.Errorf("the joined decision has %d calls: %s", got, jsonv.Marshal(split.Decision))
			}
			if !slices.Equal(split.Unanswered, tt.unanswered) || !slices.Equal(whole.Unanswered, tt.unanswered) {
				t.Errorf("unanswered: split %v, unsplit %v, want %v", split.Unanswered, whole.Unanswered, tt.unanswered)
			}
			if n := model.Requests() - before; split.Usage.PromptTokens != int64(100*n) {
				t.Errorf("usage %+v after %d model requests of 100 prompt tokens", split.Usage, n)
			}

			// Run, the Go API's way, joins them alike.
			ts, _ := example(t, "manager-employees", "manager.vessel.json")
			ts.DecisionSize = 1
			req, err := vessel.NewRequest(ts, team, vessel.RequestOptions{})
			if err != nil {
				t.Fatal(err)
			}
			res, _, err := Run(ctx, eng.Client(), req)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(jsonv.Marshal(States(res.States, []string{"employee_A", "employee_B"}))); got != string(jsonv.Marshal(whole.States)) {
				t.Errorf("Run's states %s", got)
			}
		})
	}
}
