package vessel

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/augceo/vibe/internal/golden"
	"github.com/augceo/vibe/jsonv"
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

// TestToolNamesApart: two versions of one instruction get names of their
// own; two instructions of one name that no version tells apart are
// refused, naming both URIs.
func TestToolNamesApart(t *testing.T) {
	dir := t.TempDir()
	for name, doc := range map[string]string{
		"instructions/foo@1.json": `{"type": "object", "properties": {"a": {"type": "string"}}}`,
		"instructions/foo@2.json": `{"type": "object", "properties": {"b": {"type": "string"}}}`,
		"a/bar.json":              `{"type": "object"}`,
		"b/bar.json":              `{"type": "object"}`,
	} {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		os.WriteFile(filepath.Join(dir, name), []byte(doc), 0o644)
	}
	reg, err := registry.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := Build(context.Background(), &Vessel{Name: "v", Tools: []string{"aug:instructions/foo:1", "aug:instructions/foo:2"}, File: "v.json"}, BuildOptions{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ts.Names(), ","); got != "foo_v1,foo_v2" {
		t.Errorf("names %s", got)
	}
	_, err = Build(context.Background(), &Vessel{Name: "v", Tools: []string{"aug:a/bar", "aug:b/bar"}, File: "v.json"}, BuildOptions{Registry: reg})
	if err == nil || !strings.Contains(err.Error(), `v.json: /tools/0: tools aug:a/bar and aug:b/bar are both named "bar"`) {
		t.Errorf("err = %v", err)
	}
}

// branchPlan is an if-else in a plan: a verdict, then one message or the
// other, a call that needs either, and a branch no verdict takes with its
// dependant.
const branchPlan = `[
	{"_tool":"note","text":"†state.kind","_outputPath":"state.verdict"},
	{"_tool":"note","text":"approved","_if":{"state":"†state.verdict.text","equals":"approve"},"_outputPath":"state.message"},
	{"_tool":"note","text":"rejected","_if":{"state":"†state.verdict.text","matches":{"not":{"const":"approve"}}},"_outputPath":"state.message"},
	{"_tool":"send","msg":"†state.message","_outputPath":"state.sent"},
	{"_tool":"note","text":"escalate","_if":{"state":"†state.verdict.text","equals":"escalate"},"_outputPath":"state.escalation"},
	{"_tool":"send","msg":"†state.escalation"}]`

// TestPlanConditions: "_if" is parsed and validated with its JSON path,
// wires its call after the calls that write its variable, and shows in the
// dry run's table and the picture.
func TestPlanConditions(t *testing.T) {
	ts := &Toolset{Vessel: "t", Tools: []*Tool{
		{Name: "note", Kind: Instruction, Schema: mustJSON(t, `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)},
		{Name: "send", Kind: Action, Action: "send", Schema: mustJSON(t, `{"type":"object","properties":{"msg":{"type":"object"}},"required":["msg"]}`)},
	}}
	states := map[string]jsonv.Value{"": mustJSON(t, `{"kind":"approve"}`)}
	calls, err := ParseCalls("p", "/calls", mustJSON(t, branchPlan))
	if err != nil {
		t.Fatal(err)
	}
	g := NewGraph(calls)
	if err := g.Validate("p", ts, states); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(g.Layers()); got != "[[0] [1 4] [2 5] [3]]" {
		t.Errorf("layers %s: the branches after the verdict, the second after the first (both write state.message)", got)
	}
	var table strings.Builder
	if err := g.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/branch-plan.dry-run.txt", []byte(table.String()))
	dot := g.Dot()
	for _, want := range []string{
		`c2 [label="2. note\n→ state.message\nif state.verdict.text = \"approve\"", style=dashed];`,
		`c3 [label="3. note\n→ state.message\nif state.verdict.text matches {\"not\":{\"const\":\"approve\"}}", style=dashed];`,
		`c1 -> c2 [label="state.verdict.text"];`,
	} {
		if !strings.Contains(dot, want) {
			t.Errorf("the picture lacks %s:\n%s", want, dot)
		}
	}

	bad := []struct{ name, calls, want string }{
		{"not an object", `[{"_tool":"note","text":"x","_if":"state.a"}]`, `p: /calls/0/_if: _if is an object`},
		{"not a state path", `[{"_tool":"note","text":"x","_if":{"state":"a.b"}}]`, `p: /calls/0/_if/state: _if reads a state variable`},
		{"no state", `[{"_tool":"note","text":"x","_if":{"equals":1}}]`, `p: /calls/0/_if: _if needs "state"`},
		{"both", `[{"_tool":"note","text":"x","_if":{"state":"†state.kind","equals":1,"matches":{}}}]`, `p: /calls/0/_if: _if takes "equals" or "matches", not both`},
		{"unknown member", `[{"_tool":"note","text":"x","_if":{"state":"†state.kind","is":1}}]`, `p: /calls/0/_if/is: _if has no member "is"`},
		{"equals null", `[{"_tool":"note","text":"x","_if":{"state":"†state.kind","equals":null}}]`, `p: /calls/0/_if/equals: _if equals null never holds`},
		{"not a schema", `[{"_tool":"note","text":"x","_if":{"state":"†state.kind","matches":{"type":"strng"}}}]`, `p: /calls/0/_if/matches: _if matches no valid schema`},
	}
	for _, tt := range bad {
		if _, err := ParseCalls("p", "/calls", mustJSON(t, tt.calls)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v\nwant %s", tt.name, err, tt.want)
		}
	}
	calls, err = ParseCalls("p", "/calls", mustJSON(t, `[{"_tool":"note","text":"x","_if":{"state":"†state.nothing"}}]`))
	if err != nil {
		t.Fatal(err)
	}
	if err := NewGraph(calls).Validate("p", ts, states); err == nil || !strings.Contains(err.Error(), "p: /calls/0/_if: call 1 (note) reads †state.nothing, but no call writes it and the state does not have it") {
		t.Errorf("a condition on a variable nothing writes: %v", err)
	}
}
