package action

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/augceo/vibe/internal/mcptest"
	"github.com/augceo/vibe/jsonv"
)

func mustParse(t testing.TB, s string) jsonv.Value {
	t.Helper()
	v, err := jsonv.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// The test server repeats the _meta member's name.
func TestMetaIdempotencyKey(t *testing.T) {
	if mcptest.MetaIdempotencyKey != MetaIdempotencyKey {
		t.Errorf("mcptest sends the key as %q, action reads %q", mcptest.MetaIdempotencyKey, MetaIdempotencyKey)
	}
}

// TestMCPTool: a tool's structured result keeps the order of its text; a
// text result is the output; isError and a lost server are retried;
// arguments the server refuses and unknown tools are not.
func TestMCPTool(t *testing.T) {
	cal := &mcptest.Calendar{Fail: 1}
	srv := &MCPServer{InMemory: cal.Server()}
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
			checkRun(t, out, err, tt.want, tt.retryable)
		})
	}
	// The arguments went as given, in order, with the call's key in _meta.
	if got := cal.Calls("find_slots"); len(got) != 2 || got[1] != `{"organizerEmail":"alice@example.com","attendeeEmail":"bob@example.com","timeRange":{"start":"s","end":"e"}}` {
		t.Errorf("calls %q", got)
	}
	if got := cal.Keys("find_slots"); len(got) != 2 || got[0] != "vibe:p-1:serverContext1.find" || got[1] != got[0] {
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

// TestLoadMCPActions: the actions file names MCP servers and tools; every
// problem is reported with its path.
func TestLoadMCPActions(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "actions.json")
	os.WriteFile(file, []byte(`{
		"Find_Activity": {"mcp": {"command": "calendar-mcp", "args": ["-v"], "env": {"K": "v"}}, "tool": "find_slots", "maxAttempts": 3},
		"Send": {"mcp": "http://127.0.0.1:9/mcp", "tool": "send"},
		"Same": {"mcp": {"command": "calendar-mcp", "args": ["-v"], "env": {"K": "v"}}, "tool": "other"}}`), 0o600)
	acts, err := Load(file, nil)
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
	_, err = Load(file, nil)
	for _, want := range []string{
		file + ": /A/mcp: an MCP server is a command (stdio) or a url (streamable HTTP): give exactly one",
		file + ": /B/tool: an MCP action names its tool",
		file + ": /B/mcp/args: args must be an array of strings",
		file + ": /C/mcp: mcp is the server",
		file + ": /C/url: unknown key \"url\" (want mcp, tool, timeout, maxAttempts, allowLinkLocal)",
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
