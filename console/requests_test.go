package console

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/augceo/vibe/internal/golden"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/request"
	"github.com/augceo/vibe/vessel"
)

// pagesAt is a console with the given options whose clock stands at
// 2026-11-23T12:00:00Z, for pages that show ages.
func pagesAt(t *testing.T, opts Options) *console {
	t.Helper()
	c, err := newConsole(opts)
	if err != nil {
		t.Fatal(err)
	}
	c.now = func() time.Time { return time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC) }
	return c
}

// fetch GETs path from h as a browser on loopback would, and returns the
// status and the page's <main> (or the whole body when it has none).
func fetch(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	r := httptest.NewRequest("GET", path, nil)
	r.Host = "127.0.0.1:8080"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	body := w.Body.String()
	if i, j := strings.Index(body, "<main>"), strings.Index(body, "</main>"); i >= 0 && j > i {
		body = body[i : j+len("</main>")]
	}
	return w.Code, body
}

// inOrder fails unless each of wants is in s, each after the one before.
func inOrder(t *testing.T, s string, wants ...string) {
	t.Helper()
	at := 0
	for _, want := range wants {
		i := strings.Index(s[at:], want)
		if i < 0 {
			t.Errorf("%q is not in the page after %q:\n%s", want, s[:at], s)
			return
		}
		at += i + len(want)
	}
}

// value is JSON text as a value, for fixtures.
func value(s string) jsonv.Value {
	v, err := jsonv.Parse([]byte(s))
	if err != nil {
		panic(err)
	}
	return v
}

// fakeRequests serves requests by id; an id it lacks is not found, and a
// failing id fails as the engine would.
type fakeRequests struct {
	list    []request.Summary
	byID    map[string]*request.Info
	failing string
	listed  []request.ListOptions
}

func (f *fakeRequests) List(ctx context.Context, opts request.ListOptions) (request.Page, error) {
	f.listed = append(f.listed, opts)
	return request.Page{Requests: f.list}, nil
}

func (f *fakeRequests) Get(ctx context.Context, id string) (*request.Info, error) {
	if id == f.failing {
		return nil, fmt.Errorf("read request %s: %w", id, context.DeadlineExceeded)
	}
	info, ok := f.byID[id]
	if !ok {
		return nil, fmt.Errorf("%w: %s", request.ErrNotFound, id)
	}
	return info, nil
}

var started = time.Date(2026, 11, 23, 11, 58, 30, 0, time.UTC)

// fakeRequestsFixture holds vessel-accountant-0000aaaa: a request with a
// call per instance (one refused), a delegate call whose sub-request
// delegates again, and a launch.
func fakeRequestsFixture() *fakeRequests {
	info := func(id, vessel string, calls []vessel.CallResult, states string) *request.Info {
		return &request.Info{ID: id, Vessel: vessel, Status: process.Completed, Decision: value(`{"calls":[{"_tool":"classify"}]}`),
			Calls: calls, States: value(states), Usage: llm.Usage{PromptTokens: 300, CompletionTokens: 40}, StartedAt: started}
	}
	f := &fakeRequests{byID: map[string]*request.Info{}}
	f.byID["vessel-accountant-0000aaaa"] = info("vessel-accountant-0000aaaa", "Accountant", []vessel.CallResult{
		{Index: 0, Tool: "classify", Instance: "c1", Params: value(`{"text":"<script>alert(1)</script>"}`), Output: "state.label", Result: value(`{"label":"spam"}`)},
		{Index: 1, Tool: "classify", Instance: "c2", Params: value(`{"text":"hi"}`), Error: "parameter /text: too short"},
		{Index: 2, Tool: "speaker_EN", Params: value(`{"userId":"u1"}`), Result: value(`{"speech":"hello"}`), Run: "vessel-accountant-0000aaaa-speaker-ab12"},
		{Index: 3, Tool: "ScheduleMeeting", Params: value(`{"llmContext1":{}}`), Result: value(`{"process":"schedule-meeting","id":"schedule-meeting-9f3a"}`), Run: "schedule-meeting-9f3a"},
	}, `{"":{"total":1},"c1":{"label":"spam"},"c2":{}}`)
	f.byID["vessel-accountant-0000aaaa-speaker-ab12"] = info("vessel-accountant-0000aaaa-speaker-ab12", "speaker_EN", []vessel.CallResult{
		{Index: 0, Tool: "translate", Params: value(`{"to":"en"}`), Result: value(`{"text":"hello"}`), Run: "vessel-accountant-0000aaaa-speaker-ab12-tr-01"},
	}, `{}`)
	f.byID["vessel-accountant-0000aaaa-speaker-ab12-tr-01"] = info("vessel-accountant-0000aaaa-speaker-ab12-tr-01", "translator", []vessel.CallResult{
		{Index: 0, Tool: "lookup", Params: value(`{"word":"hi"}`), Result: value(`{"en":"hello"}`)},
	}, `{}`)
	ended := started.Add(42 * time.Second)
	f.list = []request.Summary{{ID: "vessel-accountant-0000aaaa", Vessel: "Accountant", Status: process.Completed, StartedAt: started, EndedAt: &ended}}
	return f
}

func TestRequestPage(t *testing.T) {
	c := pagesAt(t, Options{Requests: fakeRequestsFixture()})
	status, page := fetch(t, c, "/requests/vessel-accountant-0000aaaa")
	if status != 200 {
		t.Fatalf("%d\n%s", status, page)
	}
	golden.Check(t, "testdata/request.html", []byte(page))
	// The decision, then each instance with its own calls and state: the
	// global one first, as the request orders its states.
	inOrder(t, page, "The decision", "classify",
		"<h2>Global</h2>", "Call 2: speaker_EN", "Call 3: ScheduleMeeting", `{`+"\n"+`  &#34;total&#34;: 1`,
		"<h2>Instance c1</h2>", "Call 0: classify", "→ state.label", "&lt;script&gt;alert(1)&lt;/script&gt;", "&#34;label&#34;: &#34;spam&#34;",
		"<h2>Instance c2</h2>", "Call 1: classify", "parameter /text: too short")
	if strings.Contains(page, "<script>alert") {
		t.Error("a parameter's markup is not escaped")
	}
	// The delegate call's sub-request is drawn inside the call, and its
	// own delegate inside that.
	inOrder(t, page, "Call 2: speaker_EN",
		`Delegated to the sub-request <a href="/requests/vessel-accountant-0000aaaa-speaker-ab12">`, "Call 0: translate",
		`Delegated to the sub-request <a href="/requests/vessel-accountant-0000aaaa-speaker-ab12-tr-01">`, "Call 0: lookup", "&#34;en&#34;: &#34;hello&#34;",
		"Call 3: ScheduleMeeting")
	// A launch links to its process.
	inOrder(t, page, "Call 3: ScheduleMeeting", `Launched the process <a href="/processes/schedule-meeting-9f3a">schedule-meeting-9f3a</a>`)
}

func TestRequestNesting(t *testing.T) {
	f := fakeRequestsFixture()
	// A chain of delegates deeper than the page draws, and a sub-request
	// the engine cannot read: each is said in its call, and the page is
	// shown.
	chain := "vessel-accountant-0000aaaa-speaker-ab12-tr-01"
	for i := range maxNesting + 1 {
		next := fmt.Sprintf("%s-d%d", chain, i)
		f.byID[chain].Calls = []vessel.CallResult{{Index: 0, Tool: fmt.Sprintf("deeper%d", i), Params: value(`{}`), Run: next}}
		f.byID[next] = &request.Info{ID: next, Vessel: "deep", Status: process.Running, Decision: jsonv.Value{}, Calls: []vessel.CallResult{}, States: value(`{}`), StartedAt: started}
		chain = next
	}
	f.byID["vessel-accountant-0000aaaa"].Calls[3].Run = "lost"
	f.byID["vessel-accountant-0000aaaa"].Calls[3].Result = value(`{"speech":"?"}`)
	f.failing = "lost"
	c := pagesAt(t, Options{Requests: f})
	status, page := fetch(t, c, "/requests/vessel-accountant-0000aaaa")
	if status != 200 {
		t.Fatalf("%d\n%s", status, page)
	}
	if n := strings.Count(page, "Delegated to the sub-request"); n != maxNesting-1 {
		t.Errorf("%d sub-requests drawn inside their parents, want %d (the page and %d nested)", n, maxNesting-1, maxNesting-1)
	}
	inOrder(t, page, "nested too deep to draw here: open it on its own page")
	inOrder(t, page, "Call 3: ScheduleMeeting", "Its sub-request: read request lost:")
	// A sub-request not made yet shows that its decision is not made.
	status, page = fetch(t, c, "/requests/"+chain)
	if status != 200 || !strings.Contains(page, "Not made yet.") || !strings.Contains(page, `<span class="badge running">running</span>`) {
		t.Errorf("a running sub-request: %d\n%s", status, page)
	}
}

func TestRequestList(t *testing.T) {
	f := fakeRequestsFixture()
	c := pagesAt(t, Options{Requests: f})
	status, page := fetch(t, c, "/requests")
	if status != 200 {
		t.Fatalf("%d\n%s", status, page)
	}
	golden.Check(t, "testdata/requests.html", []byte(page))
	inOrder(t, page, `<a href="/requests/vessel-accountant-0000aaaa">vessel-accountant-0000aaaa</a>`, "Accountant", `<span class="badge completed">completed</span>`,
		`title="2026-11-23 11:58:30 UTC">11:58:30<`, `title="2026-11-23 11:59:12 UTC">11:59:12<`, ">42.0s<")

	f.list = nil
	if _, page := fetch(t, c, "/requests"); !strings.Contains(page, "No requests.") {
		t.Errorf("no requests:\n%s", page)
	}
	if status, page := fetch(t, c, "/requests/vessel-nobody-00"); status != 404 || !strings.Contains(page, "no such request: vessel-nobody-00") {
		t.Errorf("an unknown request: %d\n%s", status, page)
	}
	// Without Requests the console has no such pages, and no link to them.
	bare := pagesAt(t, Options{})
	if status, _ := fetch(t, bare, "/requests"); status != 404 {
		t.Errorf("a console without requests answers /requests with %d", status)
	}
	r := httptest.NewRequest("GET", "/requests", nil)
	w := httptest.NewRecorder()
	c.ServeHTTP(w, r)
	if !strings.Contains(w.Body.String(), `<a href="/requests">Requests</a>`) {
		t.Error("the navigation lacks the requests")
	}
	w = httptest.NewRecorder()
	bare.ServeHTTP(w, httptest.NewRequest("GET", "/requests", nil))
	if strings.Contains(w.Body.String(), `href="/requests"`) {
		t.Error("a console without requests links to them")
	}
}

// TestRequestWithoutTools: a delegate's sub-request without tools makes no
// decision — one model call fills its result — so once it has completed
// the page shows its result, not "Not made yet".
func TestRequestWithoutTools(t *testing.T) {
	f := fakeRequestsFixture()
	id := "vessel-accountant-0000aaaa-speaker-ab12-tr-01"
	f.byID[id].Decision, f.byID[id].Calls, f.byID[id].Output = jsonv.Value{}, nil, value(`{"text":"hello"}`)
	c := pagesAt(t, Options{Requests: f})
	for _, path := range []string{"/requests/" + id, "/requests/vessel-accountant-0000aaaa"} {
		_, page := fetch(t, c, path)
		if path != "/requests/"+id {
			inOrder(t, page, "Delegated to the sub-request <a href=\"/requests/"+id)
		}
		inOrder(t, page, "None to make: a request without tools is one model call, which filled its result.",
			"<h3>The result</h3>", "&#34;text&#34;: &#34;hello&#34;")
		if strings.Contains(page, "Not made yet") {
			t.Errorf("%s: a completed request without tools says its decision is not made:\n%s", path, page)
		}
	}
	// Ended without a decision or a result: said as it is.
	f.byID[id].Output = jsonv.Value{}
	if _, page := fetch(t, c, "/requests/"+id); !strings.Contains(page, "None was made.") {
		t.Errorf("a completed request without a decision:\n%s", page)
	}
	f.byID[id].Status = process.Failed
	if _, page := fetch(t, c, "/requests/"+id); !strings.Contains(page, "None: the request failed first.") {
		t.Errorf("a failed request without a decision:\n%s", page)
	}
}

// TestRequestListFilters: the requests list passes its status, days and
// cursor to the engine, and links the next page.
func TestRequestListFilters(t *testing.T) {
	f := fakeRequestsFixture()
	c := pagesAt(t, Options{Requests: f})
	_, page := fetch(t, c, "/requests?status=failed&from=2026-11-20&to=2026-11-22&cursor=abc")
	got := f.listed[len(f.listed)-1]
	want := request.ListOptions{Limit: listLimit, Cursor: "abc", Status: process.Failed,
		Since: time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC), Before: time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)}
	if got != want {
		t.Errorf("listed with %+v, want %+v", got, want)
	}
	inOrder(t, page, `<option value="failed" selected>`, `value="2026-11-20"`, `value="2026-11-22"`, `<a href="/requests?from=2026-11-20&amp;status=failed&amp;to=2026-11-22">← newest</a>`)
}
