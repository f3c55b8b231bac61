package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/augceo/vibe"
	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/engine"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/llm/replay"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/registry"
)

// The example's request; its model answers are replayed from the
// example's recording, which holds the answers to exactly this prompt and
// these availabilities.
const (
	example = "../examples/schedule-meeting"
	prompt  = "Ассистент, запланируй встречу между Алисой и Бобом!"
)

var quiet = slog.New(slog.DiscardHandler)

// meetingActions are the example's two actions, answering as its made-up
// calendar does (the recording's second answer was recorded with these
// availabilities in its context).
func meetingActions(fetch action.Func) *action.Registry {
	if fetch == nil {
		fetch = func(context.Context, jsonv.Value) (jsonv.Value, error) {
			return jsonv.Parse([]byte(`{"organizerSlots":["2024-03-20T10:00:00Z","2024-03-20T14:00:00Z","2024-03-20T16:00:00Z"],"attendeeSlots":["2024-03-20T11:00:00Z","2024-03-20T14:00:00Z"]}`))
		}
	}
	acts := &action.Registry{}
	acts.Register(action.Action{Name: "FetchAvailability_Activity", Run: fetch})
	acts.Register(action.Action{Name: "sendInvitation", Run: func(ctx context.Context, in jsonv.Value) (jsonv.Value, error) {
		status := "sent"
		if d := in.Lookup("userContext").Lookup("confirmInvitation").Lookup("decision").Str(); d != "Approve" {
			status = "not sent: " + d
		}
		return jsonv.ObjectValue(jsonv.Member{Name: "messageId", Value: jsonv.StringValue("msg-1")}, jsonv.Member{Name: "status", Value: jsonv.StringValue(status)}), nil
	}})
	return acts
}

// startVibe starts an embedded engine and a worker with the example's
// registry, the recording and acts, and returns the MCP server of its
// processes.
func startVibe(t *testing.T, acts *action.Registry, reg *registry.Registry) (*Server, *process.Client) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	model, err := replay.Open(example + "/answers.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	eng, err := engine.Start(ctx, engine.Options{SearchAttributes: durable.SearchAttributes, DataDir: t.TempDir(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	w, err := vibe.StartWorker(eng.Client(), vibe.WorkerOptions{Provider: llm.Provider(model), Actions: acts, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	if reg == nil {
		if reg, err = registry.Open(example + "/registry"); err != nil {
			t.Fatal(err)
		}
	}
	pc := &process.Client{Temporal: eng.Client(), Registry: reg, Actions: acts.Names(), Registered: acts}
	s, err := New(ctx, pc, Options{Registry: reg, Poll: 50 * time.Millisecond, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return s, pc
}

// connect connects a client to s over an in-memory pipe; the session
// ends when the test does. drop cuts the pipe, as a network that fails or
// a client that is killed would. What the client reads is copied to wire,
// when given.
func connect(t *testing.T, s *Server, opts *mcp.ClientOptions, version string, wire io.Writer) (cs *mcp.ClientSession, drop func()) {
	t.Helper()
	c, srv := net.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx, &mcp.IOTransport{Reader: srv, Writer: srv})
	}()
	var r io.ReadCloser = c
	if wire != nil {
		r = struct {
			io.Reader
			io.Closer
		}{io.TeeReader(c, wire), c}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, opts).Connect(ctx, &mcp.IOTransport{Reader: r, Writer: c}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		cancel()
		<-done
	})
	return cs, func() { c.Close() }
}

// The two ways a client is asked: input requests in the result (from
// protocol 2026-07-28), or a request of the server's within the call.
var versions = []struct{ name, version string }{
	{"input requests", ""},
	{"elicitation request", "2025-11-25"},
}

// result is a tool result's structured content, read from its text, which
// keeps member order (the SDK gives the client structuredContent as a map).
func result(t *testing.T, res *mcp.CallToolResult) jsonv.Value {
	t.Helper()
	if len(res.Content) == 0 {
		t.Fatalf("no content: %+v", res)
	}
	v, err := jsonv.Parse([]byte(res.Content[0].(*mcp.TextContent).Text))
	if err != nil {
		t.Fatalf("the result's text is not JSON: %v", err)
	}
	return v
}

func TestElicitation(t *testing.T) {
	s, pc := startVibe(t, meetingActions(nil), nil)
	for _, v := range versions {
		t.Run(v.name, func(t *testing.T) {
			var mu sync.Mutex
			var asked []*mcp.ElicitParams
			var progress []string
			wire := &syncBuffer{}
			cs, _ := connect(t, s, &mcp.ClientOptions{
				ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					mu.Lock()
					defer mu.Unlock()
					asked = append(asked, req.Params)
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "Approve"}}, nil
				},
				ProgressNotificationHandler: func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
					mu.Lock()
					defer mu.Unlock()
					progress = append(progress, req.Params.Message)
				},
			}, v.version, wire)
			ctx := context.Background()

			var names []string
			for tool, err := range cs.Tools(ctx, nil) {
				if err != nil {
					t.Fatal(err)
				}
				names = append(names, tool.Name)
				if tool.Name == "schedule-meeting" {
					if !strings.HasPrefix(tool.Description, "Надежный процесс для планирования встречи") || tool.Title != "Процесс: Планирование встречи" {
						t.Errorf("title %q, description %q", tool.Title, tool.Description)
					}
					in, _ := json.Marshal(tool.InputSchema)
					if want := `{"additionalProperties":false,"properties":{"input":{"description":"Data the process starts with; it is kept in the process's state under \"input\".","type":"object"},"prompt":{"description":"The person's request: what the process is to do.","type":"string"}},"required":["prompt"],"type":"object"}`; string(in) != want {
						t.Errorf("input schema %s", in)
					}
					// Its actions send an invitation: destructive, open-world.
					if a := tool.Annotations; a == nil || a.DestructiveHint == nil || !*a.DestructiveHint || a.OpenWorldHint == nil || !*a.OpenWorldHint || a.ReadOnlyHint {
						t.Errorf("annotations %+v", a)
					}
					out, _ := json.Marshal(tool.OutputSchema)
					for _, want := range []string{`"required":["id","process","status"]`, `"identifyParticipants":{"properties":{"attendee":`, `"serverContext2":{"properties":{"sendInvitation":`} {
						if !strings.Contains(string(out), want) {
							t.Errorf("the output schema lacks %s:\n%s", want, out)
						}
					}
				}
			}
			slices.Sort(names)
			if want := []string{ToolAnswer, ToolCancel, ToolList, "schedule-meeting", ToolShow}; !slices.Equal(names, want) {
				t.Fatalf("tools %v, want %v", names, want)
			}
			// On the wire, the schema keeps its order (the SDK's client then
			// makes a map of it).
			if want := `"inputSchema":{"type":"object","properties":{"prompt":{"type":"string","description":"The person's request: what the process is to do."},"input":{`; !strings.Contains(wire.String(), want) {
				t.Errorf("the wire lacks %s", want)
			}

			params := &mcp.CallToolParams{Name: "schedule-meeting", Arguments: map[string]any{"prompt": prompt}}
			params.SetProgressToken("meeting")
			res, err := cs.CallTool(ctx, params)
			if err != nil {
				t.Fatal(err)
			}
			out := result(t, res)
			if res.IsError || out.Lookup("status").Str() != "completed" {
				t.Fatalf("result %s", jsonv.Marshal(out))
			}
			id := out.Lookup("id").Str()
			if !strings.HasPrefix(id, "schedule-meeting-") || !out.Lookup("replayed").Bool() {
				t.Errorf("id %q, replayed %v", id, out.Lookup("replayed"))
			}
			output := out.Lookup("output")
			if got := strings.Join(output.Object().Names(), ","); got != "llmContext1,serverContext1,llmContext2,userContext,serverContext2" {
				t.Errorf("the output's members: %s", got)
			}
			if got := output.Lookup("serverContext2").Lookup("sendInvitation").Lookup("status").Str(); got != "sent" {
				t.Errorf("the invitation: %q", got)
			}

			if want := `"outputSchema":{"type":"object","properties":{"id":{"type":"string","description":"The process's id."},"process":{"type":"string"},"status":`; !strings.Contains(wire.String(), want) {
				t.Errorf("the wire lacks %s", want)
			}
			if v := cs.InitializeResult().ServerInfo.Version; v != vibe.Version() || v == "" {
				t.Errorf("serverInfo.version %q, want %q", v, vibe.Version())
			}
			if want := `"requestedSchema":{"type":"object","properties":{"decision":{"type":"string","enum":["Approve","Reject"],"description":`; !strings.Contains(wire.String(), want) {
				t.Errorf("the wire lacks %s", want)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(asked) != 1 {
				t.Fatalf("asked %d times", len(asked))
			}
			q := asked[0]
			form, _ := json.Marshal(q.RequestedSchema)
			if want := `{"properties":{"decision":{"description":"Решение пользователя по предложенной встрече.","enum":["Approve","Reject"],"type":"string"}},"required":["decision"],"type":"object"}`; string(form) != want {
				t.Errorf("the form %s\nwant     %s", form, want)
			}
			if q.Mode != "form" || q.Meta[MetaProcess] != id || q.Meta[MetaChunk] != "USER_userContext" ||
				!strings.Contains(q.Message, id) || !strings.Contains(q.Message, "\n• draftInvitation › subject: Встреча 20 марта в 14:00") || strings.Contains(q.Message, "{") {
				t.Errorf("the elicitation: mode %q, meta %v, message:\n%s", q.Mode, q.Meta, q.Message)
			}
			want := []string{"started " + id, "✓ LLM_llmContext1", "✓ SERVER_serverContext1", "✓ LLM_llmContext2", "✓ USER_userContext", "✓ SERVER_serverContext2"}
			if !slices.Equal(progress, want) {
				t.Errorf("progress %q\nwant %q", progress, want)
			}
			info, err := pc.Get(ctx, id)
			if err != nil || info.Status != process.Completed {
				t.Fatalf("the process: %v %+v", err, info)
			}
		})
	}
}

// TestReconnect: the client goes away while the person is asked; the
// process waits, durably, and a new session answers it with the answer
// tool.
func TestReconnect(t *testing.T) {
	s, pc := startVibe(t, meetingActions(nil), nil)
	for _, v := range versions {
		t.Run(v.name, func(t *testing.T) {
			ctx := context.Background()
			ids := make(chan string, 1)
			var drop func()
			cs, drop := connect(t, s, &mcp.ClientOptions{
				ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					ids <- req.Params.Meta[MetaProcess].(string)
					drop() // the client goes away while the person reads the form
					return nil, errors.New("the client went away")
				},
			}, v.version, nil)
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "schedule-meeting", Arguments: map[string]any{"prompt": prompt}}); err == nil {
				t.Fatal("the call succeeded though its client went away")
			}
			id := <-ids
			info, err := pc.Get(ctx, id)
			if err != nil || info.Status != process.Waiting {
				t.Fatalf("after the disconnect: %v %+v", err, info)
			}

			again, _ := connect(t, s, nil, v.version, nil)
			res, err := again.CallTool(ctx, &mcp.CallToolParams{Name: ToolShow, Arguments: map[string]any{"id": id}})
			if err != nil || result(t, res).Lookup("waiting").Lookup("chunk").Str() != "USER_userContext" {
				t.Fatalf("show: %v %s", err, jsonv.Marshal(result(t, res)))
			}
			// A wrong answer is refused with the problem; the process waits on.
			res, err = again.CallTool(ctx, &mcp.CallToolParams{Name: ToolAnswer, Arguments: map[string]any{"id": id, "answer": map[string]any{"confirmInvitation": map[string]any{"decision": "Maybe"}}}})
			if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "/confirmInvitation/decision") {
				t.Fatalf("a wrong answer: %v %+v", err, res)
			}
			res, err = again.CallTool(ctx, &mcp.CallToolParams{Name: ToolAnswer, Arguments: map[string]any{"id": id, "answer": map[string]any{"confirmInvitation": map[string]any{"decision": "Approve"}}}})
			if err != nil {
				t.Fatal(err)
			}
			out := result(t, res)
			if res.IsError || out.Lookup("status").Str() != "completed" || out.Lookup("output").Lookup("serverContext2").Lookup("sendInvitation").Lookup("status").Str() != "sent" {
				t.Fatalf("answered: %s", jsonv.Marshal(out))
			}
			// The process's state is a resource too.
			rr, err := again.ReadResource(ctx, &mcp.ReadResourceParams{URI: ProcessesURI + "/" + id})
			if err != nil || !strings.Contains(rr.Contents[0].Text, `"status": "completed"`) {
				t.Errorf("the resource: %v %+v", err, rr)
			}
		})
	}
}

// TestCancel: a client that cancels its call cancels the process; one
// that goes away leaves it running.
func TestCancel(t *testing.T) {
	started := make(chan string, 2)
	release := make(chan struct{})
	s, pc := startVibe(t, meetingActions(func(ctx context.Context, in jsonv.Value) (jsonv.Value, error) {
		started <- action.IdempotencyKey(ctx)
		stop := durable.KeepAlive(ctx)
		defer stop()
		select {
		case <-release:
			return jsonv.Parse([]byte(`{"organizerSlots":["2024-03-20T10:00:00Z","2024-03-20T14:00:00Z","2024-03-20T16:00:00Z"],"attendeeSlots":["2024-03-20T11:00:00Z","2024-03-20T14:00:00Z"]}`))
		case <-ctx.Done():
			return jsonv.Value{}, ctx.Err()
		}
	}), nil)
	ctx := context.Background()
	cs, _ := connect(t, s, nil, "", nil)

	// Cancelled: the workflow is cancelled, and the process ends failed.
	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "schedule-meeting", Arguments: map[string]any{"prompt": prompt}})
		errc <- err
	}()
	key := <-started
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled call: %v", err)
	}
	id := strings.TrimSuffix(strings.TrimPrefix(key, "vibe:"), ":serverContext1.FetchAvailability_Activity")
	if info := waitFor(t, pc, id, process.Failed); info.Error == nil || !strings.Contains(*info.Error, "cancel") {
		t.Errorf("the cancelled process: %+v", info)
	}

	// Gone away: the process goes on.
	gone, drop := connect(t, s, nil, "", nil)
	go gone.CallTool(ctx, &mcp.CallToolParams{Name: "schedule-meeting", Arguments: map[string]any{"prompt": prompt}})
	key = <-started
	drop()
	id = strings.TrimSuffix(strings.TrimPrefix(key, "vibe:"), ":serverContext1.FetchAvailability_Activity")
	time.Sleep(200 * time.Millisecond) // time enough for a wrongful cancel to arrive
	close(release)
	info := waitFor(t, pc, id, process.Waiting)
	if len(info.Done) != 3 {
		t.Errorf("done %v", info.Done)
	}
}

func waitFor(t *testing.T, pc *process.Client, id string, want process.Status) *process.Info {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		info, err := pc.Get(context.Background(), id)
		if err == nil && info.Status == want {
			return info
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v %+v, want %s", id, err, info, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestWaiting: a chunk richer than a form is not asked: the call says
// "waiting", with the id, the schema and why; answer_process continues it.
func TestWaiting(t *testing.T) {
	reg := &registry.Registry{}
	doc, _ := jsonv.Parse([]byte(`{"title": "Review an address", "type": "object", "properties": {
		"userContext": {"type": "object", "properties": {"review": {"type": "object", "properties": {
			"address": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}, "required": ["address"]}}}}}`))
	if err := reg.Add("aug:processes/review", doc); err != nil {
		t.Fatal(err)
	}
	// lookUp's action reads, and is given the process's input: the tool's
	// input is typed by the action's schema. notify's action is not
	// registered: it is not offered.
	for uri, text := range map[string]string{
		"aug:processes/lookup": `{"title": "Look up", "type": "object", "properties": {"serverContext": {"type": "object", "properties": {
			"lookUp": {"type": "object", "properties": {"country": {"type": "string"}}}}}}}`,
		"aug:processes/notify": `{"title": "Notify", "type": "object", "properties": {"serverContext": {"type": "object", "properties": {
			"sendNote": {"type": "object", "properties": {"sent": {"type": "boolean"}}}}}}}`,
	} {
		doc, _ := jsonv.Parse([]byte(text))
		if err := reg.Add(uri, doc); err != nil {
			t.Fatal(err)
		}
	}
	acts := &action.Registry{}
	acts.Register(action.Action{Name: "lookUp", ReadOnly: true,
		Run: func(ctx context.Context, in jsonv.Value) (jsonv.Value, error) {
			return jsonv.ObjectValue(jsonv.Member{Name: "country", Value: jsonv.StringValue("France of " + in.Lookup("city").Str())}), nil
		},
		InputSchema: func(context.Context) (jsonv.Value, error) {
			return jsonv.Parse([]byte(`{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}`))
		}})
	s, _ := startVibe(t, acts, reg)
	cs, _ := connect(t, s, &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		t.Error("asked with a form")
		return nil, errors.New("no")
	}}, "", nil)
	ctx := context.Background()

	tools := map[string]*mcp.Tool{}
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		tools[tool.Name] = tool
	}
	if _, ok := tools["notify"]; ok {
		t.Error("notify is offered, though its action sendNote is not registered")
	}
	// A model and a person only: neither destructive nor open-world.
	if a := tools["review"].Annotations; a == nil || a.DestructiveHint == nil || *a.DestructiveHint || a.OpenWorldHint == nil || *a.OpenWorldHint {
		t.Errorf("review's annotations %+v", a)
	}
	// An action that reads: open-world, not destructive.
	lookup := tools["lookup"]
	if a := lookup.Annotations; a == nil || a.DestructiveHint == nil || *a.DestructiveHint || a.OpenWorldHint == nil || !*a.OpenWorldHint {
		t.Errorf("lookup's annotations %+v", a)
	}
	in, _ := json.Marshal(lookup.InputSchema)
	if !strings.Contains(string(in), `"input":{"description":"Data the process starts with, which its actions are given;`) ||
		!strings.Contains(string(in), `"properties":{"city":{"type":"string"}},"required":["city"]`) || !strings.Contains(string(in), `"required":["prompt","input"]`) {
		t.Errorf("lookup's input schema %s", in)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "lookup", Arguments: map[string]any{"prompt": "where", "input": map[string]any{"country": "?"}}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "/input") {
		t.Errorf("an input without its city: %v %+v", err, res)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "lookup", Arguments: map[string]any{"prompt": "where", "input": map[string]any{"city": "Lyon"}}})
	if err != nil {
		t.Fatal(err)
	}
	if out := result(t, res); out.Lookup("status").Str() != "completed" {
		t.Errorf("lookup: %s", jsonv.Marshal(out))
	}

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "review", Arguments: map[string]any{"prompt": "check it"}})
	if err != nil {
		t.Fatal(err)
	}
	out := result(t, res)
	if out.Lookup("status").Str() != "waiting" || out.Lookup("waiting").Lookup("schema").Lookup("properties").Lookup("review").IsNull() ||
		!strings.Contains(out.Lookup("message").Str(), "/review/address: a form's field is a string, number, integer, boolean or array, not object") {
		t.Fatalf("result %s", jsonv.Marshal(out))
	}
	id := out.Lookup("id").Str()

	// list_processes by status.
	listed := func(status string) []string {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: ToolList, Arguments: map[string]any{"status": status}})
		if err != nil || res.IsError {
			t.Fatalf("list %s: %v %+v", status, err, res)
		}
		var ids []string
		for _, p := range result(t, res).Lookup("processes").Array() {
			if p.Lookup("status").Str() != status {
				t.Errorf("listed as %s: %s", status, jsonv.Marshal(p))
			}
			ids = append(ids, p.Lookup("id").Str())
		}
		return ids
	}
	// Visibility takes a moment to index a status.
	settled := func(status string, ok func([]string) bool) []string {
		t.Helper()
		var got []string
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if got = listed(status); ok(got) || time.Now().After(deadline) {
				return got
			}
		}
	}
	if got := settled("waiting", func(got []string) bool { return slices.Equal(got, []string{id}) }); !slices.Equal(got, []string{id}) {
		t.Errorf("waiting: %v, want [%s]", got, id)
	}
	lookupDone := func(got []string) bool { return len(got) == 1 && strings.HasPrefix(got[0], "lookup-") }
	if got := settled("completed", lookupDone); !lookupDone(got) {
		t.Errorf("completed: %v", got)
	}

	// An unknown id is said once.
	for _, tool := range []string{ToolShow, ToolCancel, ToolAnswer} {
		args := map[string]any{"id": "nope-1"}
		if tool == ToolAnswer {
			args["answer"] = map[string]any{}
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil || !res.IsError {
			t.Fatalf("%s: %v %+v", tool, err, res)
		}
		if text := res.Content[0].(*mcp.TextContent).Text; text != "no such process: nope-1" {
			t.Errorf("%s of an unknown id: %q", tool, text)
		}
	}

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: ToolAnswer, Arguments: map[string]any{"id": id, "answer": map[string]any{"review": map[string]any{"address": map[string]any{"city": "Lyon"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if out := result(t, res); out.Lookup("status").Str() != "completed" || out.Lookup("output").Lookup("userContext").Lookup("review").Lookup("address").Lookup("city").Str() != "Lyon" {
		t.Fatalf("answered: %s", jsonv.Marshal(out))
	}
}

// TestRefused: an answer the form admits but the process refuses (the
// SDK's validator takes formats as annotations, Vibe's asserts them) is
// asked again, with the problem.
func TestRefused(t *testing.T) {
	reg := &registry.Registry{}
	doc, _ := jsonv.Parse([]byte(`{"title": "Invite", "type": "object", "properties": {
		"userContext": {"type": "object", "properties": {"invite": {"type": "object",
			"properties": {"email": {"type": "string", "format": "email"}}, "required": ["email"]}}}}}`))
	if err := reg.Add("aug:processes/invite", doc); err != nil {
		t.Fatal(err)
	}
	s, _ := startVibe(t, &action.Registry{}, reg)
	for _, v := range versions {
		t.Run(v.name, func(t *testing.T) {
			var messages []string
			cs, _ := connect(t, s, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				messages = append(messages, req.Params.Message)
				email := "bob at example"
				if len(messages) > 1 {
					email = "bob@example.com"
				}
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"email": email}}, nil
			}}, v.version, nil)
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "invite", Arguments: map[string]any{"prompt": "invite Bob"}})
			if err != nil {
				t.Fatal(err)
			}
			if out := result(t, res); out.Lookup("status").Str() != "completed" || out.Lookup("output").Lookup("userContext").Lookup("invite").Lookup("email").Str() != "bob@example.com" {
				t.Fatalf("result %s", jsonv.Marshal(out))
			}
			if len(messages) != 2 || !strings.HasPrefix(messages[1], "Your answer was refused: the answer does not fit chunk USER_userContext: /invite/email: ") {
				t.Errorf("asked %d times; the second time:\n%s", len(messages), messages[len(messages)-1])
			}
		})
	}
}

// TestOutsideTheForm: an answer outside the form's schema (a number for
// a string, a field the form does not have) is asked again with the
// problems, as an answer the process refuses is, not ended as "waiting"
// with "asking the person failed".
func TestOutsideTheForm(t *testing.T) {
	reg := &registry.Registry{}
	doc, _ := jsonv.Parse([]byte(`{"title": "Invite", "type": "object", "properties": {
		"userContext": {"type": "object", "properties": {"invite": {"type": "object",
			"properties": {"email": {"type": "string"}}, "required": ["email"]}}}}}`))
	if err := reg.Add("aug:processes/invite", doc); err != nil {
		t.Fatal(err)
	}
	s, _ := startVibe(t, &action.Registry{}, reg)
	for _, v := range versions {
		t.Run(v.name, func(t *testing.T) {
			answers := []map[string]any{
				{"email": 42},
				{"email": "bob@example.com", "name": "Bob"},
				{"email": "bob@example.com"},
			}
			problems := []string{"/email", `"name"`}
			if v.version == "" {
				// The SDK's client checks the content against the form
				// before it answers an input request: 42 never leaves it.
				answers, problems = answers[1:], problems[1:]
			}
			var messages []string
			cs, _ := connect(t, s, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				messages = append(messages, req.Params.Message)
				return &mcp.ElicitResult{Action: "accept", Content: answers[min(len(messages), len(answers))-1]}, nil
			}}, v.version, nil)
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "invite", Arguments: map[string]any{"prompt": "invite Bob"}})
			if err != nil {
				t.Fatal(err)
			}
			if out := result(t, res); out.Lookup("status").Str() != "completed" || out.Lookup("output").Lookup("userContext").Lookup("invite").Lookup("email").Str() != "bob@example.com" {
				t.Fatalf("result %s", jsonv.Marshal(out))
			}
			if len(messages) != len(answers) {
				t.Fatalf("asked %d times, want %d", len(messages), len(answers))
			}
			for i, want := range problems {
				if m := messages[i+1]; !strings.HasPrefix(m, "Your answer was refused: ") || !strings.Contains(m, want) {
					t.Errorf("asked again without the problem with %s:\n%s", want, m)
				}
			}
		})
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
