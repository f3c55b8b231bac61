package console

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/internal/golden"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/schema"
)

// testNow is the console's clock in tests, so that ages are stable.
var testNow = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// newTestConsole is a console over opts with its clock at testNow and a
// quiet logger.
func newTestConsole(t testing.TB, opts Options) *console {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	c, err := newConsole(opts)
	if err != nil {
		t.Fatal(err)
	}
	c.now = func() time.Time { return testNow }
	return c
}

// get asks h for path on loopback, as a browser typing it would.
func get(t testing.TB, h http.Handler, path string) (int, string) {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "http://127.0.0.1:8080"+path, nil))
	return w.Code, w.Body.String()
}

// fakeProcesses holds processes in memory; Answer checks an answer against
// the waited chunk's schema with the engine's own check (schema.Check),
// and refuses it as the engine does.
type fakeProcesses struct {
	mu       sync.Mutex
	infos    []*process.Info // newest first
	programs map[string]*compile.Program
	answers  map[string]jsonv.Value
	// listed are the options of each List; started the processes Start
	// and Retry started, canceled those Cancel cancelled.
	listed   []process.ListOptions
	started  []string
	canceled []string
	// pipelines are the options of the pipelines Start started.
	pipelines []process.StartOptions
	// seq numbers the processes started, for their ids.
	seq int
}

// List pages as the engine does: a page of Limit, newest first, its
// cursor the place of the next page's first process.
func (f *fakeProcesses) List(_ context.Context, opts process.ListOptions) (process.Page, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listed = append(f.listed, opts)
	var match []process.Summary
	for _, in := range f.infos {
		if (opts.Status == "" || in.Status == opts.Status) && strings.HasPrefix(in.Process, opts.Process) &&
			(opts.Since.IsZero() || !in.StartedAt.Before(opts.Since)) && (opts.Before.IsZero() || in.StartedAt.Before(opts.Before)) {
			match = append(match, process.Summary{ID: in.ID, Process: in.Process, Status: in.Status, StartedAt: in.StartedAt, EndedAt: in.EndedAt})
		}
	}
	from := 0
	if opts.Cursor != "" {
		if _, err := fmt.Sscan(opts.Cursor, &from); err != nil || from < 0 || from > len(match) {
			return process.Page{}, fmt.Errorf("list processes: cursor %q: %w", opts.Cursor, durable.ErrBadCursor)
		}
	}
	limit := cmp.Or(opts.Limit, durable.DefaultListLimit)
	to := min(from+limit, len(match))
	page := process.Page{Processes: match[from:to]}
	if to < len(match) {
		page.Next = fmt.Sprint(to)
	}
	return page, nil
}

// Start starts a process of the example's program, running its first
// chunk.
func (f *fakeProcesses) Start(_ context.Context, opts process.StartOptions) (*process.Started, error) {
	if opts.Pipeline != "" {
		f.mu.Lock()
		f.pipelines = append(f.pipelines, opts)
		f.mu.Unlock()
		return f.add(cmp.Or(opts.Name, "pipeline"), opts.Input), nil
	}
	name, ok := strings.CutPrefix(opts.Process, "aug:processes/")
	if !ok || name != "schedule-meeting" {
		return nil, fmt.Errorf("%w: %s", registry.ErrNotFound, opts.Process)
	}
	return f.add(name, opts.Input), nil
}

// add starts a process name with input, as the engine would.
func (f *fakeProcesses) add(name string, input jsonv.Value) *process.Started {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	id := fmt.Sprintf("%s-0001%04x", name, f.seq)
	state := jsonv.ObjectValue()
	if !input.IsNull() {
		state = jsonv.ObjectValue(jsonv.Member{Name: "input", Value: input})
	}
	in := &process.Info{ID: id, Process: name, StartedAt: testNow,
		View: process.View{Status: process.Running, Chunk: "LLM_llmContext1", Done: []string{}, State: state, Thinking: jsonv.ObjectValue(), Metrics: jsonv.ObjectValue(),
			Timings: []process.Timing{{Chunk: "LLM_llmContext1", Start: testNow.Add(-1500 * time.Millisecond)}}}}
	f.infos = append([]*process.Info{in}, f.infos...)
	for _, other := range f.infos {
		if p, ok := f.programs[other.ID]; ok && other.Process == name && f.programs != nil {
			f.programs[id] = p
			break
		}
	}
	f.started = append(f.started, id)
	return &process.Started{ID: id, Name: name}
}

// Cancel ends a running process failed, as the engine does.
func (f *fakeProcesses) Cancel(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, in := range f.infos {
		if in.ID == id {
			f.canceled = append(f.canceled, id)
			if in.Status == process.Running || in.Status == process.Waiting {
				msg, end := "the workflow was canceled", testNow
				in.Status, in.Waiting, in.Error, in.EndedAt = process.Failed, nil, &msg, &end
			}
			return nil
		}
	}
	return fmt.Errorf("%w: %s", process.ErrNotFound, id)
}

// Retry starts process id again, with its input.
func (f *fakeProcesses) Retry(ctx context.Context, id string) (*process.Started, error) {
	info, err := f.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return f.add(info.Process, info.State.Lookup("input")), nil
}

func (f *fakeProcesses) Get(_ context.Context, id string) (*process.Info, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, in := range f.infos {
		if in.ID == id {
			cp := *in
			return &cp, nil
		}
	}
	return nil, fmt.Errorf("%w: %s", process.ErrNotFound, id)
}

func (f *fakeProcesses) Answer(ctx context.Context, id string, answer jsonv.Value) (*process.View, error) {
	return f.AnswerAs(ctx, id, answer, "")
}

// AnswerAs takes an answer as the engine does, and records who sent it
// and when, as the process's view does.
func (f *fakeProcesses) AnswerAs(ctx context.Context, id string, answer jsonv.Value, by string) (*process.View, error) {
	info, err := f.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if info.Waiting == nil {
		return nil, &process.NotWaitingError{ID: id, Status: info.Status}
	}
	problems, err := schema.Check(info.Waiting.Schema, answer)
	if err != nil {
		return nil, err
	}
	if len(problems) > 0 {
		e := &process.AnswerError{Chunk: info.Waiting.Chunk, Problems: problems}
		return nil, &process.RefusedError{Message: e.Error(), Err: e}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answers[id] = answer
	for _, in := range f.infos {
		if in.ID == id {
			in.Answers = append(in.Answers, process.Answered{Chunk: in.Waiting.Chunk, By: by, At: testNow})
			in.Status, in.Waiting, in.Chunk = process.Running, nil, "SERVER_serverContext2"
		}
	}
	return &info.View, nil
}

func (f *fakeProcesses) Program(_ context.Context, id string) (*compile.Program, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p, ok := f.programs[id]; ok {
		return p, nil
	}
	return nil, fmt.Errorf("%w: %s", process.ErrNotFound, id)
}

// set changes a process in place, as the engine would.
func (f *fakeProcesses) set(id string, change func(*process.Info)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, in := range f.infos {
		if in.ID == id {
			change(in)
		}
	}
}

// meetingProgram is the example's schedule-meeting process, compiled.
func meetingProgram(t testing.TB) *compile.Program {
	t.Helper()
	reg, err := registry.Open("../examples/schedule-meeting/registry")
	if err != nil {
		t.Fatal(err)
	}
	d, err := reg.Document("aug:processes/schedule-meeting")
	if err != nil {
		t.Fatal(err)
	}
	p, err := compile.Compile(context.Background(), d.File, d.Value, compile.Options{Registry: reg, Actions: []string{"FetchAvailability_Activity", "sendInvitation"}})
	if err != nil {
		t.Fatal(err)
	}
	return p.Program()
}

func mustJSON(t testing.TB, s string) jsonv.Value {
	t.Helper()
	v, err := jsonv.Parse([]byte(s))
	if err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	return v
}

// The model's draft holds a script: the console must show it as text.
const draft = `{"subject":"Meeting on March 20","body":"Hi Bob,\n<script>alert(1)</script>\nshall we meet at 14:00?"}`

// meetingFixture is three processes of the example: one waiting for the
// approval (after a repair turn on its second model call), one completed,
// one failed.
func meetingFixture(t testing.TB) *fakeProcesses {
	prog := meetingProgram(t)
	state := mustJSON(t, `{"llmContext1":{"identifyParticipants":{"organizer":"alice@example.com","attendee":"bob@example.com"},
		"fetchAvailability":{"organizerEmail":"alice@example.com","attendeeEmail":"bob@example.com","timeRange":{"start":"2024-03-20T09:00:00Z","end":"2024-03-20T17:00:00Z"}}},
		"serverContext1":{"FetchAvailability_Activity":{"organizerSlots":["2024-03-20T14:00:00Z"],"attendeeSlots":["2024-03-20T14:00:00Z"]}},
		"llmContext2":{"findCommonSlot":{"selectedSlot":"2024-03-20T14:00:00Z","reasoning":"both are free at two"},"draftInvitation":`+draft+`}}`)
	calls := []process.ModelCall{
		{Chunk: "LLM_llmContext1", Prompt: "Meet Alice and Bob", Context: jsonv.ObjectValue(), Model: "test-model",
			Usage: llm.Usage{PromptTokens: 100, CompletionTokens: 30},
			Turns: []llm.Turn{{Answer: string(jsonv.Marshal(mustJSON(t, `{"identifyParticipants":{"organizer":"alice@example.com","attendee":"bob@example.com"},"fetchAvailability":{"organizerEmail":"alice@example.com","attendeeEmail":"bob@example.com","timeRange":{"start":"2024-03-20T09:00:00Z","end":"2024-03-20T17:00:00Z"}}}`))),
				Usage: llm.Usage{PromptTokens: 100, CompletionTokens: 30}, LatencyMs: 812}}},
		{Chunk: "LLM_llmContext2", Prompt: "Meet Alice and Bob", Context: mustJSON(t, `{"llmContext1":{"identifyParticipants":{"organizer":"alice@example.com","attendee":"bob@example.com"}}}`), Model: "test-model",
			Usage: llm.Usage{PromptTokens: 260, CompletionTokens: 70},
			Turns: []llm.Turn{
				{Answer: `{"findCommonSlot":{"selectedSlot":"at two","reasoning":"both are free"}}`, Problems: []schema.Invalid{{Path: "/findCommonSlot/selectedSlot", Message: "'at two' is not valid date-time"}, {Path: "", Message: "missing property 'draftInvitation'"}},
					Usage: llm.Usage{PromptTokens: 120, CompletionTokens: 30}, LatencyMs: 640},
				{Answer: `{"findCommonSlot":{"selectedSlot":"2024-03-20T14:00:00Z","reasoning":"both are free at two","_why":"the only common slot"},"draftInvitation":` + draft + `}`,
					Usage: llm.Usage{PromptTokens: 140, CompletionTokens: 40}, LatencyMs: 702}}},
	}
	failedMsg := "step llmContext1: the model's answer does not fit after 3 requests: /identifyParticipants/organizer: missing property 'organizer'"
	waiting := &process.Info{ID: "schedule-meeting-0000aaaa", Process: "schedule-meeting", StartedAt: testNow.Add(-5 * time.Minute),
		View: process.View{Status: process.Waiting, Chunk: "USER_userContext", Done: []string{"LLM_llmContext1", "SERVER_serverContext1", "LLM_llmContext2"},
			Waiting: &process.Pending{Chunk: "USER_userContext", Schema: prog.Chunks[3].Schema, Context: mustJSON(t, `{"llmContext2":{"draftInvitation":`+draft+`}}`)},
			State:   state, Thinking: mustJSON(t, `{"llmContext2.findCommonSlot":{"_why":"the only common slot"}}`), Metrics: jsonv.ObjectValue(),
			Usage: llm.Usage{PromptTokens: 360, CompletionTokens: 100}, Calls: calls,
			StepUsage: []process.StepUsage{{Step: "llmContext2.draftInvitation", Usage: llm.Usage{PromptTokens: 140, CompletionTokens: 41}}},
			Timings:   timings(testNow.Add(-5*time.Minute), "LLM_llmContext1", 900, "SERVER_serverContext1", 0, "serverContext1.FetchAvailability_Activity", 2300, "", 50, "LLM_llmContext2", 1400, "USER_userContext", -1)}}
	completedAt, failedAt := testNow.Add(-3*time.Hour+95*time.Minute+12*time.Second), testNow.Add(-50*time.Hour+4*time.Second)
	completed := &process.Info{ID: "schedule-meeting-0000bbbb", Process: "schedule-meeting", StartedAt: testNow.Add(-3 * time.Hour), EndedAt: &completedAt,
		View: process.View{Status: process.Completed, Done: []string{"LLM_llmContext1", "SERVER_serverContext1", "LLM_llmContext2", "USER_userContext", "SERVER_serverContext2"},
			State: state, Thinking: jsonv.ObjectValue(), Metrics: jsonv.ObjectValue(), Usage: llm.Usage{PromptTokens: 360, CompletionTokens: 100}, Calls: calls,
			Timings: timings(testNow.Add(-3*time.Hour), "LLM_llmContext1", 900, "SERVER_serverContext1", 0, "serverContext1.FetchAvailability_Activity", 2300, "", 50,
				"LLM_llmContext2", 1400, "USER_userContext", (95*time.Minute + 5*time.Second).Milliseconds(), "SERVER_serverContext2", 0, "serverContext2.sendInvitation", 1200, "", 10),
			Answers: []process.Answered{{Chunk: "USER_userContext", By: "Ada (console session 5eed1234)", At: testNow.Add(-3*time.Hour + 95*time.Minute + 10*time.Second)}}}}
	failed := &process.Info{ID: "billing-0000cccc", Process: "billing", StartedAt: testNow.Add(-50 * time.Hour), EndedAt: &failedAt,
		View: process.View{Status: process.Failed, Chunk: "LLM_llmContext1", Done: []string{}, State: jsonv.ObjectValue(), Thinking: jsonv.ObjectValue(), Metrics: jsonv.ObjectValue(),
			Calls: []process.ModelCall{{Chunk: "LLM_llmContext1", Context: jsonv.ObjectValue(), Turns: []llm.Turn{{Answer: "I cannot", ParseError: "invalid character 'I' looking for beginning of value"},
				{Answer: `{"identifyParticipants":{}}`, Problems: []schema.Invalid{{Path: "/identifyParticipants", Message: "missing property 'organizer'"}}}}}},
			Error: &failedMsg}}
	return &fakeProcesses{infos: []*process.Info{waiting, completed, failed}, answers: map[string]jsonv.Value{},
		programs: map[string]*compile.Program{waiting.ID: prog, completed.ID: prog, failed.ID: prog}}
}

// timings are a process's timings from start: each chunk (or "chunk.step"
// name, a SERVER step's action inside the chunk before it) with the
// milliseconds it ran, one after the other; a chunk's span covers its
// steps', which follow it with the chunk's own milliseconds after them
// given as a step named "". -1 is a span that has not ended.
func timings(start time.Time, spans ...any) []process.Timing {
	var out []process.Timing
	at, chunk := start, -1
	for i := 0; i+1 < len(spans); i += 2 {
		name, ms := spans[i].(string), time.Duration(toInt64(spans[i+1]))*time.Millisecond
		switch {
		case name == "": // the rest of the chunk's own time
			at = at.Add(ms)
			end := at
			out[chunk].End = &end
		case strings.Contains(name, "."): // a step of the chunk
			end := at.Add(ms)
			out = append(out, process.Timing{Chunk: out[chunk].Chunk, Step: name, Start: at, End: &end})
			at = end
		default:
			out = append(out, process.Timing{Chunk: name, Start: at})
			chunk = len(out) - 1
			if ms > 0 {
				at = at.Add(ms)
				end := at
				out[chunk].End = &end
			}
		}
	}
	return out
}

func toInt64(v any) int64 {
	switch v := v.(type) {
	case int:
		return int64(v)
	case int64:
		return v
	}
	panic(fmt.Sprintf("not a number of milliseconds: %v", v))
}

// TestPages: every page answers, with what a person looks for on it.
func TestPages(t *testing.T) {
	c := newTestConsole(t, Options{Processes: meetingFixture(t), TemporalUI: "http://127.0.0.1:8233/"})
	for _, tc := range []struct {
		path   string
		status int
		want   []string
		not    []string
	}{
		{"/", 200, []string{"<h1>Processes", `href="/processes/schedule-meeting-0000aaaa"`, `<a href="/inbox#schedule-meeting-0000aaaa">USER_userContext</a>`,
			`<span class="badge failed">failed</span>`, `>460<`, `data-live="/events/"`,
			// Start and end times, and durations: so far while it runs.
			`title="2026-11-23 11:55:00 UTC">11:55:00<`, `>5m00s so far<`,
			`title="2026-11-23 09:00:00 UTC">09:00:00<`, `title="2026-11-23 10:35:12 UTC">10:35:12<`, `>1h35m<`,
			`title="2026-11-21 10:00:00 UTC">2026-11-21 10:00<`, `>4.0s<`,
			// Totals of the page; no prices, no cost.
			"Totals of the 3 processes on this page: <strong>920 tokens</strong> (720 prompt + 200 completion)",
			`<a class="button" href="/start">Start a process</a>`}, []string{"Cost", `rel="next"`}},
		{"/processes?status=waiting", 200, []string{"schedule-meeting-0000aaaa", `<option value="waiting" selected>`, `data-live="/events/processes?status=waiting"`},
			[]string{"schedule-meeting-0000bbbb", "billing-0000cccc"}},
		{"/processes?name=bill", 200, []string{"billing-0000cccc", `value="bill"`}, []string{"schedule-meeting-0000aaaa"}},
		{"/processes?status=completed&name=bill", 200, []string{"No processes match."}, nil},
		{"/processes/schedule-meeting-0000aaaa", 200, []string{
			`<svg`, `id="chunk-4"`, `class="chunk waiting"`, `class="chunk done"`,
			"Waits for a person's answer to",
			// What the model was sent: the request, the minimal context, the schema.
			"The minimal context", "The schema", `&#34;selectedSlot&#34;`,
			// Its answers, a repair turn with its problems by path.
			"Repair turn 2", "<code>/findCommonSlot/selectedSlot</code>", "&#39;at two&#39; is not valid date-time",
			"2 turns, 1 of them repairs", "640 ms", "1342 ms",
			// Thinking apart from the output.
			`<pre class="thinking">{
  &#34;_why&#34;: &#34;the only common slot&#34;
}</pre>`,
			"140 prompt + 41 completion tokens: its share of the call",
			`→ sendInvitation`, `<a class="temporal" href="http://127.0.0.1:8233/namespaces/default/workflows/schedule-meeting-0000aaaa"`,
			// The answer form, with the context beside it.
			`action="/processes/schedule-meeting-0000aaaa/answer"`, `name="/confirmInvitation/decision"`, "What it is about",
			// The model's script, as text.
			"&lt;script&gt;alert(1)&lt;/script&gt;",
			// It runs: it can be cancelled, not retried; the wait counts on.
			`action="/processes/schedule-meeting-0000aaaa/cancel"`, "waiting · waited 4m55s so far", "took 5m00s so far",
		}, []string{"<script>alert(1)", "/retry", "Answered by"}},
		{"/processes/billing-0000cccc", 200, []string{`<section class="failure">`, "missing property &#39;organizer&#39;", "<code>/identifyParticipants</code>",
			"Not JSON: invalid character", `class="chunk failed"`, "ended 2026-11-21 10:00:04 UTC · took 4.0s", `action="/processes/billing-0000cccc/retry"`},
			[]string{`id="answer"`, "/cancel"}},
		{"/processes/schedule-meeting-0000bbbb", 200, []string{
			// Durations of the chunks, the wait for a person, and each action.
			"done · 900ms</span>", "done · 2.4s</span>", "FetchAvailability_Activity</span> <span class=\"took\">2.3s</span>",
			"done · waited 1h35m</span>", "sendInvitation</span> <span class=\"took\">1.2s</span>",
			// Who answered, and when.
			"Answered by <strong>Ada (console session 5eed1234)</strong> at 2026-11-23 10:35:10 UTC.",
			"took 1h35m · ", `action="/processes/schedule-meeting-0000bbbb/retry"`}, []string{"so far", "/cancel"}},
		{"/processes/nope", 404, []string{"no such process: nope"}, nil},
		{"/inbox", 200, []string{`id="schedule-meeting-0000aaaa"`, `name="/confirmInvitation/decision"`, `value="&#34;Approve&#34;"`, `name="from" value="inbox"`,
			"&lt;script&gt;alert(1)&lt;/script&gt;"}, []string{"schedule-meeting-0000bbbb", "<script>alert(1)"}},
		{"/static/console.css", 200, []string{".badge.waiting"}, nil},
		{"/static/console.js", 200, []string{"EventSource"}, nil},
		{"/static/schemaform.js", 200, []string{"sf-add"}, nil},
		{"/requests", 404, []string{"nothing here"}, nil}, // no Requests given
		{"/batches", 404, []string{"nothing here"}, nil},
		{"/signin", 303, nil, nil}, // nothing to sign in to without a token
		{"/nowhere", 404, []string{"nothing here: GET /nowhere"}, nil},
	} {
		t.Run(tc.path, func(t *testing.T) {
			status, body := get(t, c, tc.path)
			if status != tc.status {
				t.Errorf("status %d, want %d\n%s", status, tc.status, body)
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("no %q in\n%s", w, body)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(body, n) {
					t.Errorf("%q in\n%s", n, body)
				}
			}
		})
	}
}

// TestHeaders: every page keeps to its own scripts and styles.
func TestHeaders(t *testing.T) {
	c := newTestConsole(t, Options{Processes: meetingFixture(t)})
	w := httptest.NewRecorder()
	c.ServeHTTP(w, httptest.NewRequest("GET", "http://127.0.0.1/", nil))
	csp := w.Header().Get("Content-Security-Policy")
	for _, want := range []string{"script-src 'self'", "style-src 'self'", "frame-ancestors 'none'", "form-action 'self'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q has no %q", csp, want)
		}
	}
	if got := w.Header().Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("X-Content-Type-Options %q", got)
	}
	if strings.Contains(w.Body.String(), "<script>") || regexp.MustCompile(`\son[a-z]+=`).MatchString(w.Body.String()) {
		t.Errorf("an inline script or handler in\n%s", w.Body.String())
	}
}

// csrfOf reads the CSRF token out of a page.
func csrfOf(t testing.TB, body string) string {
	t.Helper()
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no CSRF token in\n%s", body)
	}
	return m[1]
}

// browser is a cookie-keeping client of a test server that does not follow
// redirects.
func browser(t testing.TB) *http.Client {
	t.Helper()
	jar := &cookieJar{}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// cookieJar keeps every cookie, Secure or not, for any host of the test.
type cookieJar struct {
	mu      sync.Mutex
	cookies []*http.Cookie
}

func (j *cookieJar) SetCookies(_ *url.URL, cs []*http.Cookie) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, c := range cs {
		j.cookies = slices.DeleteFunc(j.cookies, func(o *http.Cookie) bool { return o.Name == c.Name })
		if c.MaxAge >= 0 {
			j.cookies = append(j.cookies, c)
		}
	}
}

func (j *cookieJar) Cookies(*url.URL) []*http.Cookie {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.cookies)
}

func do(t testing.TB, c *http.Client, method, u string, form url.Values, header ...string) (*http.Response, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestAnswer: a wrong answer shows its problem at its field and the
// process keeps waiting; a right one is taken and the browser goes to the
// process's page.
func TestAnswer(t *testing.T) {
	f := meetingFixture(t)
	srv := httptest.NewServer(newTestConsole(t, Options{Processes: f}))
	defer srv.Close()
	b := browser(t)
	_, inbox := do(t, b, "GET", srv.URL+"/inbox", nil)
	token := csrfOf(t, inbox)
	answer := srv.URL + "/processes/schedule-meeting-0000aaaa/answer"

	// Nothing chosen: the engine's check says the decision is missing.
	resp, body := do(t, b, "POST", answer, url.Values{"csrf": {token}, "from": {"inbox"}})
	if resp.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("no decision: %d\n%s", resp.StatusCode, body)
	}
	for _, want := range []string{"The answer does not fit; the process keeps waiting.", `<p class="sf-problem" role="alert">required</p>`, "<h1>Inbox</h1>"} {
		if !strings.Contains(body, want) {
			t.Errorf("no %q in the refusal\n%s", want, body)
		}
	}
	if len(f.answers) != 0 {
		t.Fatalf("a refused answer was taken: %v", f.answers)
	}
	// From the process's page, the refusal is shown there.
	resp, body = do(t, b, "POST", answer, url.Values{"csrf": {token}, "/confirmInvitation/decision": {`"Maybe"`}})
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(body, `id="chunk-4"`) || !strings.Contains(body, "value must be one of") {
		t.Fatalf("a decision out of the enum: %d\n%s", resp.StatusCode, body)
	}

	resp, body = do(t, b, "POST", answer, url.Values{"csrf": {token}, "from": {"inbox"}, "/confirmInvitation/decision": {`"Approve"`}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/processes/schedule-meeting-0000aaaa" {
		t.Fatalf("approve: %d %v\n%s", resp.StatusCode, resp.Header, body)
	}
	if got := string(jsonv.Marshal(f.answers["schedule-meeting-0000aaaa"])); got != `{"confirmInvitation":{"decision":"Approve"}}` {
		t.Errorf("answer %s", got)
	}
	// Once answered, another answer is refused: it waits for none.
	resp, body = do(t, b, "POST", answer, url.Values{"csrf": {token}, "/confirmInvitation/decision": {`"Approve"`}})
	if resp.StatusCode != http.StatusConflict {
		t.Errorf("a second answer: %d\n%s", resp.StatusCode, body)
	}
}

// TestForgery: a form post from another origin, without the CSRF token or
// with another browser's, is refused and nothing is answered.
func TestForgery(t *testing.T) {
	f := meetingFixture(t)
	srv := httptest.NewServer(newTestConsole(t, Options{Processes: f}))
	defer srv.Close()
	b := browser(t)
	_, page := do(t, b, "GET", srv.URL+"/inbox", nil)
	token := csrfOf(t, page)
	other := browser(t)
	_, otherPage := do(t, other, "GET", srv.URL+"/inbox", nil)
	otherToken := csrfOf(t, otherPage)
	answer := srv.URL + "/processes/schedule-meeting-0000aaaa/answer"
	approve := func(csrf string) url.Values {
		return url.Values{"csrf": {csrf}, "/confirmInvitation/decision": {`"Approve"`}}
	}
	for _, tc := range []struct {
		name   string
		form   url.Values
		header []string
		want   string
	}{
		{"no token", approve(""), nil, "CSRF token is missing or stale"},
		{"another browser's token", approve(otherToken), nil, "CSRF token is missing or stale"},
		{"another origin", approve(token), []string{"Origin", "http://evil.example"}, "web page origin"},
		{"cross-site", approve(token), []string{"Sec-Fetch-Site", "cross-site"}, "Sec-Fetch-Site"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := do(t, b, "POST", answer, tc.form, tc.header...)
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, tc.want) {
				t.Errorf("%d\n%s", resp.StatusCode, body)
			}
		})
	}
	if len(f.answers) != 0 {
		t.Fatalf("a forged answer was taken: %v", f.answers)
	}
	resp, _ := do(t, b, "POST", answer, approve(token), "Origin", srv.URL)
	if resp.StatusCode != http.StatusSeeOther {
		t.Errorf("the page's own post: %d", resp.StatusCode)
	}
}

// TestEvents: the list's event stream sends the live part of the page at
// once, then again when a process changes, and ends when told to stop.
func TestEvents(t *testing.T) {
	f := meetingFixture(t)
	stop := make(chan struct{})
	srv := httptest.NewServer(newTestConsole(t, Options{Processes: f, Poll: 20 * time.Millisecond, Stop: stop}))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/events/processes?status=waiting")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	events := make(chan string, 10)
	go func() {
		defer close(events)
		var ev strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			ev.Write(buf[:n])
			for {
				s := ev.String()
				i := strings.Index(s, "\n\n")
				if i < 0 {
					break
				}
				events <- s[:i]
				ev.Reset()
				ev.WriteString(s[i+2:])
			}
			if err != nil {
				return
			}
		}
	}()
	next := func() string {
		t.Helper()
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("the stream ended")
			}
			return ev
		case <-time.After(5 * time.Second):
			t.Fatal("no event")
		}
		return ""
	}
	if ev := next(); ev != "retry: 1000" {
		t.Fatalf("first %q", ev)
	}
	ev := next()
	if !strings.HasPrefix(ev, "event: page\ndata: <p class=\"totals\">") || !strings.Contains(ev, "schedule-meeting-0000aaaa") {
		t.Fatalf("the page %q", ev)
	}
	for _, line := range strings.Split(ev, "\n")[1:] {
		if !strings.HasPrefix(line, "data: ") {
			t.Fatalf("a line that is no data field: %q", line)
		}
	}
	f.set("schedule-meeting-0000aaaa", func(in *process.Info) { in.Status, in.Waiting = process.Running, nil })
	if ev := next(); !strings.Contains(ev, "No processes match.") {
		t.Errorf("after the change %q", ev)
	}
	close(stop)
	select {
	case _, ok := <-events:
		if ok {
			t.Error("an event after Stop")
		}
	case <-time.After(5 * time.Second):
		t.Error("the stream did not end on Stop")
	}
}

// TestEventsNotFound: a stream of an unknown process, or of no page, is
// refused at once.
func TestEventsNotFound(t *testing.T) {
	c := newTestConsole(t, Options{Processes: meetingFixture(t)})
	for _, path := range []string{"/events/processes/nope", "/events/nowhere", "/events/events/processes"} {
		if status, body := get(t, c, path); status != 404 {
			t.Errorf("%s: %d %s", path, status, body)
		}
	}
}

// TestGolden: the live parts of the processes list and of a process's
// page, as a person sees them (go test ./console -update rewrites them).
func TestGolden(t *testing.T) {
	c := newTestConsole(t, Options{Processes: meetingFixture(t), TemporalUI: "http://127.0.0.1:8233"})
	for _, tc := range []struct{ path, file string }{
		{"/processes", "testdata/processes.live.html"},
		{"/processes/schedule-meeting-0000aaaa", "testdata/process-waiting.live.html"},
		{"/processes/billing-0000cccc", "testdata/process-failed.live.html"},
	} {
		frag, err := c.fragment(context.Background(), &url.URL{Path: tc.path})
		if err != nil {
			t.Fatal(err)
		}
		golden.Check(t, tc.file, frag)
	}
}

// countingLists counts the lists asked of the processes.
type countingLists struct {
	*fakeProcesses
	lists atomic.Int64
}

func (c *countingLists) List(ctx context.Context, opts process.ListOptions) (process.Page, error) {
	c.lists.Add(1)
	return c.fakeProcesses.List(ctx, opts)
}

// TestEventsShared: a hundred streams of the list page share one reader
// of it: the processes are listed about once a Poll, not once a Poll per
// stream, each stream gets the page, and the reading stops with the last
// stream.
func TestEventsShared(t *testing.T) {
	f := &countingLists{fakeProcesses: meetingFixture(t)}
	const poll = 20 * time.Millisecond
	c := newTestConsole(t, Options{Processes: f, Poll: poll})
	srv := httptest.NewServer(c)
	defer srv.Close()
	const streams = 100
	bodies := make([]io.ReadCloser, streams)
	start := time.Now()
	for i := range bodies {
		resp, err := http.Get(srv.URL + "/events/processes")
		if err != nil {
			t.Fatal(err)
		}
		bodies[i] = resp.Body
		buf := make([]byte, 64<<10)
		var got strings.Builder
		for !strings.Contains(got.String(), "schedule-meeting-0000aaaa") {
			n, err := resp.Body.Read(buf)
			got.Write(buf[:n])
			if err != nil {
				t.Fatalf("stream %d: %v after %q", i, err, got.String())
			}
		}
	}
	time.Sleep(10 * poll)
	elapsed := time.Since(start)
	if lists, most := f.lists.Load(), int64(elapsed/poll)+5; lists > most {
		t.Errorf("%d streams over %s listed the processes %d times, more than the %d polls one reader makes", streams, elapsed.Round(time.Millisecond), lists, most)
	} else {
		t.Logf("%d streams over %s: %d lists", streams, elapsed.Round(time.Millisecond), lists)
	}
	for _, b := range bodies {
		b.Close()
	}
	// The server sees each stream end at its next write or poll.
	deadline := time.Now().Add(5 * time.Second)
	for {
		c.feeds.mu.Lock()
		left := len(c.feeds.m)
		c.feeds.mu.Unlock()
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d pages still read after their streams ended", left)
		}
		time.Sleep(poll)
	}
}

// TestFireAndForgetOutcome: a fire-and-forget step inside a context shows
// how its action ended — attempts, last error — read after its process
// completed, not the view's "started".
func TestFireAndForgetOutcome(t *testing.T) {
	doc := mustJSON(t, `{"title":"Log","type":"object","properties":{"llmContext1":{"type":"object","properties":{
		"note":{"type":"object","properties":{"text":{"type":"string"}}},
		"logEvent":{"type":"object","properties":{"event":{"type":"string"}}}}}}}`)
	p, err := compile.Compile(context.Background(), "log.json", doc, compile.Options{Actions: []string{"logEvent"}})
	if err != nil {
		t.Fatal(err)
	}
	prog := p.Program()
	info := &process.Info{ID: "log-0000dddd", Process: "log", StartedAt: testNow.Add(-time.Minute),
		View: process.View{Status: process.Completed, Done: []string{"LLM_llmContext1"},
			State:    mustJSON(t, `{"llmContext1":{"note":{"text":"a"},"logEvent":{"event":"e"}}}`),
			Thinking: jsonv.ObjectValue(), Metrics: jsonv.ObjectValue(),
			Actions: map[string]string{"llmContext1.logEvent": "failed: boom"}},
		ActionRuns: []process.ActionRun{{Step: "llmContext1.logEvent", Workflow: "log-0000dddd-llmContext1-logEvent", Status: process.ActionFailed, Attempts: 3, LastError: "boom", Done: true}}}
	c := newTestConsole(t, Options{Processes: &fakeProcesses{infos: []*process.Info{info}, answers: map[string]jsonv.Value{}, programs: map[string]*compile.Program{info.ID: prog}}})
	status, body := get(t, c, "/processes/"+info.ID)
	if want := "(fire and forget: failed after 3 attempts: boom)"; status != 200 || !strings.Contains(body, want) {
		t.Errorf("status %d; no %q in\n%s", status, want, body)
	}
}

// TestStalledCalls: a process whose calls wait for a worker with their
// model or action says so on its page, with the queue nobody polls.
func TestStalledCalls(t *testing.T) {
	doc := mustJSON(t, `{"title":"Log","type":"object","properties":{"llmContext1":{"type":"object","properties":{
		"note":{"type":"object","properties":{"text":{"type":"string"}}}}}}}`)
	p, err := compile.Compile(context.Background(), "log.json", doc, compile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	info := &process.Info{ID: "log-0000eeee", Process: "log", StartedAt: testNow.Add(-time.Minute),
		View: process.View{Status: process.Running, Chunk: "LLM_llmContext1", State: jsonv.ObjectValue(), Thinking: jsonv.ObjectValue(), Metrics: jsonv.ObjectValue()},
		Stalled: []process.Stalled{{Needs: "model", Queue: "vibe.model.0123456789abcdef", Since: testNow.Add(-30 * time.Second)},
			{Needs: "action", Action: "SendDraft", Queue: "vibe.action.SendDraft", Since: testNow.Add(-10 * time.Second)}}}
	c := newTestConsole(t, Options{Processes: &fakeProcesses{infos: []*process.Info{info}, answers: map[string]jsonv.Value{}, programs: map[string]*compile.Program{info.ID: p.Program()}}})
	status, body := get(t, c, "/processes/"+info.ID)
	for _, want := range []string{
		"Its model call waits for a worker with its model: none polls the task queue <code>vibe.model.0123456789abcdef</code>",
		"Its call of the action <b>SendDraft</b> waits for a worker that has it: none polls the task queue <code>vibe.action.SendDraft</code>",
	} {
		if status != 200 || !strings.Contains(body, want) {
			t.Errorf("status %d; no %q in\n%s", status, want, body)
		}
	}
}
