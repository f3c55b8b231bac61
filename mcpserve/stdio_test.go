package mcpserve

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestStdioGarbage: a line that is not a JSON-RPC message — not JSON, a
// JSON value that is no message, an empty batch, a line past MaxLine —
// gets a parse error (-32700) and the session goes on to answer the next
// request.
func TestStdioGarbage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, StdioTransport(inR, outW)) }()
	lines := make(chan string)
	go func() {
		out := bufio.NewReader(outR)
		for {
			line, err := out.ReadString('\n')
			if err != nil {
				close(lines)
				return
			}
			lines <- line
		}
	}()
	read := func() string {
		t.Helper()
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatal("the session's output ended")
			}
			return line
		case <-ctx.Done():
			t.Fatal("no answer: the session stopped answering")
		}
		return ""
	}
	send := func(s string) {
		io.WriteString(inW, s+"\n") // a failed write shows as a missing answer
	}
	for _, garbage := range []string{"not json at all", `{"hello": "world"}`, `[]`, `42`, strings.Repeat("x", MaxLine+10)} {
		go send(garbage) // a long line fills the pipe before the filter drains it
		if got := read(); !strings.Contains(got, `"code":-32700`) || !strings.Contains(got, `"id":null`) {
			t.Errorf("after %.20q: %s", garbage, got)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	if got := read(); !strings.Contains(got, `"id":1`) || !strings.Contains(got, `"result"`) || !strings.Contains(got, `"serverInfo"`) {
		t.Fatalf("initialize after garbage: %s", got)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if got := read(); !strings.Contains(got, `"id":2`) || !strings.Contains(got, `"result"`) {
		t.Errorf("ping: %s", got)
	}
	inW.Close() // the client goes: the session ends
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("the session did not end with its input")
	}
}
