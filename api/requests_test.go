package api

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/request"
	"github.com/augceo/vibe/schema"
	"github.com/augceo/vibe/vessel"
)

// fakeRequests stands in for request.Client: one request, running with one
// call finished; a list of five; the Vessel aug:vessels/broken, the
// registry's missing aug:vessels/nope and a context without a plan refused
// as request.Client refuses them.
type fakeRequests struct {
	started []request.StartOptions
}

func (f *fakeRequests) Start(ctx context.Context, opts request.StartOptions) (*request.Started, error) {
	switch {
	case opts.Vessel == "aug:vessels/broken":
		return nil, schema.ErrorList{
			{File: "registry/vessels/broken.json", Path: "/tools/0", Message: `unknown $ref "aug:instructions/x"`},
			{File: "registry/vessels/broken.json", Path: "/mixins", Message: "mixins must be an array of registry URIs"},
		}
	case opts.Vessel == "aug:vessels/nope":
		return nil, fmt.Errorf("%w: no file registry/vessels/nope.json", registry.ErrNotFound)
	case opts.Document.Lookup("colour").Str() != "":
		return nil, schema.ErrorList{{File: opts.File, Path: "/colour", Message: `unknown key "colour"`}}
	case schema.CheckName(opts.Document.Lookup("name").Str()) != nil:
		_, err := vessel.Parse(opts.File, opts.Document) // as request.Client parses an inline Vessel
		return nil, err
	case opts.Plan && opts.Context.Len() == 0:
		return nil, &schema.Error{File: opts.ContextFile, Message: "the context holds no plan message"}
	case opts.Plan:
		return nil, schema.ErrorList{
			{File: opts.ContextFile, Path: "/0/calls/0/_tool", Message: `call 1 (nope): unknown tool "nope"`},
			{File: opts.ContextFile, Path: "/0/calls/1", Message: "call 2 (updateTask): parameters break the tool's schema: missing property 'newTask'"},
		}
	case opts.MaxDepth > 4:
		return nil, &request.BoundError{What: request.BoundDepth, Asked: opts.MaxDepth, Bound: 4}
	}
	f.started = append(f.started, opts)
	return &request.Started{ID: "vessel-accountant-0001", Vessel: "Accountant"}, nil
}

func (f *fakeRequests) Get(ctx context.Context, id string) (*request.Info, error) {
	if id != "vessel-accountant-0001" {
		return nil, fmt.Errorf("%w: %s", request.ErrNotFound, id)
	}
	states, _ := jsonv.Parse([]byte(`{"":{"launched":{"process":"BillingReportProcess","id":"BillingReportProcess-1a2b3c4d"}},"zeta":{"b":1,"a":2},"alpha":{}}`))
	decision, _ := jsonv.Parse([]byte(`{"_reasoning":"a report","calls":[{"_tool":"BillingReportProcess"},{"_tool":"answerQuestion"}]}`))
	result, _ := jsonv.Parse([]byte(`{"process":"BillingReportProcess","id":"BillingReportProcess-1a2b3c4d"}`))
	return &request.Info{ID: id, Vessel: "Accountant", Status: process.Running, Decision: decision, States: states,
		Calls: []vessel.CallResult{
			{Index: 0, Tool: "BillingReportProcess", Params: jsonv.NewObject(0).Value(), Output: "state.launched", Result: result},
			{Index: 2, Tool: "speak", Params: jsonv.NewObject(0).Value(), Result: jsonv.NullValue(), Error: "speak: the delegate failed", Run: id + "-speaker-ab12cd"},
		},
		Usage: llm.Usage{PromptTokens: 120, CompletionTokens: 30}}, nil
}

// List pages over five requests; its cursor is the offset.
func (f *fakeRequests) List(ctx context.Context, opts request.ListOptions) (request.Page, error) {
	all := []string{"r-5", "r-4", "r-3", "r-2", "r-1"}
	from := 0
	if opts.Cursor != "" {
		n, err := strconv.Atoi(opts.Cursor)
		if err != nil || n < 0 || n >= len(all) {
			return request.Page{}, fmt.Errorf("list requests: cursor %q: %w", opts.Cursor, durable.ErrBadCursor)
		}
		from = n
	}
	to := min(from+cmp.Or(opts.Limit, durable.DefaultListLimit), len(all))
	var page request.Page
	for _, id := range all[from:to] {
		page.Requests = append(page.Requests, request.Summary{ID: id, Vessel: "Accountant", Status: process.Completed})
	}
	if to < len(all) {
		page.Next = strconv.Itoa(to)
	}
	return page, nil
}

func withRequests(f *fakeRequests) Options {
	return Options{Logger: slogDiscard(), Requests: f}
}

func TestStartRequest(t *testing.T) {
	f := &fakeRequests{}
	h := Handler(&fakeProcesses{}, withRequests(f))
	code, out, raw := call(t, h, "POST", "/v1/requests", `{"vessel":"aug:vessels/accountant","prompt":"Q1 report","context":[{"type":"input","z":1,"a":2}],"decision":{"calls":[]},"delegateDepth":2,"delegateFanOut":8}`, "")
	if code != 201 || out["id"] != "vessel-accountant-0001" || out["vessel"] != "Accountant" {
		t.Fatalf("%d %s", code, raw)
	}
	got := f.started[0]
	if got.Vessel != "aug:vessels/accountant" || got.Prompt != "Q1 report" || string(jsonv.Marshal(got.Context)) != `[{"type":"input","z":1,"a":2}]` ||
		string(jsonv.Marshal(got.Decision)) != `{"calls":[]}` || got.Plan || got.MaxDepth != 2 || got.MaxFanOut != 8 || got.File != "vessel" || got.ContextFile != "context" {
		t.Errorf("started with %+v", got)
	}
	code, _, raw = call(t, h, "POST", "/v1/requests", `{"vessel":{"name":"Inline","tools":["aug:instructions/a"]}}`, "")
	if code != 201 || f.started[1].Document.Lookup("name").Str() != "Inline" {
		t.Errorf("an inline Vessel: %d %s", code, raw)
	}
	code, _, raw = call(t, h, "POST", "/v1/plans", `{"vessel":"aug:vessels/manager","context":[]}`, "")
	if code != 422 || !strings.Contains(raw, `"file": "context"`) || !strings.Contains(raw, "the context holds no plan message") {
		t.Errorf("a plan without a plan: %d %s", code, raw)
	}

	tests := []struct {
		path, body, at, msg string
		code                int
	}{
		{"/v1/requests", `{"vessel": 42}`, "/vessel", "vessel must be a registry URI or an inline Vessel", 400},
		{"/v1/requests", `{"vessel":"http://example.com/v.json"}`, "/vessel", "is not a registry URI", 400},
		{"/v1/requests", `{"prompt": "x"}`, "/vessel", "give the Vessel", 400},
		{"/v1/requests", `{"vessel":"aug:v","colour":"red"}`, "/colour", `unknown field "colour" (want vessel, prompt, context, decision, delegateDepth, delegateFanOut)`, 400},
		{"/v1/requests", `{"vessel":"aug:v","prompt":7}`, "/prompt", "prompt must be a string", 400},
		{"/v1/requests", `{"vessel":"aug:v","context":{"type":"input"}}`, "/context", "context must be an array of messages", 400},
		{"/v1/requests", `{"vessel":"aug:v","decision":[]}`, "/decision", "decision must be an object", 400},
		{"/v1/requests", `{"vessel":"aug:v","delegateDepth":0}`, "/delegateDepth", "delegateDepth must be a positive integer", 400},
		{"/v1/requests", `{"vessel":"aug:v","delegateFanOut":2.5}`, "/delegateFanOut", "delegateFanOut must be a positive integer", 400},
		{"/v1/requests", `{"vessel":"aug:v","delegateDepth":9}`, "/delegateDepth", "a delegate depth of 9 is past the bound of 4 here", 400},
		{"/v1/requests", `["aug:v"]`, "", "the request body must be an object", 400},
		{"/v1/requests", `{"vessel":"aug:v",}`, "", "the request body is not JSON", 400},
		{"/v1/requests", `{"vessel":"aug:vessels/nope"}`, "", "no file registry/vessels/nope.json", 404},
		{"/v1/requests", `{"vessel":"aug:vessels/broken"}`, "/tools/0", `unknown $ref "aug:instructions/x"`, 422},
		{"/v1/requests", `{"vessel":{"name":"X","colour":"red"}}`, "/colour", `unknown key "colour"`, 422},
		{"/v1/requests", `{"vessel":{"name":"Te\u0000am","tools":["aug:instructions/updateTask"]}}`, "/name", `holds U+0000, a control character`, 422},
		{"/v1/requests", `{"vessel":{"name":"Team\u202egnp.exe","tools":["aug:instructions/updateTask"]}}`, "/name", `holds U+202E, a bidirectional text control`, 422},
		{"/v1/plans", `{"vessel":"aug:v","prompt":"x"}`, "/prompt", `unknown field "prompt" (want vessel, context, delegateDepth, delegateFanOut)`, 400},
		{"/v1/plans", `{"vessel":"aug:v","decision":{}}`, "/decision", `unknown field "decision"`, 400},
		{"/v1/plans", `{"context":[]}`, "/vessel", "give the Vessel", 400},
		{"/v1/plans", `{"vessel":"aug:v","context":[{"type":"plan","calls":[{"_tool":"nope"},{"_tool":"updateTask"}]}]}`, "/0/calls/0/_tool", `unknown tool "nope"`, 422},
	}
	for _, tt := range tests {
		t.Run(tt.path+" "+tt.body, func(t *testing.T) {
			f := &fakeRequests{}
			code, out, raw := call(t, Handler(&fakeProcesses{}, withRequests(f)), "POST", tt.path, tt.body, "")
			if code != tt.code || out["path"] != tt.at || !strings.Contains(fmt.Sprint(out["error"]), tt.msg) {
				t.Errorf("%d %s", code, raw)
			}
			if len(f.started) > 0 {
				t.Errorf("started %+v", f.started)
			}
		})
	}
	// Every problem of a refused Vessel or plan, each in its file at its
	// path.
	_, out, _ = call(t, h, "POST", "/v1/requests", `{"vessel":"aug:vessels/broken"}`, "")
	if d := out["details"].([]any); len(d) != 2 || d[1].(map[string]any)["file"] != "registry/vessels/broken.json" || d[1].(map[string]any)["path"] != "/mixins" {
		t.Errorf("details %v", d)
	}
	_, out, _ = call(t, h, "POST", "/v1/plans", `{"vessel":"aug:v","context":[{"type":"plan","calls":[]}]}`, "")
	if d := out["details"].([]any); len(d) != 2 || d[1].(map[string]any)["file"] != "context" || d[1].(map[string]any)["path"] != "/0/calls/1" {
		t.Errorf("plan details %v", d)
	}
}

func TestGetAndListRequests(t *testing.T) {
	h := Handler(&fakeProcesses{}, withRequests(&fakeRequests{}))
	code, _, raw := call(t, h, "GET", "/v1/requests/vessel-accountant-0001", "", "")
	if code != 200 {
		t.Fatalf("%d %s", code, raw)
	}
	// The contract's fields: status, decision, each call with its result
	// or error and its run, the states in their order, the usage.
	for _, want := range []string{`"id": "vessel-accountant-0001"`, `"vessel": "Accountant"`, `"status": "running"`, `"_reasoning": "a report"`,
		`"tool": "BillingReportProcess"`, `"output": "state.launched"`, `"id": "BillingReportProcess-1a2b3c4d"`,
		`"error": "speak: the delegate failed"`, `"run": "vessel-accountant-0001-speaker-ab12cd"`, `"promptTokens": 120`, `"error": null`} {
		if !strings.Contains(raw, want) {
			t.Errorf("GET lacks %s:\n%s", want, raw)
		}
	}
	v, _ := jsonv.Parse([]byte(raw))
	if got := string(jsonv.Marshal(v.Lookup("states"))); got != `{"":{"launched":{"process":"BillingReportProcess","id":"BillingReportProcess-1a2b3c4d"}},"zeta":{"b":1,"a":2},"alpha":{}}` {
		t.Errorf("states %s: their order must be kept", got)
	}
	for _, tt := range []struct {
		path, msg string
		code      int
	}{
		{"/v1/requests/nope", "no such request: nope", 404},
		{"/v1/requests/a%20b", `"a b" is not a request id`, 400},
		{"/v1/requests?limit=0", `limit "0"`, 400},
		{"/v1/requests?cursor=zzz", `cursor "zzz": not a cursor of this list`, 400},
		{"/v1/requests?page=2", `unknown parameter "page"`, 400},
	} {
		if code, out, raw := call(t, h, "GET", tt.path, "", ""); code != tt.code || !strings.Contains(fmt.Sprint(out["error"]), tt.msg) {
			t.Errorf("%s: %d %s", tt.path, code, raw)
		}
	}

	ids := pageThrough(t, h, "/v1/requests", "requests")
	if strings.Join(ids, " ") != "r-5 r-4 r-3 r-2 r-1" {
		t.Errorf("paged through %v", ids)
	}
}

// TestRequestRoutes: the request routes answer like the process routes —
// 405 with Allow, 415 without JSON, 401 without the token, 403 from another
// origin — and are unknown without Options.Requests.
func TestRequestRoutes(t *testing.T) {
	h := Handler(&fakeProcesses{}, withRequests(&fakeRequests{}))
	for _, tt := range []struct {
		method, path, allow string
	}{
		{"DELETE", "/v1/requests/vessel-accountant-0001", "GET, HEAD"},
		{"PUT", "/v1/requests", "GET, HEAD, POST"},
		{"GET", "/v1/plans", "POST"},
	} {
		rec := serve(t, h, httptest.NewRequest(tt.method, "http://127.0.0.1:8080"+tt.path, nil))
		if out := decoded(t, rec); rec.Code != 405 || rec.Header().Get("Allow") != tt.allow || !strings.Contains(fmt.Sprint(out["error"]), "does not take "+tt.method) {
			t.Errorf("%s %s: %d Allow %q %s", tt.method, tt.path, rec.Code, rec.Header().Get("Allow"), rec.Body)
		}
	}
	for _, path := range []string{"/v1/requests", "/v1/plans"} {
		f := &fakeRequests{}
		req := httptest.NewRequest("POST", "http://127.0.0.1:8080"+path, strings.NewReader(`{"vessel":"aug:v"}`))
		req.Header.Set("Content-Type", "text/plain")
		if rec := serve(t, Handler(&fakeProcesses{}, withRequests(f)), req); rec.Code != 415 || len(f.started) > 0 {
			t.Errorf("%s as text: %d %s", path, rec.Code, rec.Body)
		}
		req = httptest.NewRequest("POST", "http://127.0.0.1:8080"+path, strings.NewReader(`{"vessel":"aug:v"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", "https://evil.example")
		if rec := serve(t, Handler(&fakeProcesses{}, withRequests(f)), req); rec.Code != 403 || len(f.started) > 0 {
			t.Errorf("%s from another origin: %d %s", path, rec.Code, rec.Body)
		}
		if code, _, raw := call(t, Handler(&fakeProcesses{}, Options{Token: "s3cret", Logger: slogDiscard(), Requests: f}), "POST", path, `{"vessel":"aug:v"}`, ""); code != 401 || len(f.started) > 0 {
			t.Errorf("%s without the token: %d %s", path, code, raw)
		}
		if code, _, raw := call(t, Handler(&fakeProcesses{}, quiet()), "POST", path, `{"vessel":"aug:v"}`, ""); code != 404 || !strings.Contains(raw, "no such endpoint") {
			t.Errorf("%s without Requests: %d %s", path, code, raw)
		}
	}
}

// TestRequestClient runs the Go client against the handler: a start goes
// to its route, the server's problems come back as the caller named the
// inline parts, and unknown ids as request.ErrNotFound.
func TestRequestClient(t *testing.T) {
	f := &fakeRequests{}
	srv := httptest.NewServer(Handler(&fakeProcesses{}, Options{Token: "t", Logger: slogDiscard(), Requests: f}))
	defer srv.Close()
	c := (&Client{BaseURL: srv.URL, Token: "t"}).Requests()
	ctx := context.Background()
	st, err := c.Start(ctx, request.StartOptions{Document: mustJSON(t, `{"name":"Accountant"}`), File: "accountant.vessel.json", Prompt: "Q1", Context: mustJSON(t, `[{"type":"input","b":1,"a":2}]`), MaxFanOut: 3})
	if err != nil || st.ID != "vessel-accountant-0001" || st.Vessel != "Accountant" {
		t.Fatalf("%+v %v", st, err)
	}
	if got := f.started[0]; got.Prompt != "Q1" || string(jsonv.Marshal(got.Context)) != `[{"type":"input","b":1,"a":2}]` || got.MaxFanOut != 3 || got.MaxDepth != 0 {
		t.Errorf("the server started %+v", got)
	}
	info, err := c.Get(ctx, st.ID)
	if err != nil || info.Status != process.Running || len(info.Calls) != 2 || info.Calls[1].Run == "" || string(jsonv.Marshal(info.States.Lookup("zeta"))) != `{"b":1,"a":2}` {
		t.Fatalf("%+v %v", info, err)
	}
	if _, err := c.Get(ctx, "nope"); !errors.Is(err, request.ErrNotFound) {
		t.Errorf("an unknown id: %v", err)
	}
	page, err := c.List(ctx, request.ListOptions{Limit: 3})
	if err != nil || len(page.Requests) != 3 || page.Next != "3" {
		t.Fatalf("%+v %v", page, err)
	}
	if page, err = c.List(ctx, request.ListOptions{Cursor: page.Next}); err != nil || len(page.Requests) != 2 || page.Requests[0].ID != "r-2" || page.Next != "" {
		t.Fatalf("%+v %v", page, err)
	}

	errorTexts := func(err error) string {
		var lines []string
		for _, e := range schema.Errors(err, "") {
			lines = append(lines, e.Error())
		}
		return strings.Join(lines, "\n")
	}
	_, err = c.Start(ctx, request.StartOptions{Document: mustJSON(t, `{"name":"X","colour":"red"}`), File: "my.vessel.json"})
	if got := errorTexts(err); got != `my.vessel.json: /colour: unknown key "colour"` {
		t.Errorf("an inline Vessel's problem: %q", got)
	}
	_, err = c.Start(ctx, request.StartOptions{Vessel: "aug:v", Plan: true, Context: mustJSON(t, `[{"type":"plan"}]`), ContextFile: "plan.json", ContextAt: "/context"})
	if got := errorTexts(err); got != "plan.json: /context/0/calls/0/_tool: call 1 (nope): unknown tool \"nope\"\nplan.json: /context/0/calls/1: call 2 (updateTask): parameters break the tool's schema: missing property 'newTask'" {
		t.Errorf("a plan's problems: %q", got)
	}
	_, err = c.Start(ctx, request.StartOptions{Vessel: "aug:vessels/broken", File: "my.vessel.json"})
	if got := errorTexts(err); !strings.HasPrefix(got, "registry/vessels/broken.json: /tools/0: ") {
		t.Errorf("a registry Vessel's problems keep their file: %q", got)
	}
	if _, err := c.Start(ctx, request.StartOptions{Vessel: "aug:vessels/nope"}); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("an unknown Vessel: %v", err)
	}
	if _, err := c.Start(ctx, request.StartOptions{Toolset: &vessel.Toolset{}}); err == nil || !strings.Contains(err.Error(), "not a toolset") {
		t.Errorf("a toolset: %v", err)
	}
	if _, err := c.Start(ctx, request.StartOptions{Vessel: "aug:v", Plan: true, Prompt: "x"}); err == nil || !strings.Contains(err.Error(), "no prompt") {
		t.Errorf("a plan with a prompt: %v", err)
	}
	if len(f.started) != 1 {
		t.Errorf("%d started, want the first only", len(f.started))
	}
}
