package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"iter"
	"slices"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/registry"
)

// doneProcesses is one process that has already completed its three
// chunks when it is first read; no engine.
type doneProcesses struct{}

func (doneProcesses) Start(context.Context, process.StartOptions) (*process.Started, error) {
	return &process.Started{ID: "done-1", Name: "done"}, nil
}

func (doneProcesses) Get(_ context.Context, id string) (*process.Info, error) {
	state, _ := jsonv.Parse([]byte(`{"a": {"z": 1}}`))
	return &process.Info{ID: id, Process: "done", View: process.View{Status: process.Completed, Done: []string{"LLM_a", "SERVER_b", "LLM_c"}, State: state}}, nil
}

func (doneProcesses) List(context.Context, process.ListOptions) (process.Page, error) {
	return process.Page{}, nil
}

func (doneProcesses) Answer(context.Context, string, jsonv.Value) (*process.View, error) {
	return nil, process.ErrNotFound
}

func (doneProcesses) Cancel(context.Context, string) error { return nil }

func (p doneProcesses) Watch(ctx context.Context, id string, opts process.WatchOptions) iter.Seq2[*process.Info, error] {
	return process.Watch(ctx, p.Get, id, opts)
}

// TestProgressBeforeResult: a client has handled every progress
// notification of a call before it reads the call's result. The SDK's
// client runs notification handlers on a queue of their own but hands a
// result to its caller as soon as it reads it, so a server that only
// writes them in order loses the race whenever the client's handler is
// slower than its reader. Here each progress handler holds on until the
// client has read the server's next message, and notes it when that
// message is a response: the result, read while a notification of its call
// was still being handled.
func TestProgressBeforeResult(t *testing.T) {
	reg := &registry.Registry{}
	doc, _ := jsonv.Parse([]byte(`{"title": "Done", "type": "object", "properties": {
		"a": {"type": "object", "properties": {"z": {"type": "integer"}}},
		"b_Activity": {"type": "object", "properties": {"output": {"type": ["object", "null"]}}},
		"c": {"type": "object", "properties": {"y": {"type": "integer"}}}}}`))
	if err := reg.Add("aug:processes/done", doc); err != nil {
		t.Fatal(err)
	}
	s, err := New(context.Background(), doneProcesses{}, Options{Registry: reg, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range versions {
		t.Run(v.name, func(t *testing.T) {
			var mu sync.Mutex
			var progress, early []string
			wire := &reads{}
			cs, _ := connect(t, s, &mcp.ClientOptions{
				ProgressNotificationHandler: func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
					next, ok := wire.next(ctx, req.Params.Message)
					mu.Lock()
					defer mu.Unlock()
					progress = append(progress, req.Params.Message)
					if ok && next.Method == "" {
						early = append(early, req.Params.Message)
					}
				},
			}, v.version, wire)
			params := &mcp.CallToolParams{Name: "done", Arguments: map[string]any{"prompt": "go"}}
			params.SetProgressToken("done")
			res, err := cs.CallTool(context.Background(), params)
			if err != nil {
				t.Fatal(err)
			}
			if out := result(t, res); out.Lookup("status").Str() != "completed" {
				t.Fatalf("result %s", jsonv.Marshal(out))
			}
			mu.Lock()
			defer mu.Unlock()
			if want := []string{"started done-1", "✓ LLM_a", "✓ SERVER_b", "✓ LLM_c"}; !slices.Equal(progress, want) {
				t.Errorf("progress %q\nwant %q", progress, want)
			}
			if len(early) > 0 {
				t.Errorf("the client read the result while it handled %q", early)
			}
		})
	}
}

// readMessage is a JSON-RPC message as far as TestProgressBeforeResult reads
// it: a response has no method.
type readMessage struct {
	Method string `json:"method"`
	Params struct {
		Message string `json:"message"`
	} `json:"params"`
}

// reads keeps the messages a client reads, one a line, and wakes those
// waiting for the next.
type reads struct {
	mu      sync.Mutex
	partial []byte
	msgs    []readMessage
	more    chan struct{} // closed, and replaced, at each message
}

func (r *reads) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.partial = append(r.partial, p...)
	for {
		i := bytes.IndexByte(r.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		var m readMessage
		if err := json.Unmarshal(r.partial[:i], &m); err == nil {
			r.msgs = append(r.msgs, m)
		}
		r.partial = r.partial[i+1:]
		if r.more != nil {
			close(r.more)
			r.more = nil
		}
	}
}

// next waits for the message read after the progress notification that
// says text; false when ctx ends first.
func (r *reads) next(ctx context.Context, text string) (readMessage, bool) {
	for {
		r.mu.Lock()
		i := slices.IndexFunc(r.msgs, func(m readMessage) bool { return m.Method == "notifications/progress" && m.Params.Message == text })
		if i >= 0 && i+1 < len(r.msgs) {
			m := r.msgs[i+1]
			r.mu.Unlock()
			return m, true
		}
		if r.more == nil {
			r.more = make(chan struct{})
		}
		more := r.more
		r.mu.Unlock()
		select {
		case <-more:
		case <-ctx.Done():
			return readMessage{}, false
		}
	}
}
