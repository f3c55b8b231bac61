package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/schema"
)

// fakeProcesses stands in for the engine: one process, waiting for a
// decision.
type fakeProcesses struct {
	started []process.StartOptions
	answers []string
}

func (f *fakeProcesses) Start(ctx context.Context, opts process.StartOptions) (*process.Started, error) {
	if opts.Process == "aug:processes/broken" {
		return nil, schema.ErrorList{
			{File: "registry/processes/broken.json", Path: "/properties/a/references/0", Message: `step "a" references "b", which names no step`},
			{File: "registry/processes/broken.json", Path: "/required/0", Message: `required names "x"`},
		}
	}
	f.started = append(f.started, opts)
	return &process.Started{ID: "meeting-0001", Name: "meeting"}, nil
}

func (f *fakeProcesses) Get(ctx context.Context, id string) (*process.Info, error) {
	if id != "meeting-0001" {
		return nil, process.ErrNotFound
	}
	schema, _ := jsonv.Parse([]byte(`{"type":"object","properties":{"decision":{"enum":["Approve","Reject"]}}}`))
	state, _ := jsonv.Parse([]byte(`{"zeta":{"b":1,"a":2},"alpha":true}`))
	return &process.Info{ID: id, Process: "meeting", View: process.View{
		Status: process.Waiting, Done: []string{"LLM_a"}, State: state, Thinking: jsonv.NewObject(0).Value(), Metrics: jsonv.NewObject(0).Value(),
		Waiting: &process.Pending{Chunk: "USER_b", Schema: schema, Context: jsonv.NewObject(0).Value()},
	}}, nil
}

func (f *fakeProcesses) List(ctx context.Context, limit int) ([]process.Summary, error) {
	return []process.Summary{{ID: "meeting-0001", Process: "meeting", Status: process.Waiting}}, nil
}

func (f *fakeProcesses) Answer(ctx context.Context, id string, answer jsonv.Value) (*process.View, error) {
	if id != "meeting-0001" {
		return nil, process.ErrNotFound
	}
	if answer.Lookup("decision").Str() != "Approve" && answer.Lookup("decision").Str() != "Reject" {
		return nil, &process.RefusedError{Message: "the answer does not fit chunk USER_b: /decision: value must be one of 'Approve', 'Reject'"}
	}
	f.answers = append(f.answers, string(jsonv.Marshal(answer)))
	return &process.View{Status: process.Running}, nil
}

func call(t *testing.T, h http.Handler, method, path, body, token string) (int, map[string]any, string) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	raw, _ := io.ReadAll(rec.Body)
	var out map[string]any
	json.Unmarshal(raw, &out)
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s %s: Content-Type %q", method, path, ct)
	}
	return rec.Code, out, string(raw)
}

func quiet() Options { return Options{Logger: slogDiscard()} }

func TestStart(t *testing.T) {
	f := &fakeProcesses{}
	h := Handler(f, quiet())
	code, out, _ := call(t, h, "POST", "/v1/processes", `{"process":"aug:processes/meeting","prompt":"Meet Bob","input":{"z":1,"a":2}}`, "")
	if code != 201 || out["id"] != "meeting-0001" {
		t.Fatalf("%d %v", code, out)
	}
	if got := f.started[0]; got.Process != "aug:processes/meeting" || got.Prompt != "Meet Bob" || string(jsonv.Marshal(got.Input)) != `{"z":1,"a":2}` {
		t.Errorf("started with %+v", got)
	}
	code, _, _ = call(t, h, "POST", "/v1/processes", `{"process":{"title":"Inline","properties":{"a":{}}}}`, "")
	if code != 201 || f.started[1].Document.Lookup("title").Str() != "Inline" {
		t.Errorf("inline schema: %d", code)
	}
	tests := []struct {
		body, path, msg string
		code            int
	}{
		{`{"process": 42}`, "/process", "process must be a registry URI or an inline process schema", 400},
		{`{"prompt": "x"}`, "/process", "give the process to start", 400},
		{`{"process":"aug:x","colour":"red"}`, "/colour", `unknown field "colour"`, 400},
		{`{"process": "aug:x",}`, "", "the request body is not JSON", 400},
		{`[1]`, "", "the request body must be an object", 400},
		{`{"process":"aug:processes/broken"}`, "/properties/a/references/0", `step "a" references "b"`, 422},
	}
	for _, tt := range tests {
		code, out, raw := call(t, h, "POST", "/v1/processes", tt.body, "")
		if code != tt.code || out["path"] != tt.path || !strings.Contains(out["error"].(string), tt.msg) {
			t.Errorf("%s: %d %s", tt.body, code, raw)
		}
		if _, ok := out["details"].([]any); !ok {
			t.Errorf("%s: no details list: %s", tt.body, raw)
		}
	}
	_, out, _ = call(t, h, "POST", "/v1/processes", `{"process":"aug:processes/broken"}`, "")
	if d := out["details"].([]any); len(d) != 2 || d[1].(map[string]any)["file"] != "registry/processes/broken.json" {
		t.Errorf("details %v", d)
	}
}

func TestGetListAnswer(t *testing.T) {
	f := &fakeProcesses{}
	h := Handler(f, quiet())
	code, _, raw := call(t, h, "GET", "/v1/processes/meeting-0001", "", "")
	if code != 200 {
		t.Fatalf("%d %s", code, raw)
	}
	// The contract's fields, and state in its own order.
	for _, want := range []string{`"id": "meeting-0001"`, `"process": "meeting"`, `"status": "waiting"`, `"waiting": {`, `"chunk": "USER_b"`, `"usage": {`, `"metrics": {}`, `"error": null`} {
		if !strings.Contains(raw, want) {
			t.Errorf("GET lacks %s:\n%s", want, raw)
		}
	}
	v, _ := jsonv.Parse([]byte(raw))
	if got := string(jsonv.Marshal(v.Lookup("state"))); got != `{"zeta":{"b":1,"a":2},"alpha":true}` {
		t.Errorf("state %s: its order must be kept", got)
	}
	if code, out, _ := call(t, h, "GET", "/v1/processes/nope", "", ""); code != 404 || !strings.Contains(out["error"].(string), "no such process") {
		t.Errorf("unknown id: %d %v", code, out)
	}
	code, out, _ := call(t, h, "GET", "/v1/processes", "", "")
	if code != 200 || len(out["processes"].([]any)) != 1 {
		t.Errorf("list %d %v", code, out)
	}
	code, out, raw = call(t, h, "POST", "/v1/processes/meeting-0001/answer", `{"decision":"Maybe"}`, "")
	if code != 422 || out["path"] != "/decision" || len(f.answers) != 0 {
		t.Errorf("bad answer: %d %s", code, raw)
	}
	code, _, _ = call(t, h, "POST", "/v1/processes/meeting-0001/answer", `{"decision":"Approve"}`, "")
	if code != 200 || len(f.answers) != 1 {
		t.Errorf("good answer: %d %v", code, f.answers)
	}
	if code, _, _ := call(t, h, "DELETE", "/v1/processes/meeting-0001", "", ""); code != 404 && code != 405 {
		t.Errorf("DELETE: %d", code)
	}
}

func TestToken(t *testing.T) {
	h := Handler(&fakeProcesses{}, Options{Token: "s3cret", Logger: slogDiscard()})
	for _, tok := range []string{"", "wrong"} {
		code, out, _ := call(t, h, "GET", "/v1/processes", "", tok)
		if code != 401 || !strings.Contains(out["error"].(string), "token") {
			t.Errorf("token %q: %d %v", tok, code, out)
		}
	}
	if code, _, _ := call(t, h, "GET", "/v1/processes", "", "s3cret"); code != 200 {
		t.Errorf("right token: %d", code)
	}
}

// TestClient runs the Go client against the handler: errors come back as
// the server had them.
func TestClient(t *testing.T) {
	srv := httptest.NewServer(Handler(&fakeProcesses{}, Options{Token: "t", Logger: slogDiscard()}))
	defer srv.Close()
	c := &Client{BaseURL: srv.URL, Token: "t"}
	ctx := context.Background()
	st, err := c.Start(ctx, process.StartOptions{Process: "aug:processes/meeting"})
	if err != nil || st.ID != "meeting-0001" {
		t.Fatalf("%v %v", st, err)
	}
	info, err := c.Get(ctx, st.ID)
	if err != nil || info.Status != process.Waiting || string(jsonv.Marshal(info.State)) != `{"zeta":{"b":1,"a":2},"alpha":true}` {
		t.Fatalf("%+v %v", info, err)
	}
	_, err = c.Start(ctx, process.StartOptions{Process: "aug:processes/broken"})
	var list schema.ErrorList
	if !errors.As(err, &list) || len(list) != 2 || list[0].Error() != `registry/processes/broken.json: /properties/a/references/0: step "a" references "b", which names no step` {
		t.Errorf("compile errors: %v", err)
	}
	_, err = c.Answer(ctx, st.ID, jsonv.StringValue("x"))
	var refused *process.RefusedError
	if !errors.As(err, &refused) || len(refused.Problems()) != 1 || refused.Problems()[0].Path != "/decision" {
		t.Errorf("refusal: %v", err)
	}
	if _, err := c.Get(ctx, "nope"); !errors.Is(err, process.ErrNotFound) {
		t.Errorf("not found: %v", err)
	}
	if _, err := (&Client{BaseURL: srv.URL}).List(ctx, 0); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("no token: %v", err)
	}
}
