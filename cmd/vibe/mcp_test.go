package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/augceo/vibe/api"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/process"
)

// vibeMCP starts `vibe mcp args…` as a child process and connects an MCP
// client to it over its stdin and stdout.
func vibeMCP(t *testing.T, opts *mcp.ClientOptions, args ...string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"mcp"}, args...)...)
	cmd.Env = append(os.Environ(), "VIBE_TEST_MAIN=1", "VIBE_LOG=warn")
	cmd.Stderr = os.Stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, opts).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// toolResult reads a tool result's structured content from its text,
// which keeps member order.
func toolResult(t *testing.T, res *mcp.CallToolResult) jsonv.Value {
	t.Helper()
	if len(res.Content) == 0 {
		t.Fatalf("a result without content: %+v", res)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	v, err := jsonv.Parse([]byte(text))
	if err != nil {
		t.Fatalf("the result is not JSON: %s", text)
	}
	return v
}

func approve(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "Approve"}}, nil
}

// TestMCPStdio runs vibe mcp as an MCP client starts it: over stdio. The
// client lists the tools, starts schedule-meeting, approves the invitation
// in the form it is asked, and gets the output; then it goes away while
// asked, and a new vibe mcp on the same data answers through answer_process.
func TestMCPStdio(t *testing.T) {
	if testing.Short() {
		t.Skip("starts vibe mcp, which starts the embedded engine")
	}
	model := newMeetingModel(t)
	actions, calls := meetingActions(t)
	args := []string{"--registry", example + "/registry", "--data", t.TempDir(), "--actions-file", actions, "--llm", "openai:test-model", "--llm-base-url", model.URL}
	ctx := context.Background()

	cs := vibeMCP(t, &mcp.ClientOptions{ElicitationHandler: approve}, args...)
	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	if strings.Join(names, ",") != "answer_process,cancel_process,list_processes,schedule-meeting,show_process" {
		t.Fatalf("tools %v", names)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "schedule-meeting", Arguments: map[string]any{"prompt": "Meet Bob"}})
	if err != nil {
		t.Fatal(err)
	}
	out := toolResult(t, res)
	if out.Lookup("status").Str() != "completed" || out.Lookup("output").Lookup("serverContext2").Lookup("sendInvitation").Lookup("status").Str() != "sent" {
		t.Fatalf("result %s", jsonv.Marshal(out))
	}

	cs.Close() // the data directory is free again

	// Gone while asked: the process waits, durably.
	ids := make(chan string, 1)
	cs = vibeMCP(t, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		ids <- req.Params.Meta["vibe/process"].(string)
		return nil, errors.New("the client went away")
	}}, args...)
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "schedule-meeting", Arguments: map[string]any{"prompt": "Meet Bob"}}); err == nil {
		t.Fatal("the call succeeded though its client went away")
	}
	cs.Close() // vibe mcp exits with its engine
	id := <-ids

	cs = vibeMCP(t, nil, args...)
	// An answer past durable.MaxAnswerSize is refused by name, and the
	// process goes on waiting for a good one.
	huge := map[string]any{"confirmInvitation": map[string]any{"decision": "Approve", "note": strings.Repeat("x", durable.MaxAnswerSize)}}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "answer_process", Arguments: map[string]any{"id": id, "answer": huge}})
	if err != nil {
		t.Fatal(err)
	}
	var said strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			said.WriteString(tc.Text)
		}
	}
	if !res.IsError || !strings.Contains(said.String(), "past the limit of 512 KiB on an answer") {
		t.Errorf("an answer too large: %v %s", res.IsError, said.String())
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "answer_process", Arguments: map[string]any{"id": id, "answer": map[string]any{"confirmInvitation": map[string]any{"decision": "Approve"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if out := toolResult(t, res); out.Lookup("id").Str() != id || out.Lookup("status").Str() != "completed" {
		t.Fatalf("answered: %s", jsonv.Marshal(out))
	}
	if got := calls(); got["/send"] != 2 {
		t.Errorf("action calls %v", got)
	}
}

// TestServeMCP: vibe serve offers the same server at /mcp, over streamable
// HTTP, behind the API's token: off loopback, a call without it is
// refused.
func TestServeMCP(t *testing.T) {
	if testing.Short() {
		t.Skip("starts vibe serve")
	}
	model := newMeetingModel(t)
	actions, _ := meetingActions(t)
	_, port, _ := net.SplitHostPort(freeAddr(t))
	_, out := child(t, "serve", "--registry", example+"/registry", "--data", t.TempDir(), "--addr", "0.0.0.0:"+port, "--token", testToken,
		"--actions-file", actions, "--llm", "openai:test-model", "--llm-base-url", model.URL)
	base := "http://127.0.0.1:" + port
	c := &api.Client{BaseURL: base, Token: testToken}
	waitUntil(t, "vibe serve", time.Minute, func() bool { _, err := c.List(context.Background(), process.ListOptions{Limit: 1}); return err == nil })

	for _, tok := range []string{"", "wrong"} {
		req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("token %q: %d", tok, resp.StatusCode)
		}
	}

	ctx := context.Background()
	transport := &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearer(testToken)}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: approve}).Connect(ctx, transport, nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "schedule-meeting", Arguments: map[string]any{"prompt": "Meet Bob"}})
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got := toolResult(t, res); got.Lookup("status").Str() != "completed" {
		t.Fatalf("result %s", jsonv.Marshal(got))
	}
}

// bearer is a transport that sends a token.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}
