package process

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/schema"
)

// calendar is an MCP server in the test: its tools record their calls.
type calendar struct {
	mu    sync.Mutex
	calls map[string][]string // tool → each call's arguments
	keys  map[string][]any    // tool → each call's idempotency key
	fail  int                 // the first calls of "find_slots" that fail (isError)
}

// fetchSchema is what find_slots takes: exactly schedule-meeting's
// fetchAvailability step.
const fetchSchema = `{"type": "object", "properties": {
	"organizerEmail": {"type": "string"}, "attendeeEmail": {"type": "string"},
	"timeRange": {"type": "object", "properties": {"start": {"type": "string"}, "end": {"type": "string"}}, "required": ["start", "end"]}},
	"required": ["organizerEmail", "attendeeEmail", "timeRange"]}`

func (c *calendar) server() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "calendar", Version: "1"}, nil)
	record := func(req *mcp.CallToolRequest) int {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.calls == nil {
			c.calls, c.keys = map[string][]string{}, map[string][]any{}
		}
		name := req.Params.Name
		c.calls[name] = append(c.calls[name], string(req.Params.Arguments))
		c.keys[name] = append(c.keys[name], req.Params.Meta[MetaIdempotencyKey])
		return len(c.calls[name])
	}
	text := func(s string) []mcp.Content { return []mcp.Content{&mcp.TextContent{Text: s}} }
	s.AddTool(&mcp.Tool{Name: "find_slots", InputSchema: json.RawMessage(fetchSchema)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if n := record(req); n <= c.fail {
			return &mcp.CallToolResult{IsError: true, Content: text("the calendar is unavailable")}, nil
		}
		// Structured, and the same as text: the order of the text is kept.
		out := `{"organizerSlots":["2024-03-20T10:00:00Z","2024-03-20T14:00:00Z"],"attendeeSlots":["2024-03-20T10:00:00Z"]}`
		return &mcp.CallToolResult{StructuredContent: json.RawMessage(out), Content: text(out)}, nil
	})
	s.AddTool(&mcp.Tool{Name: "note", InputSchema: json.RawMessage(`{"type": "object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		record(req)
		return &mcp.CallToolResult{Content: text("noted")}, nil
	})
	s.AddTool(&mcp.Tool{Name: "strict", InputSchema: json.RawMessage(`{"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "n must be an integer"}
		})
	return s
}

// TestMCPTool: a tool's structured result keeps the order of its text; a
// text result is the output; isError and a lost server are retried;
// arguments the server refuses and unknown tools are not.
func TestMCPTool(t *testing.T) {
	cal := &calendar{fail: 1}
	srv := &MCPServer{InMemory: cal.server()}
	pool := &MCPPool{}
	defer pool.Close()
	ctx := WithIdempotencyKey(context.Background(), "vibe:p-1:serverContext1.find")
	args := mustParse(t, `{"organizerEmail": "alice@example.com", "attendeeEmail": "bob@example.com", "timeRange": {"start": "s", "end": "e"}}`)
	tests := []struct {
		tool      string
		want      string // the output, or the error's start
		retryable bool
	}{
		{"find_slots", "MCP tool find_slots of an in-memory MCP server failed: the calendar is unavailable", true},
		{"find_slots", `{"organizerSlots":["2024-03-20T10:00:00Z","2024-03-20T14:00:00Z"],"attendeeSlots":["2024-03-20T10:00:00Z"]}`, false},
		{"note", `"noted"`, false},
		{"strict", "MCP tool strict of an in-memory MCP server: ", false},
		{"nosuch", "MCP tool nosuch of an in-memory MCP server: ", false},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			tool := &MCPTool{Server: *srv, Tool: tt.tool, Pool: pool}
			out, err := tool.Run(ctx, args)
			if err == nil {
				if s := string(jsonv.Marshal(out)); s != tt.want {
					t.Errorf("output %s, want %s", s, tt.want)
				}
				return
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error %q, want it to start %q", err, tt.want)
			}
			var ae *temporal.ApplicationError
			if retryable := !(errors.As(err, &ae) && ae.NonRetryable()); retryable != tt.retryable {
				t.Errorf("retryable %v, want %v", retryable, tt.retryable)
			}
		})
	}
	// The arguments went as given, in order, with the call's key in _meta.
	if got := cal.calls["find_slots"]; len(got) != 2 || got[1] != `{"organizerEmail":"alice@example.com","attendeeEmail":"bob@example.com","timeRange":{"start":"s","end":"e"}}` {
		t.Errorf("calls %q", got)
	}
	if got := cal.keys["find_slots"]; len(got) != 2 || got[0] != "vibe:p-1:serverContext1.find" || got[1] != got[0] {
		t.Errorf("keys %v", got)
	}
	// Every tool went through one session.
	sessions := 0
	for range srv.InMemory.Sessions() {
		sessions++
	}
	if sessions != 1 {
		t.Errorf("%d sessions with one server, want 1 (pooled)", sessions)
	}
	// A closed pool refuses calls.
	pool.Close()
	if _, err := (&MCPTool{Server: *srv, Tool: "note", Pool: pool}).Run(ctx, args); !errors.Is(err, ErrPoolClosed) {
		t.Errorf("after Close: %v", err)
	}
}

// TestMCPActionInProcess: schedule-meeting whose availability comes from
// an MCP tool: the tool gets its arguments unwrapped — the one value the
// step references — and a failing call is retried by Temporal, under the
// same idempotency key.
func TestMCPActionInProcess(t *testing.T) {
	cal := &calendar{fail: 1}
	pool := &MCPPool{}
	defer pool.Close()
	var acts Actions
	tool := &MCPTool{Server: MCPServer{InMemory: cal.server()}, Tool: "find_slots", Pool: pool}
	fetch := tool.Action("FetchAvailability_Activity")
	fetch.Retry = &temporal.RetryPolicy{MaximumAttempts: 3}
	acts.Register(fetch)
	acts.Register(Action{Name: "sendInvitation", Run: func(context.Context, jsonv.Value) (jsonv.Value, error) {
		return jsonv.Parse([]byte(`{"messageId": "m-1", "status": "sent"}`))
	}})
	env := newEnv(t, &scripted{answers: meetingAnswers}, &acts)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(UpdateAnswer, "1", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { t.Errorf("refused: %v", err) }, OnAccept: func() {}, OnComplete: func(any, error) {},
		}, mustParse(t, `{"confirmInvitation":{"decision":"Approve"}}`))
	}, time.Hour)
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "meeting-mcp"})
	env.ExecuteWorkflow(WorkflowName, Start{Name: "schedule-meeting", Program: meeting(t).Program(), Prompt: "Meet Bob"})
	var v View
	if err := env.GetWorkflowResult(&v); err != nil {
		t.Fatal(err)
	}
	if v.Status != Completed {
		t.Fatalf("status %s: %v", v.Status, v.Error)
	}
	want := `{"organizerEmail":"alice@example.com","attendeeEmail":"bob@example.com","timeRange":{"start":"2024-03-20T09:00:00Z","end":"2024-03-20T17:00:00Z"}}`
	if got := cal.calls["find_slots"]; len(got) != 2 || got[0] != want || got[1] != want {
		t.Errorf("calls %q, want %s twice (a failure, then the retry)", got, want)
	}
	if got := cal.keys["find_slots"]; len(got) != 2 || got[0] != "vibe:meeting-mcp:serverContext1.FetchAvailability_Activity" || got[1] != got[0] {
		t.Errorf("keys %v", got)
	}
	if got := string(jsonv.Marshal(v.State.Lookup("serverContext1").Lookup("FetchAvailability_Activity"))); got != `{"organizerSlots":["2024-03-20T10:00:00Z","2024-03-20T14:00:00Z"],"attendeeSlots":["2024-03-20T10:00:00Z"]}` {
		t.Errorf("the step's output %s", got)
	}
}

// TestMCPInputCheck: before a process starts, each step that runs an MCP
// tool is checked against the tool's input schema; a mismatch is an error
// naming the step, and nothing starts.
func TestMCPInputCheck(t *testing.T) {
	reg, err := registry.Open("../examples/schedule-meeting/registry")
	if err != nil {
		t.Fatal(err)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "calendar", Version: "1"}, nil)
	noop := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	}
	s.AddTool(&mcp.Tool{Name: "fits", InputSchema: json.RawMessage(fetchSchema)}, noop)
	// sendInvitation references three steps: their members are the arguments.
	s.AddTool(&mcp.Tool{Name: "send", InputSchema: json.RawMessage(`{"type": "object", "properties": {
		"organizer": {"type": "string"}, "attendee": {"type": "string"}, "subject": {"type": "string"}, "body": {"type": "string"},
		"decision": {"type": "string", "enum": ["Approve", "Reject", "Later"]}}, "required": ["attendee", "subject", "body", "decision"], "additionalProperties": false}`)}, noop)
	s.AddTool(&mcp.Tool{Name: "other", InputSchema: json.RawMessage(`{"type": "object", "properties": {
		"attendees": {"type": "array", "items": {"type": "string"}}, "organizerEmail": {"type": "integer"}, "timeRange": {"type": "object"}},
		"required": ["attendees"], "additionalProperties": false}`)}, noop)
	pool := &MCPPool{}
	defer pool.Close()
	for _, tt := range []struct {
		tool string
		want []string
	}{
		{"fits", nil},
		{"other", []string{
			"step serverContext1.FetchAvailability_Activity: its input does not fit the input schema of action FetchAvailability_Activity: /attendees: the schema requires it, and the value does not have it",
			"step serverContext1.FetchAvailability_Activity: its input does not fit the input schema of action FetchAvailability_Activity: /organizerEmail: the value may be a string, and the schema takes integer",
			"step serverContext1.FetchAvailability_Activity: its input does not fit the input schema of action FetchAvailability_Activity: /attendeeEmail: the value may have it, and the schema admits no other properties than attendees, organizerEmail, timeRange",
		}},
		{"missing", []string{"step serverContext1.FetchAvailability_Activity: cannot check its input against action FetchAvailability_Activity: MCP server an in-memory MCP server has no tool \"missing\" (its tools: fits, other, send)"}},
	} {
		t.Run(tt.tool, func(t *testing.T) {
			var acts Actions
			acts.Register((&MCPTool{Server: MCPServer{InMemory: s}, Tool: tt.tool, Pool: pool}).Action("FetchAvailability_Activity"))
			acts.Register((&MCPTool{Server: MCPServer{InMemory: s}, Tool: "send", Pool: pool}).Action("sendInvitation"))
			// No engine: a start that passes the check would fail on the nil
			// client; one that does not never reaches it.
			c := &Client{Registry: reg, Actions: acts.Names(), Registered: &acts}
			if tt.want == nil {
				if err := checkInputs(context.Background(), &acts, "p.json", meeting(t)); err != nil {
					t.Fatalf("the input fits, but: %v", err)
				}
				return
			}
			_, err := c.Start(context.Background(), StartOptions{Process: "aug:processes/schedule-meeting", Prompt: "Meet Bob"})
			errs := schema.Errors(err, "")
			if len(errs) != len(tt.want) {
				t.Fatalf("errors %v, want %d", err, len(tt.want))
			}
			for i, e := range errs {
				if e.Message != tt.want[i] || e.Path != "/properties/serverContext1/properties/FetchAvailability_Activity" || !strings.HasSuffix(e.File, "schedule-meeting@2.json") {
					t.Errorf("error %d: %s\nwant %s", i, e, tt.want[i])
				}
			}
		})
	}
}

// TestLoadMCPActions: the actions file names MCP servers and tools; every
// problem is reported with its path.
func TestLoadMCPActions(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "actions.json")
	os.WriteFile(file, []byte(`{
		"Find_Activity": {"mcp": {"command": "calendar-mcp", "args": ["-v"], "env": {"K": "v"}}, "tool": "find_slots", "maxAttempts": 3},
		"Send": {"mcp": "http://127.0.0.1:9/mcp", "tool": "send"},
		"Same": {"mcp": {"command": "calendar-mcp", "args": ["-v"], "env": {"K": "v"}}, "tool": "other"}}`), 0o600)
	acts, err := LoadActions(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(acts) != 3 || !acts[0].Unwrap || acts[0].InputSchema == nil || acts[0].Retry.MaximumAttempts != 3 {
		t.Errorf("actions %+v", acts)
	}
	os.WriteFile(file, []byte(`{
		"A": {"mcp": {"command": "x", "url": "http://y"}, "tool": "t"},
		"B": {"mcp": {"args": "-v"}},
		"C": {"mcp": 7, "tool": "t", "url": "http://z"}}`), 0o600)
	_, err = LoadActions(file, nil)
	for _, want := range []string{
		file + ": /A/mcp: an MCP server is a command (stdio) or a url (streamable HTTP): give exactly one",
		file + ": /B/tool: an MCP action names its tool",
		file + ": /B/mcp/args: args must be an array of strings",
		file + ": /C/mcp: mcp is the server",
		file + ": /C/url: unknown key \"url\" (want mcp, tool, timeout, maxAttempts)",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in\n%v", want, err)
		}
	}
}

func TestUnwrapped(t *testing.T) {
	input := mustParse(t, `{"llmContext2": {"draft": {"to": "bob", "subject": "Hi"}, "n": 3}, "userContext": {"approve": {"decision": "Approve", "to": "eve"}}}`)
	tests := []struct {
		refs []string
		want string // the arguments, or the error
	}{
		{[]string{"/llmContext2/draft"}, `{"to":"bob","subject":"Hi"}`},
		{[]string{"/llmContext2/n"}, `3`},
		{[]string{"/llmContext2/draft", "/userContext/approve/decision"}, "/userContext/approve/decision is string, not an object whose members are arguments"},
		{[]string{"/llmContext2/draft", "/userContext/approve"}, `/llmContext2/draft and /userContext/approve both give the argument "to"`},
		{[]string{"/llmContext2/draft", "/nope"}, "its input has no /nope: "},
	}
	for _, tt := range tests {
		refs := make([]jsonv.Pointer, len(tt.refs))
		for i, r := range tt.refs {
			refs[i] = jsonv.Pointer(r)
		}
		got, err := Unwrapped(input, refs)
		if err != nil {
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("%v: %v, want %s", tt.refs, err, tt.want)
			}
			continue
		}
		if s := string(jsonv.Marshal(got)); s != tt.want {
			t.Errorf("%v: %s, want %s", tt.refs, s, tt.want)
		}
	}
	merged, err := Unwrapped(mustParse(t, `{"a": {"x": {"k": 1, "j": 2}}, "b": {"y": {"i": 3}}}`), []jsonv.Pointer{"/a/x", "/b/y"})
	if err != nil || string(jsonv.Marshal(merged)) != `{"k":1,"j":2,"i":3}` {
		t.Errorf("merged %s %v", jsonv.Marshal(merged), err)
	}
}

// TestMCPInputCheckFilledInputs: a blocking step with inputs (SPEC §2)
// gives the tool what the model filled for it, and that is checked.
func TestMCPInputCheckFilledInputs(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "calendar", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "find", InputSchema: json.RawMessage(`{"type": "object", "properties": {
		"attendees": {"type": "array", "items": {"type": "string"}}, "date": {"type": "string"}}, "required": ["attendees", "date"], "additionalProperties": false}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	pool := &MCPPool{}
	defer pool.Close()
	var acts Actions
	acts.Register((&MCPTool{Server: MCPServer{InMemory: s}, Tool: "find", Pool: pool}).Action("Find_Activity"))
	for _, tt := range []struct{ inputs, required, want string }{
		{`"attendees": {"type": "array", "items": {"type": "string", "format": "email"}}, "date": {"type": "string", "format": "date"}`, `"attendees", "date"`, ""},
		{`"attendees": {"type": "array", "items": {"type": "string"}}, "date": {"type": "string"}`, `"attendees"`,
			"p.json: /properties/Find_Activity: step Find_Activity: its input does not fit the input schema of action Find_Activity: /date: the schema requires it, and the value may lack it (it is optional there)"},
		{`"people": {"type": "array", "items": {"type": "string"}}, "date": {"type": "string"}`, `"people", "date"`,
			"p.json: /properties/Find_Activity: step Find_Activity: its input does not fit the input schema of action Find_Activity: /attendees: the schema requires it, and the value does not have it\n" +
				"p.json: /properties/Find_Activity: step Find_Activity: its input does not fit the input schema of action Find_Activity: /people: the value may have it, and the schema admits no other properties than attendees, date"},
	} {
		doc := mustParse(t, `{"type": "object", "properties": {"Find_Activity": {"type": "object", "properties": {`+tt.inputs+`,
			"output": {"type": ["object", "null"]}}, "required": [`+tt.required+`, "output"]}}}`)
		p, err := compile.Compile(context.Background(), "p.json", doc, compile.Options{Actions: acts.Names()})
		if err != nil {
			t.Fatal(err)
		}
		err = checkInputs(context.Background(), &acts, "p.json", p)
		var got []string
		for _, e := range schema.Errors(err, "") {
			got = append(got, e.Error())
		}
		if strings.Join(got, "\n") != tt.want {
			t.Errorf("errors\n%s\nwant\n%s", strings.Join(got, "\n"), tt.want)
		}
	}
}

// TestMCPFilledInputsInProcess: the tool of a blocking step with inputs
// gets what the model filled for them, as they are.
func TestMCPFilledInputsInProcess(t *testing.T) {
	cal := &calendar{}
	pool := &MCPPool{}
	defer pool.Close()
	var acts Actions
	acts.Register((&MCPTool{Server: MCPServer{InMemory: cal.server()}, Tool: "note", Pool: pool}).Action("Note_Activity"))
	doc := mustParse(t, `{"type": "object", "properties": {"Note_Activity": {"type": "object", "properties": {
		"text": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}, "output": {"type": ["string", "null"]}},
		"required": ["text", "tags", "output"]}}}`)
	p, err := compile.Compile(context.Background(), "p.json", doc, compile.Options{Actions: acts.Names()})
	if err != nil {
		t.Fatal(err)
	}
	model := &scripted{answers: map[string]string{p.Chunks[0].Name: `{"Note_Activity": {"text": "hello", "tags": ["b", "a"], "output": null}}`}}
	env := newEnv(t, model, &acts)
	env.ExecuteWorkflow(WorkflowName, Start{Name: "note", Program: p.Program(), Prompt: "note it"})
	var v View
	if err := env.GetWorkflowResult(&v); err != nil {
		t.Fatal(err)
	}
	if got := cal.calls["note"]; v.Status != Completed || len(got) != 1 || got[0] != `{"text":"hello","tags":["b","a"]}` {
		t.Errorf("status %s, calls %q", v.Status, got)
	}
}
