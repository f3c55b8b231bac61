package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/examples/calendar-mcp/calendar"
	"github.com/augceo/vibe/internal/golden"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/llm/replay"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/schema"
)

// authored are the model answers the recording holds. They were written for
// this example and recorded through the replay recorder with `go test
// ./examples/calendar-mcp -run TestRecording -update`.
var authored = map[string]string{
	"LLM_llmContext1": `{"prepareQuery": {"attendees": ["alice@example.com", "bob@example.com"], "date": "2024-03-20", "durationMinutes": 30}}`,
	"LLM_llmContext2": `{"draftInvitation": {"to": ["bob@example.com"], "start": "2024-03-20T14:00:00Z",
		"subject": "30 minutes on 20 March, 14:00 UTC",
		"body": "Hi Bob,\n\nshall we meet on 20 March at 14:00 UTC for half an hour? It is the first time we are both free.\n\nAlice"}}`,
}

type authoredModel struct{}

func (authoredModel) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	a, ok := authored[req.Name]
	if !ok {
		return nil, &llm.APIError{Provider: "authored", Message: "no answer written for " + req.Name}
	}
	v, _ := jsonv.Parse([]byte(a))
	return &llm.Response{Content: string(jsonv.Marshal(v)), Model: "authored-for-the-example",
		Usage: llm.Usage{PromptTokens: int64(len(req.Messages[0].Content) / 4), CompletionTokens: int64(len(a) / 4)}}, nil
}

// inMemory are the example's actions on the calendar in this program.
func inMemory(t *testing.T) *action.Registry {
	pool := &action.MCPPool{}
	t.Cleanup(func() { pool.Close() })
	srv := action.MCPServer{InMemory: calendar.Server(calendar.Options{})}
	acts := &action.Registry{}
	acts.Register((&action.MCPTool{Server: srv, Tool: "find_free_slots", Pool: pool}).Action("findFreeSlots"))
	acts.Register((&action.MCPTool{Server: srv, Tool: "send_invitation", Pool: pool}).Action("sendInvitation"))
	return acts
}

// runInTestEnv runs the process in Temporal's test environment with the
// given model and the calendar in this program, approving the invitation.
func runInTestEnv(t *testing.T, model llm.Provider) process.View {
	t.Helper()
	reg, _, err := Recorded()
	if err != nil {
		t.Fatal(err)
	}
	d, err := reg.Document("aug:processes/book-meeting")
	if err != nil {
		t.Fatal(err)
	}
	acts := inMemory(t)
	p, err := compile.Compile(context.Background(), d.File, d.Value, compile.Options{Actions: acts.Names()})
	if err != nil {
		t.Fatal(err)
	}
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := s.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute}) // a busy machine may hold the workflow goroutine past the 1 s default
	shared := &durable.Activities{Provider: model, Actions: acts, Logger: slog.New(slog.DiscardHandler)}
	durable.Register(env, shared)
	process.RegisterWorkflows(env, shared.Actions)
	env.RegisterDelayedCallback(func() {
		answer, _ := jsonv.Parse([]byte(`{"approveInvitation":{"decision":"Approve"}}`))
		env.UpdateWorkflow(process.UpdateAnswer, "1", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { t.Error(err) }, OnAccept: func() {}, OnComplete: func(any, error) {},
		}, answer)
	}, time.Hour)
	env.ExecuteWorkflow(durable.ProcessWorkflow, durable.Start{Name: "book-meeting", Program: p.Program(), Prompt: Prompt})
	var v process.View
	if err := env.GetWorkflowResult(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestRecording replays the whole process from answers.jsonl against the
// calendar: a change to a prompt, a context, a schema or the calendar's
// answers that the recording no longer matches fails it; -update records
// the authored answers again.
func TestRecording(t *testing.T) {
	if golden.Update() {
		path := filepath.Join(t.TempDir(), "answers.jsonl")
		rec, err := replay.Record(authoredModel{}, path)
		if err != nil {
			t.Fatal(err)
		}
		runInTestEnv(t, rec)
		rec.Close()
		b, _ := os.ReadFile(path)
		if err := os.WriteFile("answers.jsonl", b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, model, err := Recorded()
	if golden.Update() { // the embedded copy is the one before the update
		model, err = replay.Open("answers.jsonl")
	}
	if err != nil {
		t.Fatal(err)
	}
	v := runInTestEnv(t, model)
	if v.Status != process.Completed || !v.Replayed {
		t.Fatalf("status %s, replayed %v, error %v", v.Status, v.Replayed, v.Error)
	}
	if got := string(jsonv.Marshal(v.State.Lookup("serverContext1").Lookup("findFreeSlots"))); got != `{"slots":[{"start":"2024-03-20T14:00:00Z","end":"2024-03-20T14:30:00Z"},{"start":"2024-03-20T16:30:00Z","end":"2024-03-20T17:00:00Z"}]}` {
		t.Errorf("free slots %s", got)
	}
	if got := v.State.Lookup("serverContext2").Lookup("sendInvitation").Lookup("status").Str(); got != "sent to bob@example.com" {
		t.Errorf("send status %q", got)
	}
}

// TestRunEmbedded runs the example as `go run` does, with the shipped
// actions file — the calendar server started over stdio — and the mail
// server unavailable once: Temporal retries the call, under the same
// idempotency key, and the invitation goes once.
func TestRunEmbedded(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine and builds the calendar server")
	}
	shipped, err := schema.ReadFile("actions.json")
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := os.Getwd()
	for _, a := range shipped.Object().Members() {
		m := a.Value.Lookup("mcp").Object()
		m.Set("args", jsonv.ArrayValue(append(m.Value().Lookup("args").Array(), jsonv.StringValue("-unavailable"), jsonv.StringValue("1"))...))
		m.Set("dir", jsonv.StringValue(dir))
	}
	actions := filepath.Join(t.TempDir(), "actions.json")
	os.WriteFile(actions, jsonv.Marshal(shipped), 0o600)

	var out strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx, t.TempDir(), actions, "Approve", &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"replayed from a recording", "✓ SERVER_serverContext1", "✓ USER_userContext", "✓ SERVER_serverContext2",
		`"status": "sent to bob@example.com"`, `"deliveries": 2`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestInputMismatch: a process whose step does not give find_free_slots
// what it takes is refused before it starts, with an error naming the step
// and each mismatch.
func TestInputMismatch(t *testing.T) {
	doc, _ := jsonv.Parse([]byte(`{"title": "Meet", "type": "object", "properties": {
		"llmContext1": {"type": "object", "properties": {"who": {"type": "object",
			"properties": {"people": {"type": "array", "items": {"type": "string"}}, "date": {"type": "string"}}, "required": ["people", "date"]}}},
		"serverContext1": {"type": "object", "properties": {"findFreeSlots": {"references": ["llmContext1.who"], "type": "object"}}}}}`))
	acts := inMemory(t)
	// No engine: a start that passed the check would fail on it.
	c := &process.Client{Actions: acts.Names(), Registered: acts}
	_, err := c.Start(context.Background(), process.StartOptions{Document: doc, File: "meet.json"})
	want := []string{
		"meet.json: /properties/serverContext1/properties/findFreeSlots: step serverContext1.findFreeSlots: its input does not fit the input schema of action findFreeSlots: /attendees: the schema requires it, and the value does not have it",
		"meet.json: /properties/serverContext1/properties/findFreeSlots: step serverContext1.findFreeSlots: its input does not fit the input schema of action findFreeSlots: /durationMinutes: the schema requires it, and the value does not have it",
		"meet.json: /properties/serverContext1/properties/findFreeSlots: step serverContext1.findFreeSlots: its input does not fit the input schema of action findFreeSlots: /people: the value may have it, and the schema admits no other properties than attendees, date, durationMinutes",
	}
	var got []string
	for _, e := range schema.Errors(err, "") {
		got = append(got, e.Error())
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
