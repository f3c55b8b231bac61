package request

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/internal/llmtest"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm/openai"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/schema"
	"github.com/augceo/vibe/vessel"
)

// Input is a request as the tests write it; execute prepares it with
// vessel.NewRequest, as a client would.
type Input struct {
	Toolset             *vessel.Toolset
	Context, Decision   jsonv.Value
	Prompt              string
	MaxDepth, MaxFanOut int
}

func mustJSON(t testing.TB, s string) jsonv.Value {
	t.Helper()
	v, err := jsonv.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func example(t testing.TB, dir, vesselFile string) (*vessel.Toolset, *registry.Registry) {
	t.Helper()
	reg, err := registry.Open("../examples/" + dir + "/registry")
	if err != nil {
		t.Fatal(err)
	}
	v, err := vessel.Load("../examples/" + dir + "/" + vesselFile)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := vessel.Build(context.Background(), v, vessel.BuildOptions{Registry: reg, Actions: []string{"FetchInvoices_Activity"}})
	if err != nil {
		t.Fatal(err)
	}
	return ts, reg
}

// newChat is a test model that answers every request with decision.
func newChat(t *testing.T, decision string) *llmtest.Server {
	return llmtest.New(t, llmtest.Fixed(decision))
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// runRequest runs a request in Temporal's test environment and fails the
// test on a workflow error.
func runRequest(t *testing.T, in Input, model string, acts *action.Registry) vessel.Result {
	t.Helper()
	res, err := execute(t, in, model, acts, &vessel.Loader{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// execute runs a request in Temporal's test environment: the model at
// model ("" for none), the actions acts, delegates loaded through loader.
func execute(t *testing.T, in Input, model string, acts *action.Registry, loader *vessel.Loader) (vessel.Result, error) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := s.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute}) // a busy machine may hold the workflow goroutine past the 1 s default
	if acts == nil {
		acts = &action.Registry{}
	}
	acti := &durable.Activities{Actions: acts, Logger: quiet()}
	if model != "" {
		acti.Provider = openai.New(openai.Options{Model: "m", BaseURL: model, APIKey: "k"})
	}
	registerIn(env, acti, &Activities{Loader: loader})
	req, err := vessel.NewRequest(in.Toolset, in.Context, vessel.RequestOptions{Prompt: in.Prompt, Decision: in.Decision, MaxDepth: in.MaxDepth, MaxFanOut: in.MaxFanOut})
	if err != nil {
		return vessel.Result{}, err
	}
	env.ExecuteWorkflow(WorkflowName, req)
	var res vessel.Result
	err = env.GetWorkflowResult(&res)
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
	// Each instance's messages are in the context once, and its id once
	// more in the schema's enum of the instances a call may target.
	sent := parseChat(t, model.Bodies()[0])
	context := strings.Join(sent.Context, "\n")
	for i := 1; i <= 100; i++ {
		id := fmt.Sprintf("c%03d", i)
		if n := strings.Count(context, id); n != 1 {
			t.Errorf("instance %s appears %d times in the context, want once", id, n)
		}
		if n := strings.Count(model.Bodies()[0], id); n != 2 {
			t.Errorf("instance %s appears %d times in the request, want twice (its message, the schema's enum)", id, n)
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
// changes employee_B's state only; employee_A "remains untouched" (seed
// 002). The follow-up that asks about A tells the model that no call is
// an answer — A needs nothing — and the model, which does what it is told
// (and acts on A when only pushed to decide for it), makes none.
func TestManagerEmployees(t *testing.T) {
	ts, _ := example(t, "manager-employees", "manager.vessel.json")
	ctx, err := schema.ReadFile("../examples/manager-employees/context.json")
	if err != nil {
		t.Fatal(err)
	}
	model := llmtest.NewWith(t, func(name, body string) string {
		if strings.Contains(body, "Your decision made no call for") {
			if strings.Contains(lastUser(t, body), "An instance that needs nothing gets no call") {
				return `{"_reasoning":"A keeps its task","calls":[]}`
			}
			// Pushed to decide for A, with nothing said of answering nothing.
			return `{"_reasoning":"A must get something","calls":[{"_tool":"updateTask","_instance":"employee_A","newTask":"Draft initial proposal","newStatus":"Reviewed","output":"†state"}]}`
		}
		return `{"_reasoning":"B gets the report","calls":[{"_tool":"updateTask","_instance":"employee_B","newTask":"Finalize the quarterly report","newStatus":"High Priority","output":"†state"}]}`
	})
	res := runRequest(t, Input{Toolset: ts, Context: ctx}, model.URL, nil)
	if strings.Join(res.Unanswered, ",") != "employee_A" || len(res.FollowUps) != 1 {
		t.Errorf("unanswered %v after %d follow-ups: A is asked about once and needs nothing", res.Unanswered, len(res.FollowUps))
	}
	if sys := parseChat(t, model.Bodies()[0]).System; !strings.Contains(sys, "An instance that needs nothing gets no call") {
		t.Errorf("the system text does not say that an instance may need nothing:\n%s", sys)
	}
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
	ts := &vessel.Toolset{Vessel: "t", Tools: []*vessel.Tool{{Name: "note", Kind: vessel.Instruction, Schema: mustJSON(t, `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)}}}
	ctx := mustJSON(t, `[
		{"type":"state","_instance":"A","secret":"a-secret","n":"1"},
		{"type":"state","_instance":"B","secret":"b-secret","onlyB":"b"}]`)
	decision := mustJSON(t, `{"calls":[
		{"_tool":"note","_instance":"A","text":"†state.secret","_outputPath":"state.copy"},
		{"_tool":"note","_instance":"B","text":"†state.secret","_outputPath":"state.copy"},
		{"_tool":"note","_instance":"A","text":"†state.onlyB","_outputPath":"state.leak"}]}`)
	_, err := execute(t, Input{Toolset: ts, Context: ctx, Decision: decision}, "", nil, &vessel.Loader{})
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
	ts := &vessel.Toolset{Vessel: "t", Tools: []*vessel.Tool{
		{Name: "lookup", Kind: vessel.Instruction, Schema: mustJSON(t, `{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`)},
		{Name: "greet", Kind: vessel.Action, Action: "greet", Schema: mustJSON(t, `{"type":"object","properties":{"who":{"type":"object"}},"required":["who"]}`)},
		{Name: "log", Kind: vessel.Instruction, Schema: mustJSON(t, `{"type":"object","properties":{"msg":{"type":"string"}},"required":["msg"]}`)},
	}}
	ctx := mustJSON(t, `[
		{"type":"state","_instance":"u1","userId":"42"},
		{"type":"state","_instance":"u2","userId":"43"},
		{"type":"plan","calls":[
			{"_tool":"lookup","id":"†state.userId","_outputPath":"state.user"},
			{"_tool":"greet","who":"†state.user","_outputPath":"state.greeting"},
			{"_tool":"log","msg":"started"}]}]`)
	var acts action.Registry
	acts.Register(action.Action{Name: "greet", Run: func(ctx context.Context, in jsonv.Value) (jsonv.Value, error) {
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
	calls, _ := vessel.ParseCalls("p", "", ctx.Array()[2].Lookup("calls"))
	expanded, _ := vessel.Expand(calls, []string{"u1", "u2"})
	layers := vessel.NewGraph(expanded).Layers()
	if fmt.Sprint(layers) != "[[0 2 3 5] [1 4]]" {
		t.Errorf("layers %v: lookups and logs first, in parallel; greets after their lookup", layers)
	}
}

// newChatByName is a test model that answers by schema name.
func newChatByName(t *testing.T, answers map[string]string) *llmtest.Server {
	return llmtest.New(t, llmtest.ByName(answers))
}

// chat is one request as the test model received it.
type chat struct {
	Name    string
	System  string
	Context []string // the context messages, one JSON text each
	Body    string
}

func parseChat(t *testing.T, body string) chat {
	t.Helper()
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
		ResponseFormat struct {
			JSONSchema struct{ Name string } `json:"json_schema"`
		} `json:"response_format"`
	}
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatal(err)
	}
	c := chat{Name: req.ResponseFormat.JSONSchema.Name, Body: body}
	for _, m := range req.Messages {
		switch m.Role {
		case "system":
			c.System = m.Content
		case "user":
			if c.Context != nil {
				continue // a repair turn
			}
			_, rest, ok := strings.Cut(m.Content, "--- Context ---\n")
			if !ok {
				t.Fatalf("no context in %q", m.Content)
			}
			rest, _, _ = strings.Cut(rest, "--- End of context ---")
			c.Context = strings.Split(strings.TrimSuffix(rest, "\n"), "\n")
		}
	}
	return c
}

// chats returns the requests the test model received.
func chats(t *testing.T, model *llmtest.Server) []chat {
	var out []chat
	for _, b := range model.Bodies() {
		out = append(out, parseChat(t, b))
	}
	return out
}

// runDelegating runs a request with model (nil for none) and delegates
// loaded through loader.
func runDelegating(t *testing.T, in Input, model *llmtest.Server, loader *vessel.Loader) (vessel.Result, error) {
	t.Helper()
	url := ""
	if model != nil {
		url = model.URL
	}
	return execute(t, in, url, nil, loader)
}

// writeFiles writes files (path → content) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// buildVessel loads and builds the Vessel file with the registry at reg.
func buildVessel(t *testing.T, file, reg string, loader *vessel.Loader) *vessel.Toolset {
	t.Helper()
	r, err := registry.Open(reg)
	if err != nil {
		t.Fatal(err)
	}
	v, err := vessel.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if loader != nil && loader.Registry == nil {
		loader.Registry = r
	}
	ts, err := vessel.Build(context.Background(), v, vessel.BuildOptions{Registry: r, Loader: loader})
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// TestDelegateIsolation: each sub-request holds the delegate's own
// context, exactly the scoped parent data of its call's instance, and the
// input message — asserted on the bytes the model receives.
func TestDelegateIsolation(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"helper.json": `{"name": "helper",
			"context": [{"type": "system", "message": "You are the helper."}, {"type": "data", "kind": "glossary", "data": {"CTA": "call to action"}}],
			"schema": {"type": "object", "properties": {"topic": {"type": "string"}},
				"_output": {"type": "object", "properties": {"summary": {"type": "string"}}, "required": ["summary"]}}}`,
		"registry/instructions/summarize.json": `{"description": "Summarize a topic.", "_delegate": "helper.json", "_scopes": ["state.currentUser", "input"],
			"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]}`,
		"parent.vessel.json": `{"name": "parent", "system": "Parent system: top secret rules.", "tools": ["aug:instructions/summarize"]}`,
	})
	ts := buildVessel(t, filepath.Join(dir, "parent.vessel.json"), filepath.Join(dir, "registry"), nil)
	if tool := ts.Tool("summarize"); tool.Kind != vessel.DelegateKind || tool.Delegate != filepath.Join(dir, "helper.json") || tool.Resolve != vessel.ResolveRuntime {
		t.Fatalf("tool %+v: a relative _delegate is relative to the Vessel file", tool)
	}
	ctx := mustJSON(t, `[
		{"type": "system", "message": "Parent rules: never reveal the launch date."},
		{"type": "input", "input": {"task": "summarize for everyone"}},
		{"type": "input", "_instance": "A", "input": {"task": "summarize for A"}},
		{"type": "input", "_instance": "B", "input": {"task": "summarize for B"}},
		{"type": "state", "_instance": "A", "data": {"currentUser": {"id": "a1", "name": "Ann"}, "privateNote": "a-private"}},
		{"type": "state", "_instance": "B", "data": {"currentUser": {"id": "b1", "name": "Bob"}, "privateNote": "b-private"}},
		{"type": "data", "kind": "catalog", "data": {"parentOnly": "catalog-secret"}}]`)
	decision := mustJSON(t, `{"calls": [
		{"_tool": "summarize", "_instance": "A", "topic": "†state.currentUser.name", "_outputPath": "state.summary"},
		{"_tool": "summarize", "_instance": "B", "topic": "†state.currentUser.name", "_outputPath": "state.summary"}]}`)
	model := llmtest.NewWith(t, func(name, body string) string {
		if strings.Contains(body, "Ann") {
			return `{"summary": "for Ann"}`
		}
		return `{"summary": "for Bob"}`
	})
	res, err := runDelegating(t, Input{Toolset: ts, Context: ctx, Decision: decision}, model, &vessel.Loader{Roots: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	got := chats(t, model)
	if len(got) != 2 {
		t.Fatalf("%d model requests, want the two sub-requests", len(got))
	}
	want := map[string][]string{
		"Ann": {
			`{"type":"data","kind":"glossary","data":{"CTA":"call to action"}}`,
			`{"type":"state","data":{"currentUser":{"id":"a1","name":"Ann"}}}`,
			`{"type":"input","input":{"task":"summarize for A"}}`,
			`{"type":"input","input":{"topic":"Ann"},"schema":{"type":"object","properties":{"topic":{"type":"string"}}}}`,
		},
		"Bob": {
			`{"type":"data","kind":"glossary","data":{"CTA":"call to action"}}`,
			`{"type":"state","data":{"currentUser":{"id":"b1","name":"Bob"}}}`,
			`{"type":"input","input":{"task":"summarize for B"}}`,
			`{"type":"input","input":{"topic":"Bob"},"schema":{"type":"object","properties":{"topic":{"type":"string"}}}}`,
		},
	}
	for _, c := range got {
		who := "Bob"
		if strings.Contains(c.Body, "Ann") {
			who = "Ann"
		}
		if !slices.Equal(c.Context, want[who]) {
			t.Errorf("%s's sub-request context:\n%s\nwant\n%s", who, strings.Join(c.Context, "\n"), strings.Join(want[who], "\n"))
		}
		if !strings.HasPrefix(c.System, "You are the helper.\n\n") {
			t.Errorf("system %q: the delegate's own", c.System)
		}
		other := map[string][]string{"Ann": {"Bob", "b1", "b-private", "for B"}, "Bob": {"Ann", "a1", "a-private", "for A"}}[who]
		for _, leak := range append(other, "privateNote", "catalog-secret", "launch date", "top secret", "everyone") {
			if strings.Contains(c.Body, leak) {
				t.Errorf("%s's sub-request carries %q of the parent", who, leak)
			}
		}
	}
	for inst, want := range map[string]string{"A": `{"summary":"for Ann"}`, "B": `{"summary":"for Bob"}`} {
		if got := string(jsonv.Marshal(res.States[inst].Lookup("summary"))); got != want {
			t.Errorf("%s's summary %s, want %s", inst, got, want)
		}
	}
	if res.Calls[0].Run == "" || res.Calls[0].Run == res.Calls[1].Run {
		t.Errorf("sub-request runs %q, %q", res.Calls[0].Run, res.Calls[1].Run)
	}
	if res.Usage.PromptTokens != 200 {
		t.Errorf("usage %+v: the sub-requests' is the request's", res.Usage)
	}
}

// TestSpeakerEN is seed 004's speaker_EN: the caller's userId/text go to a
// delegate that expects recipientId/messageBody, as they are; the
// delegate's model bridges the gap.
func TestSpeakerEN(t *testing.T) {
	ts, reg := example(t, "speaker", "orchestrator.vessel.json")
	acts := &Activities{Loader: &vessel.Loader{Registry: reg}}
	out, err := acts.Delegate(context.Background(), DelegateInput{
		Call: &vessel.Call{Tool: "sendMessage"}, Params: mustJSON(t, `{"userId": "u_123", "text": "Hello, world!"}`), Tool: ts.Tool("sendMessage")})
	if err != nil {
		t.Fatal(err)
	}
	// The sub-request's context as seed 004 prints it.
	seed := mustJSON(t, `[
		{"type": "system", "message": "Вы — эксперт по обмену сообщениями на английском языке."},
		{"type": "input",
		 "input": {"userId": "u_123", "text": "Hello, world!"},
		 "schema": {"type": "object", "properties": {"recipientId": {"type": "string"}, "messageBody": {"type": "string"}}}}]`)
	if got, want := string(jsonv.Marshal(out.Request.ContextValue())), string(jsonv.Marshal(seed)); got != want {
		t.Errorf("sub-request context\n%s\nwant seed 004's\n%s", got, want)
	}

	model := llmtest.New(t, llmtest.Fixed(`{"recipientId": "u_123", "messageBody": "Hello, world!"}`))
	decision := mustJSON(t, `{"calls": [{"_tool": "sendMessage", "userId": "u_123", "text": "Hello, world!"}]}`)
	res, err := runDelegating(t, Input{Toolset: ts, Context: jsonv.ArrayValue(), Decision: decision}, model, acts.Loader)
	if err != nil {
		t.Fatal(err)
	}
	c := chats(t, model)
	if len(c) != 1 {
		t.Fatalf("%d requests", len(c))
	}
	if want := `{"type":"input","input":{"userId":"u_123","text":"Hello, world!"},"schema":{"type":"object","properties":{"recipientId":{"type":"string"},"messageBody":{"type":"string"}}}}`; !slices.Equal(c[0].Context, []string{want}) {
		t.Errorf("context %q", c[0].Context)
	}
	if !strings.HasPrefix(c[0].System, "Вы — эксперт по обмену сообщениями на английском языке.") {
		t.Errorf("system %q", c[0].System)
	}
	// A delegate without tools fills its _output: it is not told to answer
	// a decision, nor of calls it has none of.
	if strings.Contains(c[0].System, `"_reasoning"`) || strings.Contains(c[0].System, "calls") || !strings.Contains(c[0].System, `fills the given schema (your "_output")`) {
		t.Errorf("the delegate is told:\n%s", c[0].System)
	}
	if got := string(jsonv.Marshal(res.Calls[0].Result)); got != `{"recipientId":"u_123","messageBody":"Hello, world!"}` || res.Calls[0].Error != "" {
		t.Errorf("result %s %s", got, res.Calls[0].Error)
	}
}

// storedRequests serves stored Requests over HTTP; the documents can be
// changed while it runs.
type storedRequests struct {
	mu   sync.Mutex
	docs map[string]string
	hits atomic.Int32
}

func (s *storedRequests) set(path, doc string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.docs[path] = doc
}

func (s *storedRequests) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.hits.Add(1)
	s.mu.Lock()
	doc, ok := s.docs[r.URL.Path]
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(doc))
}

func serveRequests(t *testing.T) (*storedRequests, *httptest.Server) {
	s := &storedRequests{docs: map[string]string{}}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv
}

// TestAheadOfTimeContract: the contract is the _output the delegate had
// when the toolset was built; a result that breaks it — here because the
// stored Request changed since — is the call's error, naming the path.
func TestAheadOfTimeContract(t *testing.T) {
	docs, srv := serveRequests(t)
	docs.set("/agents/speaker_EN", speakerDoc)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"registry/instructions/send.json": `{"_delegate": "` + srv.URL + `/agents/speaker_EN", "_resolve": "ahead", "type": "object"}`,
		"v.vessel.json":                   `{"name": "v", "tools": ["aug:instructions/send"]}`,
	})
	loader := &vessel.Loader{Allow: []string{srv.Listener.Addr().String()}}
	ts := buildVessel(t, filepath.Join(dir, "v.vessel.json"), filepath.Join(dir, "registry"), loader)
	if got := schema.Properties(ts.Tool("send").Schema).Names(); !slices.Equal(got, []string{"recipientId", "messageBody"}) {
		t.Fatalf("parameters %v", got)
	}
	// The stored Request changes: messageBody is now a number.
	docs.set("/agents/speaker_EN", strings.Replace(speakerDoc, `"messageBody": {"type": "string"}}, "required"`, `"messageBody": {"type": "integer"}}, "required"`, 1))
	model := llmtest.New(t, llmtest.Fixed(`{"recipientId": "u_1", "messageBody": 7}`))
	decision := mustJSON(t, `{"calls": [{"_tool": "send", "recipientId": "u_1", "messageBody": "hi"}]}`)
	res, err := runDelegating(t, Input{Toolset: ts, Context: jsonv.ArrayValue(), Decision: decision}, model, loader)
	if err != nil {
		t.Fatal(err)
	}
	if e := res.Calls[0].Error; !strings.Contains(e, "the result breaks its _output") || !strings.Contains(e, "/messageBody") {
		t.Errorf("error %q: want the contract broken at /messageBody", e)
	}

	// A delegate's model that keeps answering against its own _output
	// fails the call with the validation errors by path.
	docs.set("/agents/speaker_EN", speakerDoc)
	bad := llmtest.New(t, llmtest.Fixed(`{"recipientId": "u_1"}`))
	res, err = runDelegating(t, Input{Toolset: ts, Context: jsonv.ArrayValue(), Decision: decision}, bad, loader)
	if err != nil {
		t.Fatal(err)
	}
	if e := res.Calls[0].Error; !strings.Contains(e, "messageBody") {
		t.Errorf("error %q: want the missing messageBody", e)
	}
}

// TestAllowList: a delegate URL loads only from an allowed host, within
// the size limit.
func TestAllowList(t *testing.T) {
	docs, srv := serveRequests(t)
	docs.set("/agents/speaker_EN", speakerDoc)
	url := srv.URL + "/agents/speaker_EN"
	ctx := context.Background()

	_, err := (&vessel.Loader{}).Load(ctx, url)
	if !errors.Is(err, vessel.ErrNotAllowed) || !strings.Contains(err.Error(), "only hosts on the allow-list") {
		t.Errorf("no allow-list: %v", err)
	}
	_, err = (&vessel.Loader{Allow: []string{"example.com"}}).Load(ctx, url)
	if !errors.Is(err, vessel.ErrNotAllowed) {
		t.Errorf("another host allowed: %v", err)
	}
	if docs.hits.Load() != 0 {
		t.Errorf("%d fetches from a host not allowed", docs.hits.Load())
	}
	d, err := (&vessel.Loader{Allow: []string{"127.0.0.1"}}).Load(ctx, url)
	if err != nil || d.Name != "speaker_EN" || d.ID != url {
		t.Fatalf("allowed: %+v %v", d, err)
	}
	if _, err := (&vessel.Loader{Allow: []string{"127.0.0.1"}, MaxBytes: 64}).Load(ctx, url); err == nil || !strings.Contains(err.Error(), "larger than the limit of 64 bytes") {
		t.Errorf("size limit: %v", err)
	}
	if _, err := (&vessel.Loader{Allow: []string{"127.0.0.1"}}).Load(ctx, srv.URL+"/agents/nobody"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("missing: %v", err)
	}

	// A redirect from an allowed host to another is refused.
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("fetched from a host not allowed, through a redirect")
	}))
	defer other.Close()
	jump := httptest.NewServer(http.RedirectHandler(other.URL+"/agents/speaker_EN", http.StatusFound))
	defer jump.Close()
	if _, err := (&vessel.Loader{Allow: []string{jump.Listener.Addr().String()}}).Load(ctx, jump.URL+"/x"); !errors.Is(err, vessel.ErrNotAllowed) || !strings.Contains(err.Error(), "redirected to host "+other.Listener.Addr().String()) {
		t.Errorf("redirect: %v", err)
	}

	// At run time, a call to a delegate on a host not allowed fails with
	// the reason, and nothing is fetched.
	ts := &vessel.Toolset{Vessel: "v", Tools: []*vessel.Tool{{Name: "send", Kind: vessel.DelegateKind, Delegate: url, Resolve: vessel.ResolveRuntime, Schema: mustJSON(t, `{"type":"object"}`)}}}
	res, err := runDelegating(t, Input{Toolset: ts, Context: jsonv.ArrayValue(), Decision: mustJSON(t, `{"calls":[{"_tool":"send","text":"hi"}]}`)}, nil, &vessel.Loader{})
	if err != nil {
		t.Fatal(err)
	}
	if e := res.Calls[0].Error; !strings.Contains(e, "is not allowed") {
		t.Errorf("call error %q", e)
	}
	if docs.hits.Load() != 3 {
		t.Errorf("%d fetches, want the 3 allowed ones", docs.hits.Load())
	}
}

// musicModel answers the producer, the composer and the sound engineer by
// their system text. The composer decides only once the producer's direct
// call to the sound engineer has arrived, so the two run in parallel or
// not at all.
func musicModel(t *testing.T, parallel bool) *llmtest.Server {
	direct := make(chan struct{})
	var once sync.Once
	if !parallel {
		close(direct)
		once.Do(func() {})
	}
	return llmtest.NewWith(t, func(name, body string) string {
		c := parseChat(t, body)
		switch {
		case strings.Contains(c.System, "record producer"):
			return `{"_reasoning": "a song, and rain for the intro", "calls": [
				{"_tool": "compose", "brief": "a rainy-day ballad"},
				{"_tool": "synthesize", "sound": "rain on a window", "seconds": 30}]}`
		case strings.Contains(c.System, "You are a composer") && name == "decision":
			select {
			case <-direct:
			case <-time.After(10 * time.Second):
				return `{"_reasoning": "the producer's direct call never ran beside me", "calls": []}`
			}
			return `{"_reasoning": "a pad under the verse", "calls": [{"_tool": "synthesize", "sound": "warm pad", "seconds": 8}]}`
		case strings.Contains(c.System, "You are a composer"):
			return `{"title": "Rain Ballad", "key": "D minor", "structure": ["verse", "chorus", "verse"], "melody": "D F A G F E D"}`
		case strings.Contains(c.System, "sound engineer") && strings.Contains(body, "rain on a window"):
			once.Do(func() { close(direct) })
			return `{"_physics": "many short broadband impulses", "patch": {"oscillator": "noise", "cutoffHz": 4000, "attackMs": 1, "releaseMs": 40}, "notes": "random retrigger"}`
		case strings.Contains(c.System, "sound engineer"):
			return `{"_physics": "detuned harmonics, slow swell", "patch": {"oscillator": "saw", "cutoffHz": 1200, "attackMs": 400, "releaseMs": 900}, "notes": "chorus on"}`
		}
		return `{}`
	})
}

func musicRequest(t *testing.T) (Input, *vessel.Loader) {
	ts, reg := example(t, "music", "producer.vessel.json")
	return Input{Toolset: ts, Context: mustJSON(t, `[{"type": "input", "input": {"album": "Autumn"}}]`), Prompt: "Make the album's first track."}, &vessel.Loader{Registry: reg}
}

// TestMusicNested: a decision that only composes runs Producer → Composer
// → Sound engineer, three levels, the composer's song filled with the
// engineer's patch in view.
func TestMusicNested(t *testing.T) {
	in, loader := musicRequest(t)
	in.Decision = mustJSON(t, `{"calls": [{"_tool": "compose", "brief": "a rainy-day ballad"}]}`)
	model := musicModel(t, false)
	res, err := runDelegating(t, in, model, loader)
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Calls[0]; c.Error != "" || c.Result.Lookup("title").Str() != "Rain Ballad" {
		t.Fatalf("compose: %+v", c)
	}
	var order []string
	for _, c := range chats(t, model) {
		switch {
		case strings.Contains(c.System, "You are a composer"):
			order = append(order, "composer "+c.Name)
			if c.Name == "output" && !strings.Contains(c.Body, `\"oscillator\":\"saw\"`) {
				t.Error("the composer's song was filled without the engineer's patch")
			}
		case strings.Contains(c.System, "sound engineer"):
			order = append(order, "sound engineer "+c.Name)
		}
	}
	if want := []string{"composer decision", "sound engineer output", "composer output"}; !slices.Equal(order, want) {
		t.Errorf("requests %v, want %v", order, want)
	}
}

// TestMusic: in another decision, Producer → Composer → Sound engineer
// runs beside, and in parallel with, the producer's direct call to the
// sound engineer.
func TestMusic(t *testing.T) {
	in, loader := musicRequest(t)
	model := musicModel(t, true)
	res, err := runDelegating(t, in, model, loader)
	if err != nil {
		t.Fatal(err)
	}
	calls, _ := vessel.ParseCalls("d", "/calls", res.Decision.Lookup("calls"))
	if layers := vessel.NewGraph(calls).Layers(); len(layers) != 1 || len(layers[0]) != 2 {
		t.Errorf("layers %v: compose and synthesize are independent", layers)
	}
	for _, c := range res.Calls {
		if c.Error != "" {
			t.Fatalf("call %s: %s", c.Tool, c.Error)
		}
	}
	if got := string(jsonv.Marshal(res.Calls[0].Result)); got != `{"title":"Rain Ballad","key":"D minor","structure":["verse","chorus","verse"],"melody":"D F A G F E D"}` {
		t.Errorf("compose gave %s", got)
	}
	if got := string(jsonv.Marshal(res.Calls[1].Result)); got != `{"patch":{"oscillator":"noise","cutoffHz":4000,"attackMs":1,"releaseMs":40},"notes":"random retrigger"}` {
		t.Errorf("synthesize gave %s (thinking split off)", got)
	}
	// Who asked what: the producer once; the composer decided, then filled
	// its song with the sound engineer's patch in view; the sound
	// engineer twice.
	var composerOut *chat
	count := map[string]int{}
	for _, c := range chats(t, model) {
		switch {
		case strings.Contains(c.System, "record producer"):
			count["producer"]++
		case strings.Contains(c.System, "You are a composer"):
			count["composer "+c.Name]++
			if c.Name == "output" {
				composerOut = &c
			}
		case strings.Contains(c.System, "sound engineer"):
			count["sound engineer"]++
			if strings.Contains(c.Body, "Autumn") {
				t.Error("the sound engineer saw the producer's input: it is not in its scopes")
			}
		}
	}
	if want := map[string]int{"producer": 1, "composer decision": 1, "composer output": 1, "sound engineer": 2}; !mapsEqual(count, want) {
		t.Errorf("requests %v, want %v", count, want)
	}
	if composerOut == nil || !strings.Contains(composerOut.Body, `\"oscillator\":\"saw\"`) || !strings.Contains(composerOut.Body, `Autumn`) {
		t.Errorf("the composer filled its song without the pad's patch or the album's input (scoped):\n%v", composerOut)
	}
	if res.Usage.PromptTokens != 500 {
		t.Errorf("usage %+v: five model calls in the tree", res.Usage)
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestDepthBound: with a bound of one level the producer's direct call
// runs and the composer's own call to the sound engineer is refused.
func TestDepthBound(t *testing.T) {
	in, loader := musicRequest(t)
	in.MaxDepth = 1
	model := musicModel(t, true)
	res, err := runDelegating(t, in, model, loader)
	if err != nil {
		t.Fatal(err)
	}
	if res.Calls[0].Error != "" || res.Calls[1].Error != "" {
		t.Fatalf("calls %+v", res.Calls)
	}
	var refused bool
	for _, c := range chats(t, model) {
		if strings.Contains(c.System, "You are a composer") && c.Name == "output" {
			refused = strings.Contains(c.Body, `would nest 2 deep, over the bound of 1 (aug:requests/composer → `)
		}
	}
	if !refused {
		t.Error("the composer's results do not show its call refused by the depth bound")
	}
}

// TestDelegateCycle: A delegates to B, B back to A — refused, naming the
// chain.
func TestDelegateCycle(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"registry/requests/a.json":        `{"context": [{"type": "system", "message": "You are A."}], "tools": ["aug:instructions/askB"]}`,
		"registry/requests/b.json":        `{"context": [{"type": "system", "message": "You are B."}], "tools": ["aug:instructions/askA"]}`,
		"registry/instructions/askA.json": `{"_delegate": "aug:requests/a", "type": "object", "properties": {"q": {"type": "string"}}}`,
		"registry/instructions/askB.json": `{"_delegate": "aug:requests/b", "type": "object", "properties": {"q": {"type": "string"}}}`,
		"root.vessel.json":                `{"name": "root", "tools": ["aug:instructions/askA"]}`,
	})
	loader := &vessel.Loader{}
	ts := buildVessel(t, filepath.Join(dir, "root.vessel.json"), filepath.Join(dir, "registry"), loader)
	model := llmtest.NewWith(t, func(name, body string) string {
		switch c := parseChat(t, body); {
		case name == "output":
			return `{"answer": "done"}`
		case strings.HasPrefix(c.System, "You are A."):
			return `{"_reasoning": "ask B", "calls": [{"_tool": "askB", "q": "?"}]}`
		default:
			return `{"_reasoning": "ask A", "calls": [{"_tool": "askA", "q": "?"}]}`
		}
	})
	res, err := runDelegating(t, Input{Toolset: ts, Context: jsonv.ArrayValue(), Decision: mustJSON(t, `{"calls": [{"_tool": "askA", "q": "?"}]}`)}, model, loader)
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, c := range chats(t, model) {
		if strings.HasPrefix(c.System, "You are B.") && c.Name == "output" {
			found = strings.Contains(c.Body, "delegate cycle: aug:requests/a → aug:requests/b → aug:requests/a")
		}
	}
	if !found {
		t.Errorf("B's askA call was not refused as a cycle; requests:\n%s", strings.Join(model.Bodies(), "\n"))
	}
	if res.Calls[0].Error != "" {
		t.Errorf("the root's call to A: %s", res.Calls[0].Error)
	}
}

// TestFanOutBound: a request may make at most MaxFanOut delegate calls.
func TestFanOutBound(t *testing.T) {
	in, loader := musicRequest(t)
	in.MaxFanOut = 1
	in.Decision = mustJSON(t, `{"calls": [{"_tool": "synthesize", "sound": "a", "seconds": 1}, {"_tool": "synthesize", "sound": "b", "seconds": 1}]}`)
	_, err := runDelegating(t, in, nil, loader)
	if err == nil || !strings.Contains(err.Error(), "the request makes 2 delegate calls; at most 1 may run from one request (fan-out bound)") {
		t.Errorf("err = %v", err)
	}
}

// TestAnonymous: an anonymous delegate starts from an empty context: only
// the input message, with the tool's own schema.
func TestAnonymous(t *testing.T) {
	ts := &vessel.Toolset{Vessel: "v", Tools: []*vessel.Tool{{Name: "translate", Kind: vessel.DelegateKind, Delegate: vessel.Anonymous, Resolve: vessel.ResolveRuntime,
		Schema: mustJSON(t, `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)}}}
	model := llmtest.New(t, llmtest.Fixed(`{"french": "bonjour"}`))
	ctx := mustJSON(t, `[{"type": "system", "message": "Parent secret"}, {"type": "state", "data": {"k": "state secret"}}]`)
	res, err := runDelegating(t, Input{Toolset: ts, Context: ctx, Decision: mustJSON(t, `{"calls":[{"_tool":"translate","text":"hello"}]}`)}, model, &vessel.Loader{})
	if err != nil {
		t.Fatal(err)
	}
	c := chats(t, model)
	if len(c) != 1 || !slices.Equal(c[0].Context, []string{`{"type":"input","input":{"text":"hello"},"schema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}`}) {
		t.Fatalf("sub-request %+v", c)
	}
	if strings.Contains(c[0].Body, "secret") {
		t.Error("the anonymous delegate saw the parent")
	}
	if got := string(jsonv.Marshal(res.Calls[0].Result)); got != `{"french":"bonjour"}` {
		t.Errorf("result %s", got)
	}
}

// TestAheadOfTimeThinking: the contract binds the result the caller gets:
// the delegate's thinking fields, required of its model, are split off
// and not required of the result.
func TestAheadOfTimeThinking(t *testing.T) {
	engineer, err := filepath.Abs("../examples/music/registry/requests/sound-engineer.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"registry/instructions/synth.json": `{"_delegate": "` + engineer + `", "_resolve": "ahead", "type": "object"}`,
		"v.vessel.json":                    `{"name": "v", "tools": ["aug:instructions/synth"]}`,
	})
	loader := &vessel.Loader{Roots: []string{filepath.Dir(engineer)}} // the delegate lies outside the Vessel's directory
	ts := buildVessel(t, filepath.Join(dir, "v.vessel.json"), filepath.Join(dir, "registry"), loader)
	if got := schema.Properties(ts.Tool("synth").Schema).Names(); !slices.Equal(got, []string{"sound", "seconds"}) {
		t.Fatalf("parameters %v", got)
	}
	model := llmtest.New(t, llmtest.Fixed(`{"_physics": "a sine", "patch": {"oscillator": "sine", "cutoffHz": 800, "attackMs": 5, "releaseMs": 50}, "notes": "clean"}`))
	res, err := runDelegating(t, Input{Toolset: ts, Context: jsonv.ArrayValue(), Decision: mustJSON(t, `{"calls": [{"_tool": "synth", "sound": "beep", "seconds": 1}]}`)}, model, loader)
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Calls[0]; c.Error != "" || c.Result.Lookup("notes").Str() != "clean" {
		t.Errorf("call %+v", c)
	}
	if _, ok := res.Calls[0].Result.Get("_physics"); ok {
		t.Error("the delegate's thinking reached the caller")
	}
}

// TestDelegateFetchRetried: a stored Request whose host answers 503 once
// is fetched again; a 404 is not retried.
func TestDelegateFetchRetried(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/gone" {
			n.Add(100)
			http.NotFound(w, r)
			return
		}
		if n.Add(1) == 1 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte(speakerDoc))
	}))
	defer srv.Close()
	loader := &vessel.Loader{Allow: []string{srv.Listener.Addr().String()}}
	ts := &vessel.Toolset{Vessel: "v", Tools: []*vessel.Tool{
		{Name: "send", Kind: vessel.DelegateKind, Delegate: srv.URL + "/speaker", Resolve: vessel.ResolveRuntime, Schema: mustJSON(t, `{"type":"object"}`)},
		{Name: "gone", Kind: vessel.DelegateKind, Delegate: srv.URL + "/gone", Resolve: vessel.ResolveRuntime, Schema: mustJSON(t, `{"type":"object"}`)}}}
	model := llmtest.New(t, llmtest.Fixed(`{"recipientId": "u", "messageBody": "hi"}`))
	res, err := runDelegating(t, Input{Toolset: ts, Context: jsonv.ArrayValue(), Decision: mustJSON(t, `{"calls":[{"_tool":"send","text":"hi"}]}`)}, model, loader)
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Calls[0]; c.Error != "" || n.Load() != 2 {
		t.Errorf("call %+v after %d fetches, want success on the second", c, n.Load())
	}
	res, err = runDelegating(t, Input{Toolset: ts, Context: jsonv.ArrayValue(), Decision: mustJSON(t, `{"calls":[{"_tool":"gone"}]}`)}, model, loader)
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Calls[0]; !strings.Contains(c.Error, "404 Not Found") || n.Load() != 102 {
		t.Errorf("call %+v after %d fetches, want one 404", c, n.Load())
	}
}

const speakerDoc = `{"name": "speaker_EN", "context": [{"type": "system", "message": "You speak English."}],
	"schema": {"type": "object", "properties": {"recipientId": {"type": "string"}, "messageBody": {"type": "string"}},
		"_output": {"type": "object", "properties": {"recipientId": {"type": "string"}, "messageBody": {"type": "string"}}, "required": ["recipientId", "messageBody"]}}}`

// startScheduling is seed 001's composed StartProcess tool
// (examples/schedule-meeting/tool.json) listed as a Vessel's tool.
func startScheduling(t *testing.T) *vessel.Toolset {
	t.Helper()
	raw, err := os.ReadFile("../examples/schedule-meeting/tool.json")
	if err != nil {
		t.Fatal(err)
	}
	return schedulingTool(t, string(raw))
}

// looseScheduling is a StartProcess tool written by hand whose
// fetchAvailability offers the model the emails that schedule-meeting's
// entry chunk requires, but does not require them itself: a call may fit
// the process or not, which only the call's check can tell.
func looseScheduling(t *testing.T) *vessel.Toolset {
	return schedulingTool(t, `{"type": "object", "properties": {
		"name": {"const": "ScheduleMeeting"},
		"llmContext1": {"type": "object", "properties": {
			"identifyParticipants": {"$ref": "aug:processes/schedule-meeting:2#identifyParticipants"},
			"fetchAvailability": {"type": "object", "properties": {
				"organizerId": {"type": "string"}, "attendeeId": {"type": "string"},
				"organizerEmail": {"type": "string"}, "attendeeEmail": {"type": "string"},
				"timeRange": {"$ref": "aug:processes/schedule-meeting:2#/properties/llmContext1/properties/fetchAvailability/properties/timeRange"}},
				"required": ["timeRange"]}},
			"required": ["identifyParticipants", "fetchAvailability"]}},
		"required": ["name", "llmContext1"]}`)
}

// schedulingTool is the toolset of a Vessel whose one tool,
// aug:tools/startScheduling, is doc, over the schedule-meeting registry.
func schedulingTool(t *testing.T, doc string) *vessel.Toolset {
	t.Helper()
	reg, err := registry.Open("../examples/schedule-meeting/registry")
	if err != nil {
		t.Fatal(err)
	}
	tool, err := schema.Parse("tool.json", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Add("aug:tools/startScheduling", tool); err != nil {
		t.Fatal(err)
	}
	v := &vessel.Vessel{Name: "scheduler", Tools: []string{"aug:tools/startScheduling"}, File: "scheduler.vessel.json"}
	ts, err := vessel.Build(context.Background(), v, vessel.BuildOptions{Registry: reg, Actions: []string{"FetchAvailability_Activity", "sendInvitation"}})
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// llmContext1 as looseScheduling lets a model fill it — with the ids of
// schedule-meeting@1, without the emails — and as the process takes it.
const (
	entryAsTool = `{
		"_considerations": "Alice and Bob, working hours", "_previousAttempt": "первая попытка", "_loopDone": true,
		"identifyParticipants": {"organizer": "alice@example.com", "attendee": "bob@example.com"},
		"fetchAvailability": {"organizerId": "alice@example.com", "attendeeId": "bob@example.com", "timeRange": {"start": "2024-03-20T09:00:00Z", "end": "2024-03-20T17:00:00Z"}},
		"_feedback": "ready"}`
	entryAsProcess = `{
		"_considerations": "Alice and Bob, working hours", "_previousAttempt": "первая попытка", "_loopDone": true,
		"identifyParticipants": {"organizer": "alice@example.com", "attendee": "bob@example.com"},
		"fetchAvailability": {"organizerId": "alice@example.com", "attendeeId": "bob@example.com", "organizerEmail": "alice@example.com", "attendeeEmail": "bob@example.com",
			"timeRange": {"start": "2024-03-20T09:00:00Z", "end": "2024-03-20T17:00:00Z"}},
		"_feedback": "ready"}`
)

// TestStartProcessTool: a StartProcess tool — the LaunchProcess macro
// filled by hand, {name: "ScheduleMeeting", llmContext1: …}, as seed 001
// composes one — listed as a Vessel tool launches schedule-meeting with the
// model's llmContext1 as its first chunk, like a "processes" entry; an
// llmContext1 the process's entry chunk does not take is refused before
// anything runs, naming the call's path. (A tool that can never fit is
// refused when the toolset is built: vessel TestHandMadeLaunches.)
func TestStartProcessTool(t *testing.T) {
	ts := looseScheduling(t)
	st := ts.Tool("startScheduling")
	if st == nil || st.Kind != vessel.Launch || st.Entry != "llmContext1" || st.ProcessName != "schedule-meeting" || st.Program == nil {
		t.Fatalf("tool %+v: a launch of schedule-meeting", st)
	}
	if got := schema.Properties(st.Schema).Names(); strings.Join(got, ",") != "name,llmContext1" {
		t.Errorf("the model sees %v: the seed's tool as composed", got)
	}
	decision := mustJSON(t, `{"calls": [{"_tool": "startScheduling", "name": "ScheduleMeeting", "llmContext1": `+entryAsTool+`}]}`)
	_, err := execute(t, Input{Toolset: ts, Context: jsonv.ArrayValue(), Decision: decision}, "", nil, &vessel.Loader{})
	if err == nil || !strings.Contains(err.Error(), "/calls/0/llmContext1/fetchAvailability: call 1 (startScheduling): the entry chunk does not fit process schedule-meeting's LLM_llmContext1: missing properties 'organizerEmail', 'attendeeEmail'") {
		t.Fatalf("err = %v, want the entry chunk refused", err)
	}
	// An entry read from state is checked once it holds a value.
	decision = mustJSON(t, `{"calls": [{"_tool": "startScheduling", "name": "ScheduleMeeting", "llmContext1": "†state.entry"}]}`)
	res := runRequest(t, Input{Toolset: ts, Context: mustJSON(t, `[{"type": "state", "data": {"entry": `+entryAsTool+`}}]`), Decision: decision}, "", nil)
	if c := res.Calls[0]; !strings.Contains(c.Error, "the entry chunk does not fit process schedule-meeting's LLM_llmContext1: /llmContext1/fetchAvailability: missing properties 'organizerEmail', 'attendeeEmail'") {
		t.Errorf("call %+v: the entry read from state is refused", c)
	}
	decision = mustJSON(t, `{"calls": [{"_tool": "startScheduling", "name": "ScheduleMeeting", "llmContext1": `+entryAsProcess+`}]}`)
	res = runRequest(t, Input{Toolset: ts, Context: jsonv.ArrayValue(), Decision: decision}, "", nil)
	if c := res.Calls[0]; c.Error != "" || c.Result.Lookup("process").Str() != "schedule-meeting" || !strings.HasPrefix(c.Result.Lookup("id").Str(), "schedule-meeting-") {
		t.Errorf("call %+v: the process is launched", c)
	}
}

// TestStartProcessToolRepair: a model that fills the
// hand-composed tool's llmContext1 in a way the process's entry chunk does
// not take is told so in a repair turn — the check POST /v1/processes
// answers 422 with — and the process is launched with its corrected answer.
func TestStartProcessToolRepair(t *testing.T) {
	ts := looseScheduling(t)
	model := scriptedDecisions(t,
		`{"_reasoning": "schedule", "calls": [{"_tool": "startScheduling", "name": "ScheduleMeeting", "llmContext1": `+entryAsTool+`}]}`,
		`{"_reasoning": "schedule", "calls": [{"_tool": "startScheduling", "name": "ScheduleMeeting", "llmContext1": `+entryAsProcess+`}]}`)
	res := runRequest(t, Input{Toolset: ts, Context: jsonv.ArrayValue(), Prompt: "Schedule a meeting between Alice and Bob."}, model.URL, nil)
	bodies := model.Bodies()
	if len(bodies) != 2 {
		t.Fatalf("%d model requests, want the decision and one repair turn", len(bodies))
	}
	if repair := lastUser(t, bodies[1]); !strings.Contains(repair, "/calls/0/llmContext1/fetchAvailability") || !strings.Contains(repair, "organizerEmail") {
		t.Errorf("the repair turn says:\n%s", repair)
	}
	c := res.Calls[0]
	if c.Error != "" || c.Result.Lookup("process").Str() != "schedule-meeting" {
		t.Fatalf("call %+v: the process is launched", c)
	}
	if got := c.Params.Lookup("llmContext1").Lookup("fetchAvailability").Lookup("organizerEmail").Str(); got != "alice@example.com" {
		t.Errorf("launched with organizerEmail %q", got)
	}
}

// TestFixedReferences (issue 26, 7): seed 003 lets a tool's author fix a
// call's variable references and _outputPath "for a reliable data flow".
// A parameter {"const": "†state.task"} is read from state, a fixed
// _outputPath is where the result goes, and the decision schema offers
// the model nothing to decide at either; a plan that leaves them out gets
// them.
func TestFixedReferences(t *testing.T) {
	ts := &vessel.Toolset{Vessel: "t", Tools: []*vessel.Tool{{Name: "review", Kind: vessel.Instruction, Schema: mustJSON(t, `{"type": "object", "properties": {
		"src": {"const": "†state.task", "description": "The task under review."},
		"verdict": {"type": "string"},
		"_outputPath": {"const": "state.review"}}, "required": ["src", "verdict"]}`)}}}
	call := ts.DecisionSchema(vessel.DecisionRules{Global: true}).Lookup("properties").Lookup("calls").Lookup("items").Lookup("anyOf").Array()[0]
	props := call.Lookup("properties")
	if got := string(jsonv.Marshal(props.Lookup("src"))); got != `{"const":"†state.task","description":"The task under review."}` {
		t.Errorf("src offers the model %s: the fixed reference, nothing else", got)
	}
	if got := string(jsonv.Marshal(props.Lookup("_outputPath"))); got != `{"const":"state.review"}` {
		t.Errorf("_outputPath offers the model %s: the fixed path, nothing else", got)
	}
	if got := string(jsonv.Marshal(props.Lookup("verdict"))); !strings.Contains(got, `"anyOf"`) {
		t.Errorf("verdict %s: a parameter not fixed may still be a reference", got)
	}
	if got := strings.Join(schema.Strings(call.Lookup("required")), ","); got != "_tool,src,verdict,_outputPath" {
		t.Errorf("required %s", got)
	}

	ctx := mustJSON(t, `[{"type": "state", "data": {"task": {"title": "Draft the proposal", "owner": "A"}}}]`)
	model := newChat(t, `{"_reasoning": "review it", "calls": [{"_tool": "review", "src": "†state.task", "verdict": "fine", "_outputPath": "state.review"}]}`)
	for name, in := range map[string]Input{
		"decided": {Toolset: ts, Context: ctx},
		"planned": {Toolset: ts, Context: mustJSON(t, `[{"type": "state", "data": {"task": {"title": "Draft the proposal", "owner": "A"}}},
			{"type": "plan", "calls": [{"_tool": "review", "verdict": "fine"}]}]`)},
	} {
		res := runRequest(t, in, model.URL, nil)
		if c := res.Calls[0]; c.Error != "" || c.Output != "state.review" {
			t.Fatalf("%s: call %+v", name, c)
		}
		if got := string(jsonv.Marshal(res.States[""].Lookup("review"))); got != `{"src":{"title":"Draft the proposal","owner":"A"},"verdict":"fine"}` {
			t.Errorf("%s: state.review %s: the task read from state, written where the tool says", name, got)
		}
	}
	// A plan may not write elsewhere.
	_, err := execute(t, Input{Toolset: ts, Context: mustJSON(t, `[{"type": "state", "data": {"task": "x"}},
		{"type": "plan", "calls": [{"_tool": "review", "verdict": "fine", "_outputPath": "state.other"}]}]`)}, "", nil, &vessel.Loader{})
	if err == nil || !strings.Contains(err.Error(), "/_outputPath") {
		t.Errorf("err = %v, want the fixed _outputPath named", err)
	}
}

// TestStartProcessToolLoop (issue 26, 3): seed 001 puts the Loop_Mixin
// ("Цикл не более 3 раз") around the StartProcess tool's llmContext1. A
// call the model does not mark done is asked again, with its previous
// attempt in view, as a process's looping chunk is — at most 3 attempts —
// and the process is launched once, with the last.
func TestStartProcessToolLoop(t *testing.T) {
	ts := startScheduling(t)
	if lp := ts.Tool("startScheduling").Loop; lp == nil || lp.Max != 3 || lp.Done != "/llmContext1/_loopDone" {
		t.Fatalf("loop %+v: the seed's loop, at most 3 times, around llmContext1", lp)
	}
	call := func(done bool, feedback string) string {
		entry := strings.Replace(entryAsProcess, `"_loopDone": true`, fmt.Sprintf(`"_loopDone": %t`, done), 1)
		entry = strings.Replace(entry, `"_feedback": "ready"`, fmt.Sprintf(`"_feedback": %q`, feedback), 1)
		return `{"_tool": "startScheduling", "name": "ScheduleMeeting", "llmContext1": ` + entry + `}`
	}
	for _, tt := range []struct {
		name     string
		answers  []string // the decision, then each attempt again
		feedback string   // of the call launched
	}{
		{"done on the second attempt", []string{`{"_reasoning": "schedule", "calls": [` + call(false, "first") + `]}`, call(true, "second")}, "second"},
		{"never done: the bound", []string{`{"_reasoning": "schedule", "calls": [` + call(false, "first") + `]}`, call(false, "again")}, "again"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			model := scriptedDecisions(t, tt.answers...)
			res := runRequest(t, Input{Toolset: ts, Context: jsonv.ArrayValue(), Prompt: "Schedule a meeting between Alice and Bob."}, model.URL, nil)
			sent := chats(t, model)
			want := 2
			if tt.feedback == "again" {
				want = 3
			}
			if len(sent) != want {
				t.Fatalf("%d model requests, want %d", len(sent), want)
			}
			for i, c := range sent[1:] {
				if c.Name != LoopCallName || !strings.Contains(c.Body, fmt.Sprintf("Your previous attempt (attempt %d of at most 3)", i+1)) || !strings.Contains(c.Body, "_feedback") {
					t.Errorf("attempt %d: schema %q, sent %s", i+2, c.Name, c.Body)
				}
			}
			if len(res.Calls) != 1 || res.Calls[0].Error != "" || res.Calls[0].Result.Lookup("process").Str() != "schedule-meeting" {
				t.Fatalf("calls %+v: one launch", res.Calls)
			}
			if got := res.Calls[0].Params.Lookup("llmContext1").Lookup("_feedback").Str(); got != tt.feedback {
				t.Errorf("launched with attempt %q, want the last", got)
			}
			if n := res.Decision.Lookup("calls").Len(); n != 1 {
				t.Errorf("decision %s", jsonv.Marshal(res.Decision))
			}
			if res.Usage.PromptTokens != int64(100*want) {
				t.Errorf("usage %+v: every attempt counted", res.Usage)
			}
		})
	}
}

// TestPlanBranches: a plan's if-else (seed 003: "logical branching (if-else)
// or parallel fan-out"), once per instance. The branch whose condition does
// not hold is skipped, not failed; a call that reads what either branch
// writes runs after the one taken; a branch no instance takes is skipped
// with the call that reads what it writes.
func TestPlanBranches(t *testing.T) {
	ts := &vessel.Toolset{Vessel: "t", Tools: []*vessel.Tool{
		{Name: "note", Kind: vessel.Instruction, Schema: mustJSON(t, `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)},
		{Name: "send", Kind: vessel.Action, Action: "send", Schema: mustJSON(t, `{"type":"object","properties":{"msg":{"type":"object"}},"required":["msg"]}`)},
	}}
	ctx := mustJSON(t, `[
		{"type":"state","_instance":"u1","answer":"approve"},
		{"type":"state","_instance":"u2","answer":"reject"},
		{"type":"plan","calls":[
			{"_tool":"note","text":"†state.answer","_outputPath":"state.verdict"},
			{"_tool":"note","text":"approved","_if":{"state":"†state.verdict.text","equals":"approve"},"_outputPath":"state.message"},
			{"_tool":"note","text":"rejected","_if":{"state":"†state.verdict.text","matches":{"not":{"const":"approve"}}},"_outputPath":"state.message"},
			{"_tool":"send","msg":"†state.message","_outputPath":"state.sent"},
			{"_tool":"note","text":"escalate","_if":{"state":"†state.verdict.text","equals":"escalate"},"_outputPath":"state.escalation"},
			{"_tool":"send","msg":"†state.escalation"}]}]`)
	var acts action.Registry
	var mu sync.Mutex
	var sent []string
	acts.Register(action.Action{Name: "send", Run: func(ctx context.Context, in jsonv.Value) (jsonv.Value, error) {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, in.Lookup("msg").Lookup("text").Str())
		return jsonv.StringValue("sent " + in.Lookup("msg").Lookup("text").Str()), nil
	}})
	res := runRequest(t, Input{Toolset: ts, Context: ctx}, "", &acts)
	if len(res.Calls) != 12 {
		t.Fatalf("%d calls, want the plan's 6 for each of 2 instances", len(res.Calls))
	}
	var got []string
	for _, c := range res.Calls {
		if c.Error != "" {
			t.Errorf("call %d (%s) failed: %s", c.Index+1, c.Instance, c.Error)
		}
		if c.Skipped != "" {
			got = append(got, fmt.Sprintf("%s/%d: %s", c.Instance, c.Index+1, c.Skipped))
		}
	}
	want := []string{
		`u1/3: the condition state.verdict.text matches {"not":{"const":"approve"}} does not hold: it does not match: /: 'not' failed`,
		`u1/5: the condition state.verdict.text = "escalate" does not hold: it is "approve"`,
		`u1/6: state.escalation is not set: call 5 (note, instance u1), which writes it, was skipped`,
		`u2/11: the condition state.verdict.text = "escalate" does not hold: it is "reject"`,
		`u2/12: state.escalation is not set: call 11 (note, instance u2), which writes it, was skipped`,
		`u2/8: the condition state.verdict.text = "approve" does not hold: it is "reject"`,
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("skipped:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for inst, want := range map[string]string{"u1": "sent approved", "u2": "sent rejected"} {
		if got := res.States[inst].Lookup("sent").Str(); got != want {
			t.Errorf("%s: sent %q (state %s)", inst, got, jsonv.Marshal(res.States[inst]))
		}
		if _, ok := res.States[inst].Get("escalation"); ok {
			t.Errorf("%s: a skipped call wrote its output", inst)
		}
	}
	if slices.Sort(sent); !slices.Equal(sent, []string{"approved", "rejected"}) {
		t.Errorf("sent %q: once per instance, its branch's message", sent)
	}
	summary := string(jsonv.Marshal(vessel.ResultsMessage(res.Calls)))
	if !strings.Contains(summary, `"skipped":"the condition state.verdict.text = \"approve\" does not hold`) {
		t.Errorf("the results message does not say what was skipped: %s", summary)
	}
}
