package console

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/registry"
)

// TestListPages: the processes list shows a page at a time, links the
// next (older) one with the filters kept and the first again, passes its
// days to the engine, and says what it cannot take.
func TestListPages(t *testing.T) {
	f := meetingFixture(t)
	for i := range 2*listLimit + 5 {
		in := *f.infos[1] // completed ones, older than the fixture's
		in.ID = fmt.Sprintf("schedule-meeting-1000%04x", i)
		in.StartedAt = testNow.Add(-time.Duration(100+i) * time.Hour)
		end := in.StartedAt.Add(time.Minute)
		in.EndedAt = &end
		f.infos = append(f.infos, &in)
	}
	c := newTestConsole(t, Options{Processes: f})
	_, first := get(t, c, "/processes?status=completed")
	if n := strings.Count(first, `<tr><td><a href="/processes/`); n != listLimit {
		t.Errorf("the first page has %d rows, want %d", n, listLimit)
	}
	next := `<a href="/processes?cursor=50&amp;status=completed&amp;n=51" rel="next">older →</a>`
	if !strings.Contains(first, next) || strings.Contains(first, "← newest") {
		t.Fatalf("no link %s on the first page:\n%s", next, first)
	}
	_, second := get(t, c, "/processes?cursor=50&status=completed&n=51")
	if !strings.Contains(second, `<a href="/processes?status=completed">← newest</a>`) || !strings.Contains(second, `cursor=100&amp;status=completed&amp;n=101`) {
		t.Errorf("the second page's links:\n%s", second)
	}
	_, last := get(t, c, "/processes?cursor=100&status=completed&n=101")
	if n := strings.Count(last, `<tr><td><a href="/processes/`); n != 6 || strings.Contains(last, `rel="next"`) {
		t.Errorf("the last page: %d rows\n%s", n, last)
	}
	// Its totals are of its own rows.
	if !strings.Contains(last, "Totals of the 6 processes on this page: <strong>2760 tokens</strong>") {
		t.Errorf("the last page's totals:\n%s", last)
	}

	// Days: from the first to the last, both whole, in UTC.
	f.listed = nil
	status, page := get(t, c, "/processes?from=2026-11-21&to=2026-11-22")
	want := process.ListOptions{Limit: listLimit, Since: time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC), Before: time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)}
	if status != 200 || len(f.listed) != 1 || f.listed[0] != want {
		t.Fatalf("%d, listed with %+v, want %+v", status, f.listed, want)
	}
	if !strings.Contains(page, "billing-0000cccc") || strings.Contains(page, "schedule-meeting-0000aaaa") || !strings.Contains(page, `name="from" value="2026-11-21"`) {
		t.Errorf("the processes of two days:\n%s", page)
	}
	// A date that does not read is left out, and said so; a cursor the
	// engine did not give is refused.
	if _, page := get(t, c, "/processes?from=yesterday"); !strings.Contains(page, "&#34;yesterday&#34; is no date (YYYY-MM-DD): left out") || !strings.Contains(page, "schedule-meeting-0000aaaa") {
		t.Errorf("a bad date:\n%s", page)
	}
	if _, page := get(t, c, "/processes?cursor=zz"); !strings.Contains(page, "not a cursor of this list") {
		t.Errorf("a bad cursor:\n%s", page)
	}
}

// TestTotals: with prices, each row and the page's totals show the cost,
// and a process whose model has no price is said, not counted.
func TestTotals(t *testing.T) {
	f := meetingFixture(t)
	prices := &llm.Prices{Currency: "USD", Models: map[string]llm.Price{"test-model": {Input: 1, Output: 4}}}
	f.set("billing-0000cccc", func(in *process.Info) {
		in.Usage = llm.Usage{PromptTokens: 10}
		in.Calls[0].Model, in.Calls[0].Usage = "unpriced", in.Usage
	})
	c := newTestConsole(t, Options{Processes: f, Prices: prices})
	// Each of the two meetings: (360×1 + 100×4) / 1e6 = 0.00076 USD; the
	// billing process's model has none.
	_, page := get(t, c, "/processes")
	for _, want := range []string{"<th class=\"num\">Cost</th>", "<td class=\"num\">0.000760 USD</td>", "<td class=\"num\">–</td>",
		"Totals of the 3 processes on this page: <strong>930 tokens</strong> (730 prompt + 200 completion) · <strong>0.001520 USD</strong> (1 with a model that has no price, not counted)"} {
		if !strings.Contains(page, want) {
			t.Errorf("no %q in\n%s", want, page)
		}
	}
}

// TestStartCancelRetry: the console starts a process from its form,
// cancels a running one and starts a finished one again, each a form post
// with the CSRF token; a start the process refuses shows the form again
// with why.
func TestStartCancelRetry(t *testing.T) {
	f := meetingFixture(t)
	reg, err := registry.Open("../examples/schedule-meeting/registry")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(newTestConsole(t, Options{Processes: f, Registry: reg}))
	defer srv.Close()
	b := browser(t)
	resp, form := do(t, b, "GET", srv.URL+"/start", nil)
	if resp.StatusCode != 200 || !strings.Contains(form, `<option value="aug:processes/schedule-meeting">`) || !strings.Contains(form, `action="/processes"`) {
		t.Fatalf("the start form: %d\n%s", resp.StatusCode, form)
	}
	// The examples in its empty fields are the registry's own.
	for _, want := range []string{`placeholder="aug:processes/schedule-meeting"`, `placeholder="prompt | identifyParticipants"`, "; the registry has identifyParticipants</span>"} {
		if !strings.Contains(form, want) {
			t.Errorf("the start form lacks %s:\n%s", want, form)
		}
	}
	token := csrfOf(t, form)

	// A pipeline of the registry's instructions, with a name.
	resp, body := do(t, b, "POST", srv.URL+"/processes", url.Values{"csrf": {token}, "pipeline": {"prompt | identifyParticipants"},
		"name": {"who meets"}, "prompt": {"Meet Carol"}})
	if resp.StatusCode != http.StatusSeeOther || len(f.pipelines) != 1 || !strings.HasPrefix(resp.Header.Get("Location"), "/processes/who%20meets-") {
		t.Fatalf("a pipeline's start: %d %v %v\n%s", resp.StatusCode, resp.Header, f.pipelines, body)
	}
	if got := f.pipelines[0]; got.Pipeline != "prompt | identifyParticipants" || got.Name != "who meets" || got.Prompt != "Meet Carol" || got.Process != "" {
		t.Errorf("the pipeline started with %+v", got)
	}
	f.started = f.started[:0] // what follows counts the starts of aug:processes/schedule-meeting

	// A start: the browser goes to the new process's page.
	resp, body = do(t, b, "POST", srv.URL+"/processes", url.Values{"csrf": {token}, "process": {"aug:processes/schedule-meeting"},
		"prompt": {"Meet Carol"}, "input": {`{"room":"B"}`}})
	if resp.StatusCode != http.StatusSeeOther || len(f.started) != 1 || resp.Header.Get("Location") != "/processes/"+f.started[0] {
		t.Fatalf("start: %d %v %v\n%s", resp.StatusCode, resp.Header, f.started, body)
	}
	id := f.started[0]
	_, page := do(t, b, "GET", srv.URL+"/processes/"+id, nil)
	if !strings.Contains(page, `action="/processes/`+id+`/cancel"`) || strings.Contains(page, "/retry") || !strings.Contains(page, "running · 1.5s so far") {
		t.Errorf("the started process's page:\n%s", page)
	}
	// Refused starts: the form again, with what was typed and why.
	for _, tc := range []struct {
		form url.Values
		want string
	}{
		{url.Values{"process": {""}}, "Name the process to start — a registry URI, such as aug:processes/schedule-meeting — or write a pipeline of the registry&#39;s instructions, such as prompt | identifyParticipants."},
		{url.Values{"process": {"aug:processes/schedule-meeting"}, "pipeline": {"prompt | identifyParticipants"}}, "Give a process or a pipeline to start, not both."},
		{url.Values{"pipeline": {"prompt | identifyParticipants"}}, "The pipeline begins with prompt, the person&#39;s request: write it under Request."},
		{url.Values{"process": {"aug:processes/schedule-meeting"}, "input": {"{room"}}, "The input is not JSON"},
		{url.Values{"process": {"aug:processes/nowhere"}, "prompt": {"Meet <b>Dan</b>"}}, "Not started: not found: aug:processes/nowhere"},
	} {
		tc.form.Set("csrf", token)
		resp, body := do(t, b, "POST", srv.URL+"/processes", tc.form)
		if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(body, tc.want) || !strings.Contains(body, `name="csrf"`) {
			t.Errorf("%v: %d\n%s", tc.form, resp.StatusCode, body)
		}
		if p := tc.form.Get("prompt"); p != "" && !strings.Contains(body, "Meet &lt;b&gt;Dan&lt;/b&gt;</textarea>") {
			t.Errorf("the request typed is not kept, as text:\n%s", body)
		}
	}

	// Cancel: back to its page, which shows it failed and offers a retry.
	resp, body = do(t, b, "POST", srv.URL+"/processes/"+id+"/cancel", url.Values{"csrf": {token}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/processes/"+id || len(f.canceled) != 1 {
		t.Fatalf("cancel: %d %v\n%s", resp.StatusCode, resp.Header, body)
	}
	_, page = do(t, b, "GET", srv.URL+"/processes/"+id, nil)
	if !strings.Contains(page, "the workflow was canceled") || !strings.Contains(page, `action="/processes/`+id+`/retry"`) || strings.Contains(page, "/cancel") {
		t.Errorf("the cancelled process's page:\n%s", page)
	}
	// Retry: a new process with the same input.
	resp, body = do(t, b, "POST", srv.URL+"/processes/"+id+"/retry", url.Values{"csrf": {token}})
	if resp.StatusCode != http.StatusSeeOther || len(f.started) != 2 || resp.Header.Get("Location") != "/processes/"+f.started[1] {
		t.Fatalf("retry: %d %v\n%s", resp.StatusCode, resp.Header, body)
	}
	retried, _ := f.Get(t.Context(), f.started[1])
	if got := retried.State.Lookup("input").Lookup("room").Str(); got != "B" {
		t.Errorf("the retry's input: %q", got)
	}
	if resp, _ := do(t, b, "POST", srv.URL+"/processes/nope/retry", url.Values{"csrf": {token}}); resp.StatusCode != http.StatusNotFound {
		t.Errorf("retry of no process: %d", resp.StatusCode)
	}

	// Every one of these posts is refused without the token, from another
	// origin, or with another browser's token; nothing happens.
	other := browser(t)
	_, otherPage := do(t, other, "GET", srv.URL+"/start", nil)
	otherToken := csrfOf(t, otherPage)
	for _, path := range []string{"/processes", "/processes/" + id + "/cancel", "/processes/" + f.started[1] + "/cancel", "/processes/" + id + "/retry"} {
		for _, tc := range []struct {
			csrf   string
			header []string
		}{{"", nil}, {otherToken, nil}, {token, []string{"Origin", "http://evil.example"}}, {token, []string{"Sec-Fetch-Site", "cross-site"}}} {
			resp, body := do(t, b, "POST", srv.URL+path, url.Values{"csrf": {tc.csrf}, "process": {"aug:processes/schedule-meeting"}}, tc.header...)
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "refused:") {
				t.Errorf("%s %v: %d\n%s", path, tc.header, resp.StatusCode, body)
			}
		}
	}
	if len(f.started) != 2 || len(f.canceled) != 1 {
		t.Errorf("a forged post did something: started %v, cancelled %v", f.started, f.canceled)
	}
}

// TestNoControls: a console whose processes cannot be started, cancelled
// or retried has no such forms or routes.
func TestNoControls(t *testing.T) {
	f := meetingFixture(t)
	c := newTestConsole(t, Options{Processes: readOnly{f}})
	for _, path := range []string{"/", "/processes/schedule-meeting-0000aaaa", "/processes/billing-0000cccc"} {
		_, page := get(t, c, path)
		for _, not := range []string{"/start", "/cancel", "/retry"} {
			if strings.Contains(page, not) {
				t.Errorf("%s links %s:\n%s", path, not, page)
			}
		}
	}
	if status, _ := get(t, c, "/start"); status != 404 {
		t.Errorf("/start: %d", status)
	}
}

// readOnly is processes that can be read and answered, nothing more.
type readOnly struct{ f *fakeProcesses }

func (r readOnly) List(ctx context.Context, opts process.ListOptions) (process.Page, error) {
	return r.f.List(ctx, opts)
}
func (r readOnly) Get(ctx context.Context, id string) (*process.Info, error) { return r.f.Get(ctx, id) }
func (r readOnly) Answer(ctx context.Context, id string, answer jsonv.Value) (*process.View, error) {
	return r.f.Answer(ctx, id, answer)
}

// TestAnswerAudit: a person's answer is recorded with who sent it — the
// signed-in session, with the name given at sign-in — and the process's
// page shows who and when.
func TestAnswerAudit(t *testing.T) {
	f := meetingFixture(t)
	const token = "s3cret-token"
	srv := httptest.NewServer(newTestConsole(t, Options{Processes: f, Token: token}))
	defer srv.Close()
	b := browser(t)
	resp, body := do(t, b, "POST", srv.URL+"/signin", url.Values{"token": {token}, "name": {"  Ada\tLovelace\n"}, "next": {"/inbox"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign in: %d\n%s", resp.StatusCode, body)
	}
	_, inbox := do(t, b, "GET", srv.URL+"/inbox", nil)
	resp, body = do(t, b, "POST", srv.URL+"/processes/schedule-meeting-0000aaaa/answer",
		url.Values{"csrf": {csrfOf(t, inbox)}, "/confirmInvitation/decision": {`"Approve"`}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("answer: %d\n%s", resp.StatusCode, body)
	}
	info, _ := f.Get(t.Context(), "schedule-meeting-0000aaaa")
	if len(info.Answers) != 1 || !regexp.MustCompile(`^Ada Lovelace \(console session [0-9a-f]{8}\)$`).MatchString(info.Answers[0].By) {
		t.Fatalf("recorded %+v", info.Answers)
	}
	_, page := do(t, b, "GET", srv.URL+"/processes/schedule-meeting-0000aaaa", nil)
	if want := "Answered by <strong>" + info.Answers[0].By + "</strong> at 2026-11-23 12:00:00 UTC."; !strings.Contains(page, want) {
		t.Errorf("no %q on the page:\n%s", want, page)
	}

	// A client with the token, and a console open on loopback.
	for _, tc := range []struct {
		opts   Options
		header []string
		want   string
	}{
		{Options{Token: token}, []string{"Authorization", "Bearer " + token}, "a client with the token (bearer header)"},
		{Options{}, nil, "the console on loopback (no sign-in)"},
	} {
		f := meetingFixture(t)
		tc.opts.Processes = f
		srv := httptest.NewServer(newTestConsole(t, tc.opts))
		b := browser(t)
		form := url.Values{"/confirmInvitation/decision": {`"Reject"`}}
		if tc.header == nil {
			_, inbox := do(t, b, "GET", srv.URL+"/inbox", nil)
			form.Set("csrf", csrfOf(t, inbox))
		}
		resp, body := do(t, b, "POST", srv.URL+"/processes/schedule-meeting-0000aaaa/answer", form, tc.header...)
		srv.Close()
		info, _ := f.Get(t.Context(), "schedule-meeting-0000aaaa")
		if resp.StatusCode != http.StatusSeeOther || len(info.Answers) != 1 || info.Answers[0].By != tc.want {
			t.Errorf("%d, recorded %+v, want %q\n%s", resp.StatusCode, info.Answers, tc.want, body)
		}
	}
}

// TestSigninName: the name given at sign-in is kept printable, on one
// line, and short.
func TestSigninName(t *testing.T) {
	for in, want := range map[string]string{
		"Ada":                        "Ada",
		"  Ada \t\n Lovelace ":       "Ada Lovelace",
		"A\x00d\u202ea":              "A d a",
		strings.Repeat("é", maxName): strings.Repeat("é", maxName/2),
	} {
		if got := cleanName(in); got != want {
			t.Errorf("cleanName(%q) = %q, want %q", in, got, want)
		}
	}
}
