package api

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/temporal"

	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/schema"
)

// TestRoutes: an unknown path is 404, a known path with a method it does
// not take is 405 with Allow — both in the API's error shape.
func TestRoutes(t *testing.T) {
	h := Handler(&fakeProcesses{}, quiet())
	tests := []struct {
		method, path string
		code         int
		allow, msg   string
	}{
		{"DELETE", "/v1/processes/meeting-0001", 405, "GET, HEAD", "/v1/processes/meeting-0001 does not take DELETE (only GET, HEAD)"},
		{"POST", "/v1/processes/meeting-0001", 405, "GET, HEAD", "does not take POST"},
		{"PUT", "/v1/processes", 405, "GET, HEAD, POST", "does not take PUT"},
		{"GET", "/v1/processes/meeting-0001/answer", 405, "POST", "does not take GET"},
		{"OPTIONS", "/v1/processes", 405, "GET, HEAD, POST", "does not take OPTIONS"},
		{"GET", "/v2/processes", 404, "", "no such endpoint: GET /v2/processes"},
		{"GET", "/", 404, "", "no such endpoint: GET /"},
		{"GET", "/v1/processes/a/b", 404, "", "no such endpoint"},
		{"POST", "/v1/nothing", 404, "", "no such endpoint: POST /v1/nothing"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, "http://127.0.0.1:8080"+tt.path, nil)
			rec := serve(t, h, req)
			out := decoded(t, rec)
			if rec.Code != tt.code || rec.Header().Get("Allow") != tt.allow || !strings.Contains(fmt.Sprint(out["error"]), tt.msg) {
				t.Errorf("%d Allow %q %s", rec.Code, rec.Header().Get("Allow"), rec.Body)
			}
		})
	}
}

// TestContentType: a POST body must say it is JSON.
func TestContentType(t *testing.T) {
	tests := []struct {
		contentType string
		code        int
	}{
		{"application/json", 201},
		{"application/json; charset=utf-8", 201},
		{"Application/JSON;charset=UTF-8", 201},
		{"", 415},
		{"text/plain", 415},
		{"text/plain; charset=utf-8", 415},
		{"application/x-www-form-urlencoded", 415},
		{"multipart/form-data; boundary=x", 415},
		{"application/json; charset=latin1", 415},
		{"application/json-seq", 415},
		{"application/json; charset", 415}, // malformed
	}
	for _, tt := range tests {
		for _, path := range []string{"/v1/processes", "/v1/processes/meeting-0001/answer"} {
			f := &fakeProcesses{}
			h := Handler(f, quiet())
			body := `{"process":"aug:processes/meeting"}`
			want := tt.code
			if strings.HasSuffix(path, "/answer") {
				body = `{"decision":"Approve"}`
				if want == 201 {
					want = 200
				}
			}
			req := httptest.NewRequest("POST", "http://127.0.0.1:8080"+path, strings.NewReader(body))
			if tt.contentType != "" {
				req.Header.Set("Content-Type", tt.contentType)
			}
			rec := serve(t, h, req)
			out := decoded(t, rec)
			if rec.Code != want {
				t.Errorf("%s with %q: %d %s", path, tt.contentType, rec.Code, rec.Body)
			}
			if want == 415 && (len(f.started)+len(f.answers) > 0 || !strings.Contains(fmt.Sprint(out["error"]), "application/json")) {
				t.Errorf("%s with %q: started %d, answered %d, said %v", path, tt.contentType, len(f.started), len(f.answers), out["error"])
			}
		}
	}
}

// TestClientMistakes: what a client gets wrong is a 4xx that says what,
// never a 500.
func TestClientMistakes(t *testing.T) {
	tests := []struct {
		name, method, path, body string
		code                     int
		msg, at                  string
	}{
		{"an id with a space", "GET", "/v1/processes/a%20b", "", 400, `"a b" is not a process id`, ""},
		{"an id with a NUL", "GET", "/v1/processes/a%00b", "", 400, "is not a process id", ""},
		{"an id with a DEL", "GET", "/v1/processes/a%7Fb", "", 400, "is not a process id", ""},
		{"an id with a bidi override", "GET", "/v1/processes/a%E2%80%AEb", "", 400, "is not a process id", ""},
		{"an id of bad UTF-8", "GET", "/v1/processes/a%FFb", "", 400, "is not a process id", ""},
		{"an id too long", "GET", "/v1/processes/" + strings.Repeat("x", 1001), "", 400, "at most 1000 bytes", ""},
		{"an answer to a bad id", "POST", "/v1/processes/a%0Ab/answer", `{}`, 400, "is not a process id", ""},
		{"a cancel of an id with a NUL", "POST", "/v1/processes/a%00b/cancel", "", 400, "is not a process id", ""},
		{"a cancel of an id with a newline", "POST", "/v1/processes/a%0Ab/cancel", "", 400, "is not a process id", ""},
		{"a cancel of an id with a bidi override", "POST", "/v1/processes/a%E2%80%AEb/cancel", "", 400, "is not a process id", ""},
		{"an unknown id", "GET", "/v1/processes/nope", "", 404, "no such process", ""},
		{"a process and a pipeline", "POST", "/v1/processes", `{"process":"aug:processes/meeting","pipeline":"A | B"}`, 400, `give the process to start as "process" or as "pipeline", not both`, "/pipeline"},
		{"a URI of another scheme", "POST", "/v1/processes", `{"process":"http://example.com/p.json"}`, 400, `"http://example.com/p.json" is not a registry URI`, "/process"},
		{"a URI with version 0", "POST", "/v1/processes", `{"process":"aug:processes/meeting:0"}`, 400, `version "0" is not a positive integer`, "/process"},
		{"a URI with ..", "POST", "/v1/processes", `{"process":"aug:../etc/passwd"}`, 400, `must be slash-separated names`, "/process"},
		{"an empty URI", "POST", "/v1/processes", `{"process":""}`, 400, `is not a registry URI`, "/process"},
		{"limit 0", "GET", "/v1/processes?limit=0", "", 400, `limit "0": give one number from 1 to 1000 (default 100)`, ""},
		{"limit too large", "GET", "/v1/processes?limit=1001", "", 400, `limit "1001"`, ""},
		{"limit not a number", "GET", "/v1/processes?limit=ten", "", 400, `limit "ten"`, ""},
		{"two limits", "GET", "/v1/processes?limit=1&limit=2", "", 400, `limit "1,2"`, ""},
		{"a cursor never given", "GET", "/v1/processes?cursor=zzz", "", 400, `cursor "zzz": not a cursor of this list`, ""},
		{"an unknown parameter", "GET", "/v1/processes?page=2", "", 400, `unknown parameter "page"`, ""},
		{"a malformed query", "GET", "/v1/processes?limit=%zz", "", 400, "the query is malformed", ""},
		{"answering a completed process", "POST", "/v1/processes/done-0001/answer", `{"decision":"Approve"}`, 409, "process done-0001 is completed and waits for no answer", ""},
		{"answering a failed process", "POST", "/v1/processes/failed-0001/answer", `{"decision":"Approve"}`, 409, "process failed-0001 is failed and waits for no answer", ""},
		{"a body past the engine's limit", "POST", "/v1/processes", `{"process":"aug:processes/meeting","prompt":"` + strings.Repeat("x", durable.MaxPayloadSize) + `"}`, 413, "larger than 2097152 bytes", ""},
		{"an answer past the engine's limit", "POST", "/v1/processes/meeting-0001/answer", `"` + strings.Repeat("x", durable.MaxPayloadSize) + `"`, 413, "larger than 2097152 bytes", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeProcesses{}
			code, out, raw := call(t, Handler(f, quiet()), tt.method, tt.path, tt.body, "")
			if code != tt.code || !strings.Contains(fmt.Sprint(out["error"]), tt.msg) || out["path"] != tt.at {
				t.Errorf("%d %.300s", code, raw)
			}
			if len(f.started)+len(f.answers) > 0 {
				t.Errorf("started %d, answered %d", len(f.started), len(f.answers))
			}
		})
	}
}

// TestBadRequestLine: a URI the HTTP server cannot parse never reaches the
// API; the server itself answers 400.
func TestBadRequestLine(t *testing.T) {
	srv := httptest.NewServer(Handler(&fakeProcesses{}, quiet()))
	defer srv.Close()
	for _, target := range []string{"/v1/processes/%zz", "/v1/processes/%", "/v1/processes/a b"} {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", target)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s: %v", target, err)
		}
		resp.Body.Close()
		conn.Close()
		if resp.StatusCode != 400 {
			t.Errorf("GET %s: %d", target, resp.StatusCode)
		}
	}
}

// TestStartErrors maps each failure of a start to its status: the
// caller's mistakes to 4xx, the engine's to 503 or 500.
func TestStartErrors(t *testing.T) {
	firstErr := &process.FirstError{Chunk: "LLM_greet", Kind: compile.LLM, Problems: []schema.Invalid{
		{Path: "/greet/text", Message: "got number, want string"}, {Path: "/greet/lang", Message: "value must be one of 'en', 'fr'"}}}
	tests := []struct {
		name  string
		err   error
		code  int
		msg   string
		at    string
		paths []string // the details' paths
	}{
		{"a first value that breaks the chunk", firstErr, 422, "the first value does not fit chunk LLM_greet", "/first/greet/text", []string{"/first/greet/text", "/first/greet/lang"}},
		{"a first value for a person's chunk", &process.FirstError{Chunk: "USER_ok", Kind: compile.User}, 422, "is not filled by a model", "/first", nil},
		{"a start past the payload limit", &durable.TooLargeError{What: "the start of x", Size: 3 << 20, Limit: 2 << 20}, 413, "the start of x is 3 MiB, past the engine's limit of 2 MiB", "", nil},
		{"no registry", fmt.Errorf("cannot start aug:x: %w", registry.ErrNoRegistry), 400, "this server has no registry: send the process inline", "/process", nil},
		{"the engine's blob limit", fmt.Errorf("start x: %w", serviceerror.NewInvalidArgument("Blob data size exceeds limit.")), 413, "Blob data size exceeds limit", "", nil},
		{"gRPC's message limit", fmt.Errorf("start x: %w", serviceerror.NewResourceExhausted(0, "grpc: received message larger than max (7340100 vs. 4194304)")), 413, "larger than max", "", nil},
		{"an invalid argument", fmt.Errorf("start x: %w", serviceerror.NewInvalidArgument("WorkflowId exceeds length limit.")), 400, "WorkflowId exceeds length limit", "", nil},
		{"not found", serviceerror.NewNotFound("namespace x"), 404, "namespace x", "", nil},
		{"already exists", serviceerror.NewAlreadyExists("x"), 409, "x", "", nil},
		{"already started", serviceerror.NewWorkflowExecutionAlreadyStarted("started", "", ""), 409, "started", "", nil},
		{"a failed precondition", serviceerror.NewFailedPrecondition("x"), 409, "x", "", nil},
		{"a rate limit", serviceerror.NewResourceExhausted(0, "namespace rate limit exceeded"), 503, "rate limit", "", nil},
		{"the engine down", serviceerror.NewUnavailable("connection refused"), 503, "connection refused", "", nil},
		{"the engine too slow", context.DeadlineExceeded, 503, "deadline", "", nil},
		{"anything else", errors.New("disk on fire"), 500, "disk on fire", "", nil},
		{"a full disk under the engine", fmt.Errorf("start x: %w", serviceerror.NewFailedPrecondition("no space left on device on /data (0 B free): the engine cannot write temporal.db; free some space there, then try again")), 507, "start x: no space left on device on /data", "", nil},
		{"SQLite's full disk", serviceerror.NewUnavailable("database or disk is full (13)"), 507, "database or disk is full", "", nil},
		{"ENOSPC", &fs.PathError{Op: "write", Path: "/data/batches/b.jsonl", Err: syscall.ENOSPC}, 507, "/data/batches/b.jsonl: no space left on device", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := Handler(&fakeProcesses{startErr: tt.err}, quiet())
			req := httptest.NewRequest("POST", "http://127.0.0.1:8080/v1/processes", strings.NewReader(`{"process":"aug:processes/meeting"}`))
			req.Header.Set("Content-Type", "application/json")
			rec := serve(t, h, req)
			out := decoded(t, rec)
			if rec.Code != tt.code || !strings.Contains(fmt.Sprint(out["error"]), tt.msg) || out["path"] != tt.at {
				t.Errorf("%d %s", rec.Code, rec.Body)
			}
			var paths []string
			for _, d := range out["details"].([]any) {
				paths = append(paths, d.(map[string]any)["path"].(string))
			}
			if strings.Join(paths, " ") != strings.Join(tt.paths, " ") {
				t.Errorf("details at %v, want %v", paths, tt.paths)
			}
			if (rec.Code == 503) != (rec.Header().Get("Retry-After") != "") {
				t.Errorf("%d with Retry-After %q", rec.Code, rec.Header().Get("Retry-After"))
			}
		})
	}
}

// TestLoopbackGuard: a server without a token answers only requests to a
// loopback address from no other web origin; with a token the bearer
// header is the guard, and the same requests pass.
func TestLoopbackGuard(t *testing.T) {
	tests := []struct {
		name, host string
		header     map[string]string
		tokenless  int // the status without a token
	}{
		{"127.0.0.1 with a port", "127.0.0.1:8080", nil, 200},
		{"127.0.0.1", "127.0.0.1", nil, 200},
		{"another loopback IP", "127.9.9.9:80", nil, 200},
		{"localhost", "localhost:8080", nil, 200},
		{"LOCALHOST", "LOCALHOST", nil, 200},
		{"::1", "[::1]:8080", nil, 200},
		{"::1 without a port", "[::1]", nil, 200},
		{"the server's own origin", "127.0.0.1:8080", map[string]string{"Origin": "http://127.0.0.1:8080", "Sec-Fetch-Site": "same-origin"}, 200},
		{"its own origin, default port", "localhost", map[string]string{"Origin": "http://localhost"}, 200},
		{"typed by the person", "127.0.0.1:8080", map[string]string{"Sec-Fetch-Site": "none"}, 200},
		{"a foreign Host (DNS rebinding)", "evil.example", nil, 403},
		{"a foreign Host with a port", "evil.example:8080", nil, 403},
		{"a name ending in localhost", "localhost.evil.example:8080", nil, 403},
		{"a name starting with 127", "127.0.0.1.evil.example", nil, 403},
		{"every interface", "0.0.0.0:8080", nil, 403},
		{"a private IP", "192.168.1.10:8080", nil, 403},
		{"no Host", "", nil, 403},
		{"a cross-site Origin", "127.0.0.1:8080", map[string]string{"Origin": "https://evil.example"}, 403},
		{"another local port's Origin", "localhost:8080", map[string]string{"Origin": "http://localhost:3000"}, 403},
		{"another loopback name's Origin", "127.0.0.1:8080", map[string]string{"Origin": "http://localhost:8080"}, 403},
		{"the null Origin", "127.0.0.1:8080", map[string]string{"Origin": "null"}, 403},
		{"an https Origin to http", "127.0.0.1:8080", map[string]string{"Origin": "https://127.0.0.1:8080"}, 403},
		{"Sec-Fetch-Site cross-site", "127.0.0.1:8080", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"Sec-Fetch-Site same-site", "127.0.0.1:8080", map[string]string{"Sec-Fetch-Site": "same-site"}, 403},
	}
	tokenless := Handler(&fakeProcesses{}, quiet())
	withToken := Handler(&fakeProcesses{}, Options{Token: "s3cret", Logger: slogDiscard()})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, method := range []string{"GET", "POST"} {
				req := func(token string) *http.Request {
					path, body := "/v1/processes/meeting-0001", ""
					if method == "POST" {
						path, body = "/v1/processes", `{"process":"aug:processes/meeting"}`
					}
					r := httptest.NewRequest(method, path, strings.NewReader(body))
					r.Host = tt.host
					r.Header.Set("Content-Type", "application/json")
					for k, v := range tt.header {
						r.Header.Set(k, v)
					}
					if token != "" {
						r.Header.Set("Authorization", "Bearer "+token)
					}
					return r
				}
				ok := 200
				if method == "POST" {
					ok = 201
				}
				want := tt.tokenless
				if want == 200 {
					want = ok
				}
				rec := serve(t, tokenless, req(""))
				out := decoded(t, rec)
				if rec.Code != want {
					t.Errorf("%s without a token: %d %s", method, rec.Code, rec.Body)
				}
				if want == 403 && !strings.HasPrefix(fmt.Sprint(out["error"]), "refused: ") {
					t.Errorf("%s: %v", method, out["error"])
				}
				if rec := serve(t, withToken, req("s3cret")); rec.Code != ok {
					t.Errorf("%s with the token: %d %s", method, rec.Code, rec.Body)
				}
				if rec := serve(t, withToken, req("")); rec.Code != 401 {
					t.Errorf("%s with a token server, no token: %d %s", method, rec.Code, rec.Body)
				}
			}
		})
	}
}

// TestListErrors: a list that fails is answered with its error and a
// 5xx — 507 for a full disk, 503 for an engine that may come back, 500
// otherwise — never as 200 with the page that came with it, or an empty
// one.
func TestListErrors(t *testing.T) {
	tests := []struct {
		err  error
		code int
	}{
		{fmt.Errorf("list processes: %w", serviceerror.NewFailedPrecondition("no space left on device on /data (1 MiB free): the engine cannot record what happens to processes, so a list now may miss some; free some space there, then try again")), 507},
		{fmt.Errorf("list processes: %w", serviceerror.NewUnavailable("connection refused")), 503},
		{fmt.Errorf("list processes: %w", context.DeadlineExceeded), 503},
		{fmt.Errorf("list processes: %w", serviceerror.NewInternal("sql: no rows")), 500},
	}
	for _, tt := range tests {
		h := Handler(&fakeProcesses{listErr: tt.err}, quiet())
		code, out, raw := call(t, h, "GET", "/v1/processes", "", "")
		if code != tt.code || out["error"] != tt.err.Error() {
			t.Errorf("%v: %d %s, want %d with the error", tt.err, code, raw, tt.code)
		}
		if _, ok := out["processes"]; ok {
			t.Errorf("%v: answered a list: %s", tt.err, raw)
		}
	}
}

// TestPaging follows the cursors through the handler, over HTTP with the
// Go client, and by hand.
func TestPaging(t *testing.T) {
	h := Handler(&fakeProcesses{}, quiet())
	ids := pageThrough(t, h, "/v1/processes", "processes")
	if strings.Join(ids, " ") != "p-5 p-4 p-3 p-2 p-1" {
		t.Errorf("paged through %v", ids)
	}

	srv := httptest.NewServer(h)
	defer srv.Close()
	c := &Client{BaseURL: srv.URL}
	page, err := c.List(context.Background(), process.ListOptions{Limit: 3})
	if err != nil || len(page.Processes) != 3 || page.Next == "" {
		t.Fatalf("%+v %v", page, err)
	}
	page, err = c.List(context.Background(), process.ListOptions{Limit: 3, Cursor: page.Next})
	if err != nil || len(page.Processes) != 2 || page.Processes[0].ID != "p-2" || page.Next != "" {
		t.Fatalf("%+v %v", page, err)
	}
}

// TestClientErrors: the Go client gives back the typed errors the server
// had.
func TestClientErrors(t *testing.T) {
	firstErr := &process.FirstError{Chunk: "LLM_greet", Kind: compile.LLM, Problems: []schema.Invalid{{Path: "/greet/text", Message: "got number, want string"}}}
	f := &fakeProcesses{startErr: firstErr}
	srv := httptest.NewServer(Handler(f, quiet()))
	defer srv.Close()
	c := &Client{BaseURL: srv.URL}
	ctx := context.Background()

	_, err := c.Start(ctx, process.StartOptions{Process: "aug:processes/meeting"})
	var fe *process.FirstError
	if !errors.As(err, &fe) || err.Error() != firstErr.Error() || fe.Kind != compile.LLM || fe.Problems[0].Path != "/greet/text" {
		t.Errorf("first: %v (%T)", err, err)
	}
	f.startErr = &process.FirstError{Chunk: "USER_ok", Kind: compile.User}
	_, err = c.Start(ctx, process.StartOptions{Process: "aug:processes/meeting"})
	if !errors.As(err, &fe) || err.Error() != f.startErr.Error() || fe.Kind != compile.User {
		t.Errorf("first of a person's chunk: %v (%T)", err, err)
	}
	_, err = c.Answer(ctx, "done-0001", mustJSON(t, `{"decision":"Approve"}`))
	var nw *process.NotWaitingError
	if !errors.As(err, &nw) || nw.ID != "done-0001" || nw.Status != process.Completed {
		t.Errorf("not waiting: %v (%T)", err, err)
	}
	// An unknown id: process.ErrNotFound, its words said once.
	_, err = c.Get(ctx, "nope")
	if !errors.Is(err, process.ErrNotFound) || err.Error() != "no such process: nope" {
		t.Errorf("an unknown id: %v", err)
	}
	// An id the client escapes, the server refuses by name.
	_, err = c.Get(ctx, "a b?c")
	var ae *Error
	if !errors.As(err, &ae) || ae.Status != 400 || !strings.Contains(ae.Message, `"a b?c" is not a process id`) {
		t.Errorf("a bad id: %v", err)
	}
}

// TestEngineErrorSaidOnce: an error that crossed the engine (a Go error
// an activity returned, sent as one failure per wrapper) is answered with
// its cause once, without Temporal's types (issue 27, 1).
func TestEngineErrorSaidOnce(t *testing.T) {
	conv := temporal.GetDefaultFailureConverter()
	cause := fmt.Errorf("step s: %w", errors.New("the disk is on fire"))
	crossed := conv.FailureToError(conv.ErrorToFailure(temporal.NewNonRetryableApplicationError(cause.Error(), "Fire", cause)))
	h := Handler(&fakeProcesses{startErr: fmt.Errorf("start x: %w", crossed)}, quiet())
	code, out, raw := call(t, h, "POST", "/v1/processes", `{"process":"aug:processes/meeting"}`, "")
	if want := "start x: step s: the disk is on fire"; code != 500 || out["error"] != want {
		t.Errorf("%d %s, want 500 with %q", code, raw, want)
	}
}

// statusList records the options of its List.
type statusList struct {
	fakeProcesses
	got process.ListOptions
}

func (s *statusList) List(ctx context.Context, opts process.ListOptions) (process.Page, error) {
	s.got = opts
	return s.fakeProcesses.List(ctx, opts)
}

// TestListStatus: GET /v1/processes?status=S lists the processes of that
// status (vibe ps --status through a server); another status is a 400.
func TestListStatus(t *testing.T) {
	p := &statusList{}
	h := Handler(p, quiet())
	if code, _, raw := call(t, h, "GET", "/v1/processes?status=waiting", "", ""); code != 200 || p.got.Status != process.Waiting {
		t.Errorf("status=waiting: %d %s, listed %+v", code, raw, p.got)
	}
	if code, out, raw := call(t, h, "GET", "/v1/processes?status=asleep", "", ""); code != 400 || !strings.Contains(fmt.Sprint(out["error"]), "give one of running, waiting, completed, failed") {
		t.Errorf("status=asleep: %d %s", code, raw)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	if _, err := (&Client{BaseURL: srv.URL}).List(context.Background(), process.ListOptions{Status: process.Failed}); err != nil || p.got.Status != process.Failed {
		t.Errorf("the client's status: %v, listed %+v", err, p.got)
	}
}
