package action

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/augceo/vibe/jsonv"
)

// MCP tools as server actions. An action may be a tool of an MCP server
// (the Model Context Protocol's): the step's input is the tool's
// arguments, the tool's structured result (or its text) is the step's
// output, and a result marked isError is a failure that Temporal retries.
// The call's idempotency key travels in the request's _meta as
// MetaIdempotencyKey, for servers that apply each key once.

// MetaIdempotencyKey is the _meta member of a tools/call request that
// carries the call's idempotency key (IdempotencyKey): the same on every
// attempt of one step's call, across retries and restarts.
const MetaIdempotencyKey = "vibe/idempotencyKey"

// MCPServer says how to reach an MCP server: a command that speaks MCP on
// its standard input and output, or the URL of a streamable HTTP endpoint.
type MCPServer struct {
	// Command runs the server over stdio, with Args, in Dir, with Env added
	// to the environment (values expand $VARIABLES).
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Dir     string            `json:"dir,omitempty"`
	// URL is a streamable HTTP endpoint, sent Headers (values expand
	// $VARIABLES) with every request.
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// InMemory is a server in this program, reached over in-memory
	// transports: for tests, and Go programs that serve tools themselves.
	InMemory *mcp.Server `json:"-"`
}

// String names the server in messages: its command line or URL.
func (s *MCPServer) String() string {
	switch {
	case s.InMemory != nil:
		return "an in-memory MCP server"
	case s.URL != "":
		return s.URL
	}
	return strings.Join(append([]string{s.Command}, s.Args...), " ")
}

// key identifies the server in a pool: two actions that name the same
// server share its session.
func (s *MCPServer) key() string {
	if s.InMemory != nil {
		return fmt.Sprintf("memory:%p", s.InMemory)
	}
	b, _ := json.Marshal(s) // maps marshal with sorted keys: the key is stable
	return string(b)
}

// transport is how the pool connects to the server.
func (s *MCPServer) transport() (mcp.Transport, error) {
	switch {
	case s.InMemory != nil:
		client, server := mcp.NewInMemoryTransports()
		if _, err := s.InMemory.Connect(context.Background(), server, nil); err != nil {
			return nil, err
		}
		return client, nil
	case s.URL != "":
		headers := http.Header{}
		for k, v := range s.Headers {
			headers.Set(k, os.ExpandEnv(v))
		}
		return &mcp.StreamableClientTransport{Endpoint: s.URL, HTTPClient: &http.Client{Transport: headerTransport{headers, http.DefaultTransport}}}, nil
	case s.Command != "":
		cmd := exec.Command(s.Command, s.Args...)
		cmd.Dir = s.Dir
		cmd.Stderr = os.Stderr // a stdio server's logs; its stdout is the protocol
		if len(s.Env) > 0 {
			cmd.Env = os.Environ()
			for k, v := range s.Env {
				cmd.Env = append(cmd.Env, k+"="+os.ExpandEnv(v))
			}
		}
		return &mcp.CommandTransport{Command: cmd}, nil
	}
	return nil, errors.New("an MCP server needs a command or a URL")
}

// headerTransport adds headers to every request.
type headerTransport struct {
	headers http.Header
	next    http.RoundTripper
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.headers {
		r.Header[k] = v
	}
	return t.next.RoundTrip(r)
}

// MCPConnectTimeout bounds connecting to an MCP server: starting its
// command or reaching its URL, and the initial handshake.
const MCPConnectTimeout = 30 * time.Second

// MCPPool keeps one client session per MCP server, shared by every action
// that names the server and by every call at once: an MCP session
// multiplexes requests, and a stdio server started per call would cost a
// process each time. A session that ends (the server exited, the network
// failed) is dropped, and the next call connects again. The zero value is
// ready to use; Close ends the sessions (and the servers' commands).
type MCPPool struct {
	mu       sync.Mutex
	sessions map[string]*mcpSession // by MCPServer.key
	closed   bool
}

// mcpSession is a session being connected, or connected.
type mcpSession struct {
	ready chan struct{} // closed once cs or err is set
	cs    *mcp.ClientSession
	err   error
}

// ErrPoolClosed is the error of a call through a closed MCPPool.
var ErrPoolClosed = errors.New("the MCP connection pool is closed")

// mcpClient is the client Vibe connects to MCP servers as.
var mcpClient = mcp.NewClient(&mcp.Implementation{Name: "vibe", Title: "Vibe", Version: "1"}, nil)

// session returns the pool's session with srv, connecting if there is none.
func (p *MCPPool) session(ctx context.Context, srv *MCPServer) (*mcp.ClientSession, error) {
	key := srv.key()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, ErrPoolClosed
	}
	if p.sessions == nil {
		p.sessions = map[string]*mcpSession{}
	}
	s, ok := p.sessions[key]
	if !ok {
		s = &mcpSession{ready: make(chan struct{})}
		p.sessions[key] = s
		go p.connect(ctx, key, srv, s)
	}
	p.mu.Unlock()
	select {
	case <-s.ready:
		return s.cs, s.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// connect connects s to srv. It does not end with ctx's cancellation (the
// session outlives the call that opened it), only with its values.
func (p *MCPPool) connect(ctx context.Context, key string, srv *MCPServer, s *mcpSession) {
	defer close(s.ready)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), MCPConnectTimeout)
	defer cancel()
	t, err := srv.transport()
	if err == nil {
		s.cs, err = mcpClient.Connect(cctx, t, nil)
	}
	if err != nil {
		s.err = fmt.Errorf("connect to MCP server %s: %w", srv, err)
		p.forget(key, s)
		return
	}
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		s.cs.Close()
		s.cs, s.err = nil, ErrPoolClosed
		return
	}
	// Drop the session once it ends, so that the next call connects again.
	go func() {
		s.cs.Wait()
		p.forget(key, s)
	}()
}

// forget drops s, unless another session has replaced it already.
func (p *MCPPool) forget(key string, s *mcpSession) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sessions[key] == s {
		delete(p.sessions, key)
	}
}

// Close ends every session; calls through the pool then fail.
func (p *MCPPool) Close() error {
	p.mu.Lock()
	p.closed = true
	sessions := p.sessions
	p.sessions = nil
	p.mu.Unlock()
	var errs []error
	for _, s := range sessions {
		<-s.ready
		if s.cs != nil {
			if err := s.cs.Close(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Tool returns the tool of that name as srv lists it (tools/list).
func (p *MCPPool) Tool(ctx context.Context, srv *MCPServer, name string) (*mcp.Tool, error) {
	cs, err := p.session(ctx, srv)
	if err != nil {
		return nil, err
	}
	var names []string
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("list the tools of MCP server %s: %w", srv, err)
		}
		if t.Name == name {
			return t, nil
		}
		names = append(names, t.Name)
	}
	sort.Strings(names)
	return nil, fmt.Errorf("MCP server %s has no tool %q (its tools: %s)", srv, name, strings.Join(names, ", "))
}

// MCPTool is an action that calls a tool of an MCP server through a pool.
type MCPTool struct {
	Server MCPServer
	Tool   string
	// Pool holds the session with Server; nil means a pool of the tool's
	// own, whose session ends with the program.
	Pool *MCPPool
}

// Action returns the action of that name that calls the tool: it takes
// its arguments unwrapped (Action.Unwrap), and declares the tool's input
// schema, so that each step that runs it is checked before its process
// starts.
func (t *MCPTool) Action(name string) Action {
	if t.Pool == nil {
		t.Pool = &MCPPool{}
	}
	return Action{Name: name, Run: t.Run, Unwrap: true, InputSchema: t.InputSchema}
}

// InputSchema returns the tool's input schema as the server lists it.
// The SDK hands a client the schema as a Go map, so its members come
// sorted; the schema is only checked against, never sent on.
func (t *MCPTool) InputSchema(ctx context.Context) (jsonv.Value, error) {
	tool, err := t.Pool.Tool(ctx, &t.Server, t.Tool)
	if err != nil {
		return jsonv.Value{}, err
	}
	b, err := json.Marshal(tool.InputSchema)
	if err != nil {
		return jsonv.Value{}, fmt.Errorf("MCP tool %s: its input schema: %w", t.Tool, err)
	}
	return jsonv.Parse(b)
}

// Run calls the tool with input as its arguments, and returns its result:
// the structured content, else the text (parsed when it is JSON). A result
// marked isError, a lost connection or a server error is a failure that
// Temporal retries; arguments the server refuses, or an unknown tool, fail
// the step at once.
func (t *MCPTool) Run(ctx context.Context, input jsonv.Value) (jsonv.Value, error) {
	if input.Object() == nil {
		return jsonv.Value{}, NonRetryable(fmt.Errorf("MCP tool %s takes an object of arguments, not %s", t.Tool, input.Kind()))
	}
	cs, err := t.Pool.session(ctx, &t.Server)
	if err != nil {
		return jsonv.Value{}, err // retried: the server may come back
	}
	params := &mcp.CallToolParams{Name: t.Tool, Arguments: json.RawMessage(jsonv.Marshal(input))}
	if key := IdempotencyKey(ctx); key != "" {
		params.Meta = mcp.Meta{MetaIdempotencyKey: key}
	}
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		var wire *jsonrpc.Error
		if errors.As(err, &wire) && (wire.Code == jsonrpc.CodeInvalidParams || wire.Code == jsonrpc.CodeMethodNotFound) {
			return jsonv.Value{}, NonRetryable(fmt.Errorf("MCP tool %s of %s: %w", t.Tool, &t.Server, err))
		}
		return jsonv.Value{}, fmt.Errorf("MCP tool %s of %s: %w", t.Tool, &t.Server, err)
	}
	if res.IsError {
		return jsonv.Value{}, fmt.Errorf("MCP tool %s of %s failed: %s", t.Tool, &t.Server, toolText(res))
	}
	return toolOutput(res)
}

// toolText is the text of a result, its text contents joined.
func toolText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	if len(parts) == 0 {
		return "(no text)"
	}
	return strings.Join(parts, "\n")
}

// toolOutput is a tool result as a step's output. The SDK hands a client
// structuredContent as a Go map, which loses member order; a tool that
// also gives it as JSON text (as the MCP specification asks, and the Go
// SDK's typed tools do) has its order kept from that text.
func toolOutput(res *mcp.CallToolResult) (jsonv.Value, error) {
	var text []jsonv.Value
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			if v, err := jsonv.Parse([]byte(tc.Text)); err == nil {
				text = append(text, v)
			} else {
				text = append(text, jsonv.StringValue(tc.Text))
			}
		}
	}
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return jsonv.Value{}, NonRetryable(fmt.Errorf("the structured result: %w", err))
		}
		structured, err := jsonv.Parse(b)
		if err != nil {
			return jsonv.Value{}, NonRetryable(fmt.Errorf("the structured result: %w", err))
		}
		for _, v := range text {
			if jsonv.Equal(v, structured) {
				return v, nil
			}
		}
		return structured, nil
	}
	switch len(text) {
	case 0:
		return jsonv.NullValue(), nil
	case 1:
		return text[0], nil
	}
	return jsonv.StringValue(toolText(res)), nil
}
