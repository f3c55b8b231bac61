package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
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
	"github.com/augceo/vibe/internal/golden"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/llm/replay"
	"github.com/augceo/vibe/process"
)

// authored are the model answers the recording holds. They were written for
// this example, in the seed's language, and recorded through the replay
// recorder with `go test ./examples/schedule-meeting -update`.
var authored = map[string]string{
	"LLM_llmContext1": `{
		"identifyParticipants": {"organizer": "alice@example.com", "attendee": "bob@example.com"},
		"fetchAvailability": {"organizerEmail": "alice@example.com", "attendeeEmail": "bob@example.com",
			"timeRange": {"start": "2024-03-20T09:00:00Z", "end": "2024-03-20T17:00:00Z"}}}`,
	"LLM_llmContext2": `{
		"findCommonSlot": {"selectedSlot": "2024-03-20T14:00:00Z",
			"reasoning": "14:00 — единственное время, когда свободны и Алиса, и Боб."},
		"draftInvitation": {"subject": "Встреча 20 марта в 14:00",
			"body": "Привет, Боб!\n\nПредлагаю встретиться 20 марта в 14:00 (UTC), чтобы всё обсудить.\n\nАлиса"}}`,
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

// runInTestEnv runs the whole process in Temporal's test environment with
// the given model, approving the invitation.
func runInTestEnv(t *testing.T, model llm.Provider) process.View {
	t.Helper()
	reg := Registry()
	d, err := reg.Document("aug:processes/schedule-meeting")
	if err != nil {
		t.Fatal(err)
	}
	acts := Actions()
	p, err := compile.Compile(context.Background(), d.File, d.Value, compile.Options{Actions: acts.Names()})
	if err != nil {
		t.Fatal(err)
	}
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := s.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute}) // a busy machine may hold the workflow goroutine past the 1 s default
	shared := &durable.Activities{Provider: model, Actions: acts}
	durable.Register(env, shared)
	process.RegisterWorkflows(env, shared.Actions)
	env.RegisterDelayedCallback(func() {
		answer, _ := jsonv.Parse([]byte(`{"confirmInvitation":{"decision":"Approve"}}`))
		env.UpdateWorkflow(process.UpdateAnswer, "1", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { t.Error(err) }, OnAccept: func() {}, OnComplete: func(any, error) {},
		}, answer)
	}, time.Hour)
	env.ExecuteWorkflow(durable.ProcessWorkflow, durable.Start{Name: "schedule-meeting", Program: p.Program(), Prompt: Prompt})
	var v process.View
	if err := env.GetWorkflowResult(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestRecording replays the whole process from answers.jsonl: if a change
// to the prompt, the context or a schema makes a request the recording does
// not hold, this fails; -update records the authored answers again.
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
	model, err := Recording()
	if golden.Update() { // the embedded copy is the one before the update
		model, err = replay.Open("answers.jsonl")
	}
	if err != nil {
		t.Fatal(err)
	}
	v := runInTestEnv(t, model)
	if v.Status != process.Completed || !v.Replayed {
		t.Fatalf("status %s, replayed %v", v.Status, v.Replayed)
	}
	if got := v.State.Lookup("serverContext2").Lookup("sendInvitation").Lookup("status").Str(); got != "sent" {
		t.Errorf("send status %q", got)
	}
	if got := v.State.Lookup("llmContext2").Lookup("findCommonSlot").Lookup("selectedSlot").Str(); got != "2024-03-20T14:00:00Z" {
		t.Errorf("slot %q", got)
	}
}

func TestRunEmbedded(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded Temporal server")
	}
	var out strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx, t.TempDir(), "Approve", strings.NewReader(""), &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"replayed from a recording", "✓ LLM_llmContext1", "✓ USER_userContext", "✓ SERVER_serverContext2", "Completed.", `"status": "sent"`,
		"In English: an invitation from alice@example.com to bob@example.com to meet at 2024-03-20T14:00:00Z.",
		"In English: alice@example.com and bob@example.com meet at 2024-03-20T14:00:00Z"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestServeActions: -serve-actions answers the actions file's endpoints
// with the Go actions, as the vibe command's HTTP actions call them, and
// applies each idempotency key once.
func TestServeActions(t *testing.T) {
	var log strings.Builder
	srv := httptest.NewServer(actionsHandler(&log))
	defer srv.Close()
	acts, err := action.Load("actions.json", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile("actions.json")
	file, _ := jsonv.Parse(b)
	for _, name := range []string{"FetchAvailability_Activity", "sendInvitation"} {
		url := file.Lookup(name).Str()
		if url == "" {
			url = file.Lookup(name).Lookup("url").Str()
		}
		if url != "http://127.0.0.1:8091/"+name {
			t.Errorf("actions.json: %s at %q", name, url)
		}
	}
	if len(acts) != 2 {
		t.Errorf("actions.json: %d actions", len(acts))
	}
	post := func(name, key, body string) string {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/"+name, strings.NewReader(body))
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(b)))
	}
	if got := post("FetchAvailability_Activity", "k1", `{"llmContext1":{"fetchAvailability":{"timeRange":{"start":"2024-03-20T09:00:00Z"}}}}`); !strings.HasPrefix(got, `200 {"organizerSlots":["2024-03-20T10:00:00Z",`) {
		t.Errorf("FetchAvailability_Activity: %s", got)
	}
	if got := post("FetchAvailability_Activity", "k2", `{"llmContext1":{"fetchAvailability":{"timeRange":{"start":"soon"}}}}`); !strings.HasPrefix(got, "422 ") {
		t.Errorf("a bad time range is not retried: %s", got)
	}
	send := `{"llmContext1":{"identifyParticipants":{"organizer":"a@x","attendee":"b@x"}},"llmContext2":{"draftInvitation":{"subject":"s","body":"b"}},"userContext":{"confirmInvitation":{"decision":"Approve"}}}`
	first, again := post("sendInvitation", "k3", send), post("sendInvitation", "k3", send)
	if first != `200 {"messageId":"msg-b@x","status":"sent"}` || again != first {
		t.Errorf("sendInvitation: %s, then %s", first, again)
	}
}
