package api

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/schema"
)

// fakeProcesses stands in for the engine: one process, waiting for a
// decision; one completed, one failed; a list of five.
type fakeProcesses struct {
	started []process.StartOptions
	answers []string
	// startErr, when set, is Start's error.
	startErr error
	// listErr, when set, is List's error, given with a page of one.
	listErr error
}

func (f *fakeProcesses) Start(ctx context.Context, opts process.StartOptions) (*process.Started, error) {
	if f.startErr != nil {
		return nil, f.startErr
	}
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
		return nil, fmt.Errorf("%w: %s", process.ErrNotFound, id)
	}
	schema, _ := jsonv.Parse([]byte(`{"type":"object","properties":{"decision":{"enum":["Approve","Reject"]}}}`))
	state, _ := jsonv.Parse([]byte(`{"zeta":{"b":1,"a":2},"alpha":true}`))
	return &process.Info{ID: id, Process: "meeting", View: process.View{
		Status: process.Waiting, Done: []string{"LLM_a"}, State: state, Thinking: jsonv.NewObject(0).Value(), Metrics: jsonv.NewObject(0).Value(),
		Waiting: &process.Pending{Chunk: "USER_b", Schema: schema, Context: jsonv.NewObject(0).Value()},
	}}, nil
}

// List pages over five processes; its cursor is the offset.
func (f *fakeProcesses) List(ctx context.Context, opts process.ListOptions) (process.Page, error) {
	if f.listErr != nil {
		return process.Page{Processes: []process.Summary{{ID: "p-5"}}}, f.listErr
	}
	all := []string{"p-5", "p-4", "p-3", "p-2", "p-1"}
	from := 0
	if opts.Cursor != "" {
		n, err := strconv.Atoi(opts.Cursor)
		if err != nil || n < 0 || n >= len(all) {
			return process.Page{}, fmt.Errorf("list processes: cursor %q: %w", opts.Cursor, durable.ErrBadCursor)
		}
		from = n
	}
	to := min(from+cmp.Or(opts.Limit, durable.DefaultListLimit), len(all))
	var page process.Page
	for _, id := range all[from:to] {
		page.Processes = append(page.Processes, process.Summary{ID: id, Process: "meeting", Status: process.Waiting})
	}
	if to < len(all) {
		page.Next = strconv.Itoa(to)
	}
	return page, nil
}

func (f *fakeProcesses) Answer(ctx context.Context, id string, answer jsonv.Value) (*process.View, error) {
	switch id {
	case "done-0001":
		return nil, &process.NotWaitingError{ID: id, Status: process.Completed}
	case "failed-0001":
		return nil, &process.NotWaitingError{ID: id, Status: process.Failed}
	}
	if id != "meeting-0001" {
		return nil, process.ErrNotFound
	}
	if answer.Lookup("decision").Str() != "Approve" && answer.Lookup("decision").Str() != "Reject" {
		return nil, &process.RefusedError{Message: "the answer does not fit chunk USER_b: /decision: value must be one of 'Approve', 'Reject'"}
	}
	f.answers = append(f.answers, string(jsonv.Marshal(answer)))
	return &process.View{Status: process.Running}, nil
}

// call sends a request as a local client would: to the loopback address
// the server listens on, JSON when it has a body.
func call(t *testing.T, h http.Handler, method, path, body, token string) (int, map[string]any, string) {
	t.Helper()
	req := httptest.NewRequest(method, "http://127.0.0.1:8080"+path, strings.NewReader(body))
	if method == "POST" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := serve(t, h, req)
	return rec.Code, decoded(t, rec), rec.Body.String()
}

func serve(t *testing.T, h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s %s: Content-Type %q", req.Method, req.URL, ct)
	}
	return rec
}

// decoded is the answer's JSON; an error answer must have the API's error
// shape: "error" a text, "path" a text, "details" a list.
func decoded(t *testing.T, rec *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	var out map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Errorf("%d: the body is not JSON: %v\n%s", rec.Code, err, rec.Body)
	}
	if rec.Code >= 400 {
		_, e := out["error"].(string)
		_, p := out["path"].(string)
		_, d := out["details"].([]any)
		if !e || !p || !d || len(out) != 3 {
			t.Errorf("%d: not the API's error shape {error, path, details}: %s", rec.Code, rec.Body)
		}
	}
	return out
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
	code, _, _ = call(t, h, "POST", "/v1/processes", `{"pipeline":"prompt | Triage","name":"triage of the week"}`, "")
	if code != 201 || f.started[2].Pipeline != "prompt | Triage" || f.started[2].Name != "triage of the week" {
		t.Errorf("a named pipeline: %d %+v", code, f.started[2])
	}
	tests := []struct {
		body, path, msg string
		code            int
	}{
		{`{"process": 42}`, "/process", "process must be a registry URI or an inline process schema", 400},
		{`{"prompt": "x"}`, "/process", "give the process to start", 400},
		{`{"process":"aug:x","colour":"red"}`, "/colour", `unknown field "colour"`, 400},
		{`{"process":"aug:x","name":7}`, "/name", "name must be a string", 400},
		{`{"process": "aug:x",}`, "", "the request body is not JSON", 400},
		{`{"process":"aug:x","input":{"n":1e400}}`, "/input/n", "the request body: /input/n: number 1e400 is out of range", 400},
		{`{"process":"aug:x","input":[-2e308]}`, "/input/0", "number -2e308 is out of range", 400},
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
	if code != 200 || len(out["processes"].([]any)) != 5 || out["next"] != nil {
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

// TestTokenThrottle: a client that sends 20 wrong tokens in a row gets
// 401 five times, then 429 with Retry-After — for the right token too,
// which it cannot tell from a wrong one then — while another client with
// the right token is served. A request without the header is no guess.
func TestTokenThrottle(t *testing.T) {
	h := Handler(&fakeProcesses{}, Options{Token: "s3cret", Logger: slogDiscard()})
	from := func(client, token string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", "/v1/processes", nil)
		r.RemoteAddr = client
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	for range 10 {
		if w := from("192.0.2.1:1000", ""); w.Code != 401 {
			t.Fatalf("no token: %d", w.Code)
		}
	}
	for i := 1; i <= 20; i++ {
		w := from("192.0.2.1:1000", "wrong")
		want := 401
		if i > 5 {
			want = 429
		}
		if w.Code != want || (want == 429 && (w.Header().Get("Retry-After") != "2" || !strings.Contains(w.Body.String(), "too many wrong tokens"))) {
			t.Fatalf("wrong try %d: %d %q %s", i, w.Code, w.Header().Get("Retry-After"), w.Body)
		}
	}
	if w := from("192.0.2.1:1001", "s3cret"); w.Code != 429 {
		t.Errorf("the right token from the throttled client: %d", w.Code)
	}
	if w := from("192.0.2.2:1000", "s3cret"); w.Code != 200 {
		t.Errorf("the right token from another client: %d", w.Code)
	}
}

// TestClient runs the Go client against the handler: errors come back as
// the server had them.
func TestClient(t *testing.T) {
	srv := httptest.NewServer(Handler(&fakeProcesses{}, Options{Token: "t", Logger: slogDiscard()}))
	defer srv.Close()
	c := &Client{BaseURL: srv.URL, Token: "t"}
	ctx := context.Background()
	f := &fakeProcesses{}
	named := httptest.NewServer(Handler(f, Options{Token: "t", Logger: slogDiscard()}))
	defer named.Close()
	if _, err := (&Client{BaseURL: named.URL, Token: "t"}).Start(ctx, process.StartOptions{Pipeline: "A | B", Name: "ab"}); err != nil || f.started[0].Name != "ab" || f.started[0].Pipeline != "A | B" {
		t.Errorf("a named start: %v %+v", err, f.started)
	}
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
	if _, err := (&Client{BaseURL: srv.URL}).List(ctx, process.ListOptions{}); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("no token: %v", err)
	}
}

// cancelable is fakeProcesses that can cancel: the API then serves
// POST /v1/processes/{id}/cancel.
type cancelable struct {
	fakeProcesses
	cancelled []string
}

func (c *cancelable) Cancel(ctx context.Context, id string) error {
	if id != "meeting-0001" {
		return process.ErrNotFound
	}
	c.cancelled = append(c.cancelled, id)
	return nil
}

func TestCancel(t *testing.T) {
	f := &cancelable{}
	srv := httptest.NewServer(Handler(f, quiet()))
	defer srv.Close()
	c := &Client{BaseURL: srv.URL}
	if err := c.Cancel(context.Background(), "meeting-0001"); err != nil || len(f.cancelled) != 1 {
		t.Errorf("cancel: %v %v", err, f.cancelled)
	}
	if err := c.Cancel(context.Background(), "nope"); !errors.Is(err, process.ErrNotFound) {
		t.Errorf("unknown id: %v", err)
	}
	// A Processes that cannot cancel says so.
	if code, out, _ := call(t, Handler(&fakeProcesses{}, quiet()), "POST", "/v1/processes/meeting-0001/cancel", "", ""); code != 501 || !strings.Contains(out["error"].(string), "cannot cancel") {
		t.Errorf("without Cancel: %d %v", code, out)
	}
}

// TestMounts: a mounted handler is served behind the same token check.
func TestMounts(t *testing.T) {
	mounted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		// A stream reaches the connection through the API's own writer.
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Errorf("flush: %v", err)
		}
		io.WriteString(w, `{"mounted": true}`)
	})
	h := Handler(&fakeProcesses{}, Options{Token: "s3cret", Logger: slogDiscard(), Mounts: map[string]http.Handler{"/mcp": mounted}})
	if code, _, _ := call(t, h, "POST", "/mcp", "{}", ""); code != 401 {
		t.Errorf("without the token: %d", code)
	}
	if code, out, _ := call(t, h, "POST", "/mcp", "{}", "s3cret"); code != 200 || out["mounted"] != true {
		t.Errorf("with the token: %d %v", code, out)
	}
	// Without a token, the guard of loopback applies to it as well.
	open := Handler(&fakeProcesses{}, Options{Logger: slogDiscard(), Mounts: map[string]http.Handler{"/mcp": mounted}})
	req := httptest.NewRequest("POST", "http://rebound.example:8080/mcp", strings.NewReader("{}"))
	req.Header.Set("Content-Type", "application/json")
	if rec := serve(t, open, req); rec.Code != http.StatusForbidden {
		t.Errorf("a foreign Host: %d", rec.Code)
	}
}

// answersAs is fakeProcesses that records who the API says sent each
// answer (AnswersAs).
type answersAs struct {
	*fakeProcesses
	by []string
}

func (f *answersAs) AnswerAs(ctx context.Context, id string, answer jsonv.Value, by string) (*process.View, error) {
	f.by = append(f.by, by)
	return f.Answer(ctx, id, answer)
}

// TestAnswerRecordsWho: the API's answers are recorded as an API client's,
// with the token or on loopback without one.
func TestAnswerRecordsWho(t *testing.T) {
	for _, tc := range []struct{ token, want string }{
		{"", "an API client on loopback (no token)"},
		{"s3cret", "an API client with the token"},
	} {
		f := &answersAs{fakeProcesses: &fakeProcesses{}}
		h := Handler(f, Options{Token: tc.token, Logger: slogDiscard()})
		if code, _, raw := call(t, h, "POST", "/v1/processes/meeting-0001/answer", `{"decision":"Approve"}`, tc.token); code != 200 {
			t.Fatalf("%d %s", code, raw)
		}
		if len(f.by) != 1 || f.by[0] != tc.want {
			t.Errorf("token %q: recorded as %q, want %q", tc.token, f.by, tc.want)
		}
	}
}
