package process

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.temporal.io/sdk/client"

	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
)

// sequenced answers each chunk with its answers in turn (the last one
// again after that) and keeps every request.
type sequenced struct {
	mu       sync.Mutex
	answers  map[string][]string
	requests map[string][]*llm.Request
}

func (s *sequenced) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.requests == nil {
		s.requests = map[string][]*llm.Request{}
	}
	s.requests[req.Name] = append(s.requests[req.Name], req)
	as := s.answers[req.Name]
	a := as[min(len(s.requests[req.Name]), len(as))-1]
	return &llm.Response{Content: a, Model: "scripted", Usage: llm.Usage{PromptTokens: 10, CompletionTokens: 2}}, nil
}

func run(t *testing.T, doc string, p llm.Provider, acts *action.Registry) View {
	t.Helper()
	proc, err := compile.Compile(context.Background(), "test.json", mustParse(t, doc), compile.Options{Actions: acts.Names()})
	if err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, p, acts)
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "test-process"})
	env.ExecuteWorkflow(durable.ProcessWorkflow, durable.Start{Name: "test", Program: proc.Program(), Prompt: "Do it."})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var v View
	if err := env.GetWorkflowResult(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

const loopProcess = `{"type": "object", "properties": {
  "llmContext1": {"type": "object", "loop": {"done": "_loopDone", "max": 3}, "properties": {
    "_previousAttempt": {"type": "string"},
    "_loopDone": {"type": "boolean"},
    "draft": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}},
  "llmContext2": {"type": "object", "properties": {
    "title": {"type": "object", "references": ["llmContext1.draft"], "properties": {"text": {"type": "string"}}}}}}}`

// TestLoop: a Loop_Mixin chunk is asked again, its previous attempt in the
// prompt, until the model marks it done — or exactly the loop's maximum
// times, and then the process goes on with the last attempt.
func TestLoop(t *testing.T) {
	attempt := func(n int, done bool) string {
		return `{"_previousAttempt": "attempt ` + string(rune('0'+n)) + `", "_loopDone": ` + map[bool]string{true: "true", false: "false"}[done] + `, "draft": {"text": "draft ` + string(rune('0'+n)) + `"}}`
	}
	title := `{"title": {"text": "A title"}}`
	for _, tt := range []struct {
		name     string
		answers  []string
		requests int
		kept     string
	}{
		{"done on the second attempt", []string{attempt(1, false), attempt(2, true)}, 2, "draft 2"},
		{"never done: the maximum", []string{attempt(1, false), attempt(2, false), attempt(3, false), attempt(4, false)}, 3, "draft 3"},
		{"done at once", []string{attempt(1, true)}, 1, "draft 1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			model := &sequenced{answers: map[string][]string{"LLM_llmContext1": tt.answers, "LLM_llmContext2": {title}}}
			v := run(t, loopProcess, model, &action.Registry{})
			reqs := model.requests["LLM_llmContext1"]
			if len(reqs) != tt.requests {
				t.Fatalf("%d requests for the looped chunk, want %d", len(reqs), tt.requests)
			}
			for i, req := range reqs {
				prompt := req.Messages[0].Content
				if has := strings.Contains(prompt, "--- Your previous attempt"); has != (i > 0) || (i > 0 && !strings.Contains(prompt, `"text": "draft `+string(rune('0'+i))+`"`)) {
					t.Errorf("request %d's prompt:\n%s", i+1, prompt)
				}
			}
			if got := v.State.Lookup("llmContext1").Lookup("draft").Lookup("text").Str(); got != tt.kept {
				t.Errorf("kept %q, want the last attempt's %q", got, tt.kept)
			}
			if _, ok := v.State.Lookup("llmContext1").Get("_loopDone"); ok {
				t.Error("the loop's flag reached the state")
			}
			if got := v.Thinking.Lookup("LLM_llmContext1").Lookup("_previousAttempt").Str(); !strings.HasPrefix(got, "attempt") {
				t.Errorf("thinking %s", jsonv.Marshal(v.Thinking))
			}
			if n := len(v.Calls); n != tt.requests+1 || v.Usage.PromptTokens != int64(10*(tt.requests+1)) {
				t.Errorf("%d calls, usage %+v: every attempt is in the history and the usage", n, v.Usage)
			}
			if v.Status != Completed {
				t.Errorf("status %s", v.Status)
			}
		})
	}
}

// TestServerStepInputs: a blocking step's declared input (email) is asked
// of the model in the chunk before it, validated like any answer (a
// malformed email costs a repair turn), and the action receives exactly
// the inputs — over HTTP, as an endpoint sees them.
func TestServerStepInputs(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, string(b))
		io.WriteString(w, `{"userId": "u-1", "userName": "Jane"}`)
	}))
	defer srv.Close()
	var acts action.Registry
	acts.Register(action.Action{Name: "FindUser_Activity", Run: action.HTTP{URL: srv.URL}.Run})
	doc := `{"type": "object", "properties": {
	  "llmContext1": {"type": "object", "properties": {
	    "_considerations": {"type": "string"},
	    "request": {"type": "object", "properties": {"who": {"type": "string"}}, "required": ["who"]}}},
	  "serverContext1": {"type": "object", "properties": {
	    "FindUser_Activity": {"type": "object", "references": ["llmContext1.request"],
	      "properties": {"email": {"type": "string", "format": "email"},
	        "output": {"type": ["object", "null"], "properties": {"userId": {"type": "string"}, "userName": {"type": "string"}}, "required": ["userId", "userName"]}},
	      "required": ["email", "output"]}}}}}`
	bad := `{"_considerations": "Jane", "request": {"who": "Jane"}, "FindUser_Activity": {"email": "jane at example", "output": null}}`
	good := `{"_considerations": "Jane", "request": {"who": "Jane"}, "FindUser_Activity": {"email": "jane@example.com", "output": null}}`
	model := &sequenced{answers: map[string][]string{"LLM_llmContext1": {bad, good}}}
	v := run(t, doc, model, &acts)
	reqs := model.requests["LLM_llmContext1"]
	if len(reqs) != 2 || len(v.Calls) != 1 || len(v.Calls[0].Turns) != 2 || v.Calls[0].Turns[0].Problems[0].Path != "/FindUser_Activity/email" {
		t.Fatalf("calls %+v: one call, the malformed email repaired in a second turn", v.Calls)
	}
	if len(got) != 1 || got[0] != `{"email":"jane@example.com"}` {
		t.Errorf("the action received %q, want exactly its input", got)
	}
	if s := v.State.Lookup("serverContext1").Lookup("FindUser_Activity"); string(jsonv.Marshal(s)) != `{"input":{"email":"jane@example.com"},"output":{"userId":"u-1","userName":"Jane"}}` {
		t.Errorf("state %s", jsonv.Marshal(s))
	}
	if c := v.Thinking.Lookup("LLM_llmContext1").Lookup("_considerations").Str(); c != "Jane" {
		t.Errorf("thinking %s: a context's _ member is thinking", jsonv.Marshal(v.Thinking))
	}
	if _, ok := v.State.Lookup("llmContext1").Get("_considerations"); ok {
		t.Error("a context's _ member reached the state")
	}
}
