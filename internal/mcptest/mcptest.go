// Package mcptest is an MCP server for tests of MCP tools as actions: a
// calendar whose tools record their calls and the idempotency keys that
// came with them.
package mcptest

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MetaIdempotencyKey is action.MetaIdempotencyKey, repeated so that the
// action package's own tests can use this one.
const MetaIdempotencyKey = "vibe/idempotencyKey"

// Calendar is an MCP server in a test: its tools record their calls. Its
// tools are find_slots (whose input is FetchSchema; the first Fail calls
// fail with isError, the others give a structured result that is also its
// text), note (any object; answers the text "noted") and strict (refuses
// every call as invalid parameters).
type Calendar struct {
	Fail int // the first calls of find_slots that fail (isError)

	mu    sync.Mutex
	calls map[string][]string // tool → each call's arguments
	keys  map[string][]any    // tool → each call's idempotency key
}

// FetchSchema is what find_slots takes: exactly schedule-meeting's
// fetchAvailability step.
const FetchSchema = `{"type": "object", "properties": {
	"organizerEmail": {"type": "string"}, "attendeeEmail": {"type": "string"},
	"timeRange": {"type": "object", "properties": {"start": {"type": "string"}, "end": {"type": "string"}}, "required": ["start", "end"]}},
	"required": ["organizerEmail", "attendeeEmail", "timeRange"]}`

// Calls returns the arguments of each call of tool, in order.
func (c *Calendar) Calls(tool string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.calls[tool]...)
}

// Keys returns the idempotency key (_meta MetaIdempotencyKey) of each call
// of tool, in order.
func (c *Calendar) Keys(tool string) []any {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]any(nil), c.keys[tool]...)
}

// Server returns a new MCP server with the calendar's tools.
func (c *Calendar) Server() *mcp.Server {
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
	s.AddTool(&mcp.Tool{Name: "find_slots", InputSchema: json.RawMessage(FetchSchema)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if n := record(req); n <= c.Fail {
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
