package process

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/internal/mcptest"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/schema"
)

// TestMCPActionInProcess: schedule-meeting whose availability comes from
// an MCP tool: the tool gets its arguments unwrapped — the one value the
// step references — and a failing call is retried by Temporal, under the
// same idempotency key.
func TestMCPActionInProcess(t *testing.T) {
	cal := &mcptest.Calendar{Fail: 1}
	pool := &action.MCPPool{}
	defer pool.Close()
	var acts action.Registry
	tool := &action.MCPTool{Server: action.MCPServer{InMemory: cal.Server()}, Tool: "find_slots", Pool: pool}
	fetch := tool.Action("FetchAvailability_Activity")
	fetch.Retry = &temporal.RetryPolicy{MaximumAttempts: 3}
	acts.Register(fetch)
	acts.Register(action.Action{Name: "sendInvitation", Run: func(context.Context, jsonv.Value) (jsonv.Value, error) {
		return jsonv.Parse([]byte(`{"messageId": "m-1", "status": "sent"}`))
	}})
	env := newEnv(t, &scripted{answers: meetingAnswers}, &acts)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(UpdateAnswer, "1", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { t.Errorf("refused: %v", err) }, OnAccept: func() {}, OnComplete: func(any, error) {},
		}, mustParse(t, `{"confirmInvitation":{"decision":"Approve"}}`))
	}, time.Hour)
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "meeting-mcp"})
	env.ExecuteWorkflow(durable.ProcessWorkflow, durable.Start{Name: "schedule-meeting", Program: meeting(t).Program(), Prompt: "Meet Bob"})
	var v View
	if err := env.GetWorkflowResult(&v); err != nil {
		t.Fatal(err)
	}
	if v.Status != Completed {
		t.Fatalf("status %s: %v", v.Status, v.Error)
	}
	want := `{"organizerEmail":"alice@example.com","attendeeEmail":"bob@example.com","timeRange":{"start":"2024-03-20T09:00:00Z","end":"2024-03-20T17:00:00Z"}}`
	if got := cal.Calls("find_slots"); len(got) != 2 || got[0] != want || got[1] != want {
		t.Errorf("calls %q, want %s twice (a failure, then the retry)", got, want)
	}
	if got := cal.Keys("find_slots"); len(got) != 2 || got[0] != "vibe:meeting-mcp:serverContext1.FetchAvailability_Activity" || got[1] != got[0] {
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
	s.AddTool(&mcp.Tool{Name: "fits", InputSchema: json.RawMessage(mcptest.FetchSchema)}, noop)
	// sendInvitation references three steps: their members are the arguments.
	s.AddTool(&mcp.Tool{Name: "send", InputSchema: json.RawMessage(`{"type": "object", "properties": {
		"organizer": {"type": "string"}, "attendee": {"type": "string"}, "subject": {"type": "string"}, "body": {"type": "string"},
		"decision": {"type": "string", "enum": ["Approve", "Reject", "Later"]}}, "required": ["attendee", "subject", "body", "decision"], "additionalProperties": false}`)}, noop)
	s.AddTool(&mcp.Tool{Name: "other", InputSchema: json.RawMessage(`{"type": "object", "properties": {
		"attendees": {"type": "array", "items": {"type": "string"}}, "organizerEmail": {"type": "integer"}, "timeRange": {"type": "object"}},
		"required": ["attendees"], "additionalProperties": false}`)}, noop)
	pool := &action.MCPPool{}
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
			var acts action.Registry
			acts.Register((&action.MCPTool{Server: action.MCPServer{InMemory: s}, Tool: tt.tool, Pool: pool}).Action("FetchAvailability_Activity"))
			acts.Register((&action.MCPTool{Server: action.MCPServer{InMemory: s}, Tool: "send", Pool: pool}).Action("sendInvitation"))
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

// TestMCPInputCheckFilledInputs: a blocking step with inputs (SPEC §2)
// gives the tool what the model filled for it, and that is checked.
func TestMCPInputCheckFilledInputs(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "calendar", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "find", InputSchema: json.RawMessage(`{"type": "object", "properties": {
		"attendees": {"type": "array", "items": {"type": "string"}}, "date": {"type": "string"}}, "required": ["attendees", "date"], "additionalProperties": false}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	pool := &action.MCPPool{}
	defer pool.Close()
	var acts action.Registry
	acts.Register((&action.MCPTool{Server: action.MCPServer{InMemory: s}, Tool: "find", Pool: pool}).Action("Find_Activity"))
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
	cal := &mcptest.Calendar{}
	pool := &action.MCPPool{}
	defer pool.Close()
	var acts action.Registry
	acts.Register((&action.MCPTool{Server: action.MCPServer{InMemory: cal.Server()}, Tool: "note", Pool: pool}).Action("Note_Activity"))
	doc := mustParse(t, `{"type": "object", "properties": {"Note_Activity": {"type": "object", "properties": {
		"text": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}, "output": {"type": ["string", "null"]}},
		"required": ["text", "tags", "output"]}}}`)
	p, err := compile.Compile(context.Background(), "p.json", doc, compile.Options{Actions: acts.Names()})
	if err != nil {
		t.Fatal(err)
	}
	model := &scripted{answers: map[string]string{p.Chunks[0].Name: `{"Note_Activity": {"text": "hello", "tags": ["b", "a"], "output": null}}`}}
	env := newEnv(t, model, &acts)
	env.ExecuteWorkflow(durable.ProcessWorkflow, durable.Start{Name: "note", Program: p.Program(), Prompt: "note it"})
	var v View
	if err := env.GetWorkflowResult(&v); err != nil {
		t.Fatal(err)
	}
	if got := cal.Calls("note"); v.Status != Completed || len(got) != 1 || got[0] != `{"text":"hello","tags":["b","a"]}` {
		t.Errorf("status %s, calls %q", v.Status, got)
	}
}
