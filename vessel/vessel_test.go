package vessel

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/augceo/vibe/internal/golden"
	"github.com/augceo/vibe/internal/llmtest"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm/openai"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/schema"
)

func mustJSON(t testing.TB, s string) jsonv.Value {
	t.Helper()
	v, err := jsonv.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func example(t testing.TB, dir, vesselFile string) (*Toolset, *registry.Registry) {
	t.Helper()
	reg, err := registry.Open("../examples/" + dir + "/registry")
	if err != nil {
		t.Fatal(err)
	}
	v, err := Load("../examples/" + dir + "/" + vesselFile)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := Build(context.Background(), v, BuildOptions{Registry: reg, Actions: []string{"FetchInvoices_Activity"}})
	if err != nil {
		t.Fatal(err)
	}
	return ts, reg
}

// TestLaunchProcessExpansion is the golden test of the billing-report
// Vessel's toolset: answerQuestion as it is, and LaunchProcess expanded for
// BillingReportProcess — {name: const, llmContext1: the entry chunk in the
// Vessel's mixins}, nothing of the process's later chunks.
func TestLaunchProcessExpansion(t *testing.T) {
	ts, _ := example(t, "billing-report", "accountant.vessel.json")
	view := jsonv.NewObject(len(ts.Tools))
	for _, tool := range ts.Tools {
		view.Set(tool.Name, tool.Schema)
	}
	golden.Check(t, "testdata/billing-report.toolset.json", append(jsonv.MarshalIndent(view.Value(), "  "), '\n'))
	launch := ts.Tool("BillingReportProcess")
	if launch == nil || launch.Kind != Launch || launch.Entry != "llmContext1" {
		t.Fatalf("launch tool %+v", launch)
	}
	if got := schema.Properties(launch.Schema).Names(); strings.Join(got, ",") != "name,llmContext1" {
		t.Errorf("launch tool properties %v", got)
	}
	entry := launch.Schema.Lookup("properties").Lookup("llmContext1")
	if got := schema.Properties(entry).Names(); strings.Join(got, ",") != "_considerations,reportParameters,_feedback" {
		t.Errorf("entry chunk %v: the mixins wrap it", got)
	}
	text := string(jsonv.Marshal(launch.Schema))
	for _, inner := range []string{"FetchInvoices_Activity", "writeReport", "references", "kind"} {
		if strings.Contains(text, inner) {
			t.Errorf("the launch tool shows the process's inner %q", inner)
		}
	}
	if got := launch.Schema.Lookup("properties").Lookup("name").Lookup("const").Str(); got != "BillingReportProcess" {
		t.Errorf("name const %q", got)
	}
}

// newChat is a test model that answers every request with decision.
func newChat(t *testing.T, decision string) *llmtest.Server {
	return llmtest.New(t, llmtest.Fixed(decision))
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// runRequest runs a request in Temporal's test environment and fails the
// test on a workflow error.
func runRequest(t *testing.T, in Input, model string, acts *process.Actions) Result {
	t.Helper()
	res, err := execute(t, in, model, acts, &Loader{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// execute runs a request in Temporal's test environment: the model at
// model ("" for none), the actions acts, delegates loaded through loader.
func execute(t *testing.T, in Input, model string, acts *process.Actions, loader *Loader) (Result, error) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := s.NewTestWorkflowEnvironment()
	if acts == nil {
		acts = &process.Actions{}
	}
	acti := &process.Activities{Actions: acts, Logger: quiet()}
	if model != "" {
		acti.Provider = openai.New(openai.Options{Model: "m", BaseURL: model, APIKey: "k"})
	}
	process.Register(env, acti)
	Register(env, acts, &Activities{Loader: loader})
	env.ExecuteWorkflow(WorkflowName, in)
	var res Result
	err := env.GetWorkflowResult(&res)
	return res, err
}

// TestModeration: 100 comments as 100 instances in one request — one model
// request that carries every instance id once, one call per instance, each
// result in its own instance's state.
func TestModeration(t *testing.T) {
	ts, _ := example(t, "moderation", "moderator.vessel.json")
	comments, err := schema.ReadFile("../examples/moderation/comments.json")
	if err != nil {
		t.Fatal(err)
	}
	var calls []string
	for i := 1; i <= 100; i++ {
		d := "approve"
		if i == 3 || i%8 == 0 {
			d = "reject"
		}
		calls = append(calls, fmt.Sprintf(`{"_tool":"moderateComment","_instance":"c%03d","_outputPath":"state.moderation","_reading":"comment %d","decision":%q,"reason":"r%d"}`, i, i, d, i))
	}
	model := newChat(t, `{"_reasoning":"judge each","calls":[`+strings.Join(calls, ",")+`]}`)
	res := runRequest(t, Input{Toolset: ts, Context: comments, Prompt: "Moderate these comments."}, model.URL, nil)
	if n := model.Requests(); n != 1 {
		t.Fatalf("%d model requests, want exactly one", n)
	}
	for i := 1; i <= 100; i++ {
		id := fmt.Sprintf("c%03d", i)
		if n := strings.Count(model.Bodies()[0], id); n != 1 {
			t.Errorf("instance %s appears %d times in the request, want once", id, n)
		}
	}
	if len(res.Calls) != 100 {
		t.Fatalf("%d calls", len(res.Calls))
	}
	for i := 1; i <= 100; i++ {
		id := fmt.Sprintf("c%03d", i)
		m := res.States[id].Lookup("moderation")
		if m.Lookup("reason").Str() != fmt.Sprintf("r%d", i) {
			t.Errorf("%s's state %s", id, jsonv.Marshal(res.States[id]))
		}
		if _, thinking := m.Get("_reading"); thinking {
			t.Errorf("%s: the thinking field reached the state", id)
		}
	}
	if got := res.States["c003"].Lookup("moderation").Lookup("decision").Str(); got != "reject" {
		t.Errorf("c003 decision %q", got)
	}
	if res.States[""].Len() != 0 {
		t.Errorf("the global state changed: %s", jsonv.Marshal(res.States[""]))
	}
	if res.Usage.PromptTokens != 100 {
		t.Errorf("usage %+v", res.Usage)
	}
}

// TestManagerEmployees: a global instruction that targets employee_B
// changes employee_B's state only.
func TestManagerEmployees(t *testing.T) {
	ts, _ := example(t, "manager-employees", "manager.vessel.json")
	ctx, err := schema.ReadFile("../examples/manager-employees/context.json")
	if err != nil {
		t.Fatal(err)
	}
	model := newChat(t, `{"_reasoning":"B gets the report","calls":[{"_tool":"updateTask","_instance":"employee_B","newTask":"Finalize the quarterly report","newStatus":"High Priority","output":"†state"}]}`)
	res := runRequest(t, Input{Toolset: ts, Context: ctx}, model.URL, nil)
	if got := string(jsonv.Marshal(res.States["employee_A"])); got != `{"task":"Draft initial proposal","status":"In Progress"}` {
		t.Errorf("employee_A changed: %s", got)
	}
	if got := string(jsonv.Marshal(res.States["employee_B"])); got != `{"task":"Review team submissions","status":"Blocked","newTask":"Finalize the quarterly report","newStatus":"High Priority"}` {
		t.Errorf("employee_B: %s", got)
	}
	// The global input was in the one request; the decision names B.
	if !strings.Contains(model.Bodies()[0], `Give employee B them a new, high-priority task`) {
		t.Error("the global input is not in the request")
	}
}

// TestIsolation: a call for one instance reads and writes that instance's
// state only, even when it asks for a path only another instance has.
func TestIsolation(t *testing.T) {
	ts := &Toolset{Vessel: "t", Tools: []*Tool{{Name: "note", Kind: Instruction, Schema: mustJSON(t, `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)}}}
	ctx := mustJSON(t, `[
		{"type":"state","_instance":"A","secret":"a-secret","n":"1"},
		{"type":"state","_instance":"B","secret":"b-secret","onlyB":"b"}]`)
	decision := mustJSON(t, `{"calls":[
		{"_tool":"note","_instance":"A","text":"†state.secret","_outputPath":"state.copy"},
		{"_tool":"note","_instance":"B","text":"†state.secret","_outputPath":"state.copy"},
		{"_tool":"note","_instance":"A","text":"†state.onlyB","_outputPath":"state.leak"}]}`)
	_, err := execute(t, Input{Toolset: ts, Context: ctx, Decision: decision}, "", nil, &Loader{})
	// Reading onlyB from A is caught before anything runs: nothing writes it
	// in A and A's state does not have it.
	if err == nil || !strings.Contains(err.Error(), "call 3 (note, instance A) reads †state.onlyB, but no call writes it") {
		t.Fatalf("err = %v", err)
	}
	decision = mustJSON(t, `{"calls":[
		{"_tool":"note","_instance":"A","text":"†state.secret","_outputPath":"state.copy"},
		{"_tool":"note","_instance":"B","text":"†state.secret","_outputPath":"state.copy"}]}`)
	res := runRequest(t, Input{Toolset: ts, Context: ctx, Decision: decision}, "", nil)
	if got := res.States["A"].Lookup("copy").Lookup("text").Str(); got != "a-secret" {
		t.Errorf("A copied %q", got)
	}
	if got := res.States["B"].Lookup("copy").Lookup("text").Str(); got != "b-secret" {
		t.Errorf("B copied %q", got)
	}
	if _, ok := res.States["A"].Get("onlyB"); ok {
		t.Error("B's state leaked into A")
	}
}

// TestPlan runs a plan once per instance: a DAG wired through state,
// independent calls in one layer.
func TestPlan(t *testing.T) {
	ts := &Toolset{Vessel: "t", Tools: []*Tool{
		{Name: "lookup", Kind: Instruction, Schema: mustJSON(t, `{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`)},
		{Name: "greet", Kind: Action, Action: "greet", Schema: mustJSON(t, `{"type":"object","properties":{"who":{"type":"object"}},"required":["who"]}`)},
		{Name: "log", Kind: Instruction, Schema: mustJSON(t, `{"type":"object","properties":{"msg":{"type":"string"}},"required":["msg"]}`)},
	}}
	ctx := mustJSON(t, `[
		{"type":"state","_instance":"u1","userId":"42"},
		{"type":"state","_instance":"u2","userId":"43"},
		{"type":"plan","calls":[
			{"_tool":"lookup","id":"†state.userId","_outputPath":"state.user"},
			{"_tool":"greet","who":"†state.user","_outputPath":"state.greeting"},
			{"_tool":"log","msg":"started"}]}]`)
	var acts process.Actions
	acts.Register(process.Action{Name: "greet", Run: func(ctx context.Context, in jsonv.Value) (jsonv.Value, error) {
		return jsonv.StringValue("hello " + in.Lookup("who").Lookup("id").Str()), nil
	}})
	res := runRequest(t, Input{Toolset: ts, Context: ctx}, "", &acts)
	if len(res.Calls) != 6 {
		t.Fatalf("%d calls, want the plan's 3 for each of 2 instances", len(res.Calls))
	}
	for inst, want := range map[string]string{"u1": "hello 42", "u2": "hello 43"} {
		if got := res.States[inst].Lookup("greeting").Str(); got != want {
			t.Errorf("%s greeting %q (state %s)", inst, got, jsonv.Marshal(res.States[inst]))
		}
	}
	calls, _ := ParseCalls("p", "", ctx.Array()[2].Lookup("calls"))
	expanded, _ := Expand(calls, []string{"u1", "u2"})
	layers := NewGraph(expanded).Layers()
	if fmt.Sprint(layers) != "[[0 2 3 5] [1 4]]" {
		t.Errorf("layers %v: lookups and logs first, in parallel; greets after their lookup", layers)
	}
}

func TestPlanValidation(t *testing.T) {
	ts := &Toolset{Vessel: "t", Tools: []*Tool{
		{Name: "fetch", Kind: Instruction, Schema: mustJSON(t, `{"type":"object","properties":{"id":{"type":"string"},"limit":{"type":"integer"}},"required":["id"]}`)},
		{Name: "report", Kind: Instruction, Schema: mustJSON(t, `{"type":"object","properties":{"data":{"type":"object"}},"required":["data"]}`)},
	}}
	states := map[string]jsonv.Value{"": mustJSON(t, `{"userId":"u1"}`)}
	tests := []struct{ name, calls, want string }{
		{"unknown tool", `[{"_tool":"fetchh","id":"x"}]`, `p: /calls/0/_tool: call 1 (fetchh): unknown tool "fetchh" (tools: fetch, report)`},
		{"parameters break the schema", `[{"_tool":"fetch","id":"x","limit":"ten"}]`, `p: /calls/0/limit: call 1 (fetch): parameters break the tool's schema`},
		{"missing parameter", `[{"_tool":"report"}]`, `p: /calls/0: call 1 (report): parameters break the tool's schema: missing property 'data'`},
		{"read of a variable nothing writes", `[{"_tool":"fetch","id":"†state.userId","_outputPath":"state.user"},{"_tool":"report","data":"†state.orders"}]`, `p: /calls/1/data: call 2 (report) reads †state.orders, but no call writes it and the state does not have it`},
		{"cycle", `[{"_tool":"report","data":"†state.b","_outputPath":"state.a"},{"_tool":"report","data":"†state.a","_outputPath":"state.b"}]`, `the calls form a cycle: call 2 (report) writes state.b for call 1 (report), call 1 (report) writes state.a for call 2 (report)`},
		{"unknown instance", `[{"_tool":"fetch","_instance":"zz","id":"x"}]`, `p: /calls/0/_instance: call 1 (fetch, instance zz): unknown instance "zz"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls, err := ParseCalls("p", "/calls", mustJSON(t, tt.calls))
			if err != nil {
				t.Fatal(err)
			}
			err = NewGraph(calls).Validate("p", ts, states)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v\nwant %s", err, tt.want)
			}
		})
	}
	if _, err := ParseCalls("p", "/calls", mustJSON(t, `[{"_tool":"fetch","_outputPath":"user.name"}]`)); err == nil || !strings.Contains(err.Error(), `"user.name" is not a state path`) {
		t.Errorf("bad output path: %v", err)
	}
	if _, err := ParseCalls("p", "/calls", mustJSON(t, `[{"id":"x"}]`)); err == nil || !strings.Contains(err.Error(), `needs "_tool"`) {
		t.Errorf("no _tool: %v", err)
	}
}

func TestState(t *testing.T) {
	s := mustJSON(t, `{"zeta":1,"user":{"id":"u1","name":"Ann"}}`)
	s, err := Write(s, []string{"user", "email"}, jsonv.StringValue("ann@x"))
	if err != nil {
		t.Fatal(err)
	}
	s, _ = Write(s, []string{"report"}, mustJSON(t, `{"total":3}`))
	s, _ = Write(s, []string{}, mustJSON(t, `{"zeta":null,"alpha":true}`))
	if got := string(jsonv.Marshal(s)); got != `{"user":{"id":"u1","name":"Ann","email":"ann@x"},"report":{"total":3},"alpha":true}` {
		t.Errorf("state %s", got)
	}
	if _, err := Write(s, []string{"alpha", "x"}, jsonv.IntValue(1)); err == nil || !strings.Contains(err.Error(), "state.alpha is boolean, not an object") {
		t.Errorf("write under a scalar: %v", err)
	}
	if _, err := Write(s, []string{}, jsonv.IntValue(1)); err == nil {
		t.Error("a number over the whole state")
	}
	p, err := ResolveRefs(mustJSON(t, `{"who":"†state.user","n":"†state.report.total","plain":"state.user"}`), s)
	if err != nil || string(jsonv.Marshal(p)) != `{"who":{"id":"u1","name":"Ann","email":"ann@x"},"n":3,"plain":"state.user"}` {
		t.Errorf("resolve %s %v", jsonv.Marshal(p), err)
	}
	if _, err := ResolveRefs(mustJSON(t, `{"x":"†state.nope.deep"}`), s); err == nil || !strings.Contains(err.Error(), "parameter x reads †state.nope.deep: state.nope.deep: no such value") {
		t.Errorf("unknown path: %v", err)
	}
}

func TestParseVessel(t *testing.T) {
	_, err := Parse("v.json", mustJSON(t, `{"name":"x","tools":["instructions/a", 3, "aug:i/a", "aug:i/a"],"colour":1}`))
	want := []string{
		`v.json: /colour: unknown key "colour"`,
		`v.json: /tools/0: "instructions/a" is not a registry URI`,
		`v.json: /tools/1: tools must hold registry URIs, not number`,
		`v.json: /tools/3: tools lists "aug:i/a" twice`,
	}
	for _, w := range want {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("missing %q in\n%v", w, err)
		}
	}
	if _, err := Parse("v.json", mustJSON(t, `{"name":"x"}`)); err == nil || !strings.Contains(err.Error(), "needs tools or processes") {
		t.Errorf("empty: %v", err)
	}
}

func TestProcessName(t *testing.T) {
	for uri, want := range map[string]string{"aug:processes/schedule-meeting:2": "ScheduleMeeting", "aug:processes/BillingReportProcess": "BillingReportProcess", "aug:p/a_b.c": "ABC"} {
		if got := ProcessName(uri); got != want {
			t.Errorf("ProcessName(%s) = %s, want %s", uri, got, want)
		}
	}
}

// newChatByName is a test model that answers by schema name.
func newChatByName(t *testing.T, answers map[string]string) *llmtest.Server {
	return llmtest.New(t, llmtest.ByName(answers))
}
