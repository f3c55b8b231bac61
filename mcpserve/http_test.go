package mcpserve

import (
	"context"
	"iter"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/registry"
)

// slowProcesses is one process that runs for a while, then completes;
// no engine.
type slowProcesses struct {
	mu      sync.Mutex
	started time.Time
	runFor  time.Duration
}

func (p *slowProcesses) Start(ctx context.Context, opts process.StartOptions) (*process.Started, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.started = time.Now()
	return &process.Started{ID: "slow-1", Name: "slow"}, nil
}

func (p *slowProcesses) Get(ctx context.Context, id string) (*process.Info, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	info := &process.Info{ID: id, Process: "slow", View: process.View{Status: process.Running, Done: []string{}, State: jsonv.NewObject(0).Value()}}
	if time.Since(p.started) > p.runFor {
		info.Status, info.Done = process.Completed, []string{"LLM_a"}
		info.State, _ = jsonv.Parse([]byte(`{"a": {"z": 1, "y": 2}}`))
	}
	return info, nil
}

func (p *slowProcesses) List(context.Context, process.ListOptions) (process.Page, error) {
	return process.Page{}, nil
}

func (p *slowProcesses) Answer(context.Context, string, jsonv.Value) (*process.View, error) {
	return nil, process.ErrNotFound
}

func (p *slowProcesses) Cancel(context.Context, string) error { return nil }

func (p *slowProcesses) Watch(ctx context.Context, id string, opts process.WatchOptions) iter.Seq2[*process.Info, error] {
	return process.Watch(ctx, p.Get, id, opts)
}

// TestHandlerOutlivesTimeouts: a call that follows a process for longer
// than the HTTP server's write and read timeouts still gets its result.
func TestHandlerOutlivesTimeouts(t *testing.T) {
	reg := &registry.Registry{}
	doc, _ := jsonv.Parse([]byte(`{"title": "Slow", "type": "object", "properties": {"a": {"type": "object", "properties": {"z": {"type": "integer"}}}}}`))
	if err := reg.Add("aug:processes/slow", doc); err != nil {
		t.Fatal(err)
	}
	s, err := New(context.Background(), &slowProcesses{runFor: 600 * time.Millisecond}, Options{Registry: reg, Poll: 20 * time.Millisecond, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(s.Handler())
	srv.Config.WriteTimeout, srv.Config.ReadTimeout = 200*time.Millisecond, 200*time.Millisecond
	srv.Start()
	defer srv.Close()
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: &http.Client{}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"prompt": "wait"}})
	if err != nil {
		t.Fatal(err)
	}
	if out := result(t, res); out.Lookup("status").Str() != "completed" || string(jsonv.Marshal(out.Lookup("output"))) != `{"a":{"z":1,"y":2}}` {
		t.Fatalf("result %s", jsonv.Marshal(out))
	}
}
