package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/augceo/vibe/internal/llmtest"
	"github.com/augceo/vibe/process"
)

// TestRunFireAndForget: a process's fire-and-forget actions, one that
// succeeds on its third attempt, one that fails for good after two, one
// that is still retrying when the wait ends. vibe run on its own engine
// waits for them with progress and its bound, then says what is pending
// and where it runs, with the command that runs it, and exits 1; vibe
// show reads each one's attempts, last error and whether it is done, long
// after the process completed.
func TestRunFireAndForget(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	reg := t.TempDir()
	os.MkdirAll(filepath.Join(reg, "instructions"), 0o755)
	for name, doc := range map[string]string{
		"Note":     `{"title":"Note","type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`,
		"LogEvent": `{"title":"Log the event","type":"object","properties":{"event":{"type":"string"}},"required":["event"]}`,
		"Alert":    `{"title":"Alert","type":"object","properties":{"level":{"type":"string"}},"required":["level"]}`,
		"Audit":    `{"title":"Audit","type":"object","properties":{"entry":{"type":"string"}},"required":["entry"]}`,
		"Summary":  `{"title":"Summary","type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`,
	} {
		os.WriteFile(filepath.Join(reg, "instructions", name+".json"), []byte(doc), 0o644)
	}
	var mu sync.Mutex
	calls := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls[r.URL.Path]++
		n := calls[r.URL.Path]
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/log" && n >= 3 {
			io.WriteString(w, `{"logged":true}`)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, `{"error":"%s is down (call %d)"}`, r.URL.Path, n)
	}))
	t.Cleanup(srv.Close)
	actions := filepath.Join(t.TempDir(), "actions.json")
	os.WriteFile(actions, []byte(fmt.Sprintf(`{"LogEvent": {"url": %q, "maxAttempts": 5}, "Alert": {"url": %q, "maxAttempts": 2}, "Audit": {"url": %q, "maxAttempts": 10}}`,
		srv.URL+"/log", srv.URL+"/alert", srv.URL+"/audit")), 0o644)
	model := llmtest.New(t, llmtest.ByName(map[string]string{
		"LLM_step1_note": `{"step1_note":{"text":"a"},"step2_log_event":{"event":"started"},"step3_alert":{"level":"high"},"step4_audit":{"entry":"e"},"step5_summary":{"text":"b"}}`,
	}))
	data := t.TempDir()
	status, stdout, stderr := run(t, "", "run", "--pipeline", `"p" | Note | LogEvent | Alert | Audit | Summary`, "--registry", reg,
		"--data", data, "--actions-file", actions, "--llm", "openai:test-model", "--llm-base-url", model.URL, "--wait-actions", "8s")
	if status != 1 || !strings.Contains(stdout, `"step5_summary"`) {
		t.Fatalf("run, with an action still pending: %d (want 1)\n%s%s", status, stdout, stderr)
	}
	id := strings.Fields(stderr[strings.Index(stderr, "vibe: started ")+len("vibe: started "):])[0]
	for _, want := range []string{
		"vibe: waiting up to 8s (--wait-actions) for ",
		"vibe: fire-and-forget step2_log_event completed after 3 attempts",
		"vibe: fire-and-forget step3_alert failed after 2 attempts: ",
		"/alert is down (call 2)",
		"vibe: fire-and-forget step4_audit running: ",
		"vibe: 1 fire-and-forget action(s) still pending after 8s; the process does not wait for them. They run on the embedded engine in " + data +
			": they go on when a vibe serve, vibe worker, vibe run or vibe batch next runs on that data directory, each in its workflow (" + id + "-step4_audit); vibe show " + id + " tells how they end; to run them now:\n  vibe serve --data " + data + " --actions-file " + actions + " --llm openai:test-model --llm-base-url " + model.URL,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("run's stderr lacks %q:\n%s", want, stderr)
		}
	}

	status, stdout, stderr = run(t, "", "show", id, "--data", data)
	if status != 0 {
		t.Fatalf("show: %d %s", status, stderr)
	}
	var info process.Info
	if err := json.Unmarshal([]byte(stdout), &info); err != nil {
		t.Fatal(err)
	}
	runs := map[string]process.ActionRun{}
	for _, r := range info.ActionRuns {
		runs[r.Step] = r
	}
	if r := runs["step2_log_event"]; r.Status != process.ActionCompleted || !r.Done || r.Attempts != 3 || !strings.Contains(r.LastError, "/log is down (call 2)") {
		t.Errorf("the action that succeeded on its third attempt: %+v", r)
	}
	if r := runs["step3_alert"]; r.Status != process.ActionFailed || !r.Done || r.Attempts != 2 || !strings.Contains(r.LastError, "/alert is down (call 2)") {
		t.Errorf("the action that failed: %+v", r)
	}
	if r := runs["step4_audit"]; r.Status != process.ActionRunning || r.Done || r.Attempts < 2 || r.Workflow != id+"-step4_audit" {
		t.Errorf("the action still retrying: %+v", r)
	}
	if got := info.Actions["step2_log_event"]; got != "completed" {
		t.Errorf("the view still says %q of an action that completed", got)
	}
	if got := info.Actions["step3_alert"]; !strings.HasPrefix(got, "failed: ") {
		t.Errorf("the view says %q of an action that failed", got)
	}
}

// fireLedger is a fire-and-forget action's endpoint: it counts the calls
// that reach it and those it answered, by idempotency key. A call waits
// pause(key) before it is answered; one whose client goes away first is
// not answered.
type fireLedger struct {
	mu       sync.Mutex
	calls    map[string]int
	answered map[string]int
	cut      int            // calls whose client went away before the answer
	cutBy    map[string]int // those, by key
	pause    func(key string) <-chan struct{}
}

func newFireLedger(pause func(key string) <-chan struct{}) *fireLedger {
	return &fireLedger{calls: map[string]int{}, answered: map[string]int{}, cutBy: map[string]int{}, pause: pause}
}

func (l *fireLedger) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	l.mu.Lock()
	l.calls[key]++
	l.mu.Unlock()
	select {
	case <-l.pause(key):
	case <-r.Context().Done():
		l.mu.Lock()
		l.cut++
		l.cutBy[key]++
		l.mu.Unlock()
		return
	}
	l.mu.Lock()
	l.answered[key]++
	l.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"sent": true}`)
}

// counts are the keys called, those called more than once, and those
// never answered.
func (l *fireLedger) counts() (keys int, repeated, unanswered []string, cut int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, n := range l.calls {
		if n > 1 {
			repeated = append(repeated, k)
		}
		if l.answered[k] == 0 {
			unanswered = append(unanswered, k)
		}
	}
	return len(l.calls), repeated, unanswered, l.cut
}

// fireSetup is batchSetup with the model's decide step a fire-and-forget
// action (an LLM step an action matches) to ledger, beside record.
func fireSetup(t *testing.T, n int, ledger http.Handler) (dir string, led *tally) {
	t.Helper()
	dir, led = batchSetup(t, n, nil, 0)
	srv := httptest.NewServer(ledger)
	t.Cleanup(srv.Close)
	var actions map[string]string
	b, _ := os.ReadFile(filepath.Join(dir, "actions.json"))
	if err := json.Unmarshal(b, &actions); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "actions.json"), []byte(fmt.Sprintf(`{"record": %q, "decide": %q}`, actions["record"], srv.URL)), 0o644)
	return dir, led
}

// TestBatchFireAndForget: vibe batch on its own engine says done only once
// every item's fire-and-forget action has run: 200 items whose action's
// endpoint takes 50–200 ms a call, each key called once and answered
// before the command exits 0.
func TestBatchFireAndForget(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	const n = 200
	ledger := newFireLedger(func(key string) <-chan struct{} {
		var h int
		for _, c := range key {
			h = h*31 + int(c)
		}
		c := make(chan struct{})
		time.AfterFunc(time.Duration(50+(h&0x7fffffff)%151)*time.Millisecond, func() { close(c) })
		return c
	})
	dir, _ := fireSetup(t, n, ledger)
	model := llmtest.NewServer(t, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{})
	out := filepath.Join(dir, "out.jsonl")
	status, _, stderr := run(t, "", "batch", filepath.Join(dir, "moderate.json"), "--in", filepath.Join(dir, "items.jsonl"), "--out", out,
		"--batch-size", "8", "--data", filepath.Join(dir, "data"),
		"--actions-file", filepath.Join(dir, "actions.json"), "--llm", "openai:test-model", "--llm-base-url", model.URL)
	if status != 0 {
		t.Fatalf("batch: %d\n%s", status, stderr)
	}
	checkResults(t, readResults(t, out), n, nil)
	keys, repeated, unanswered, cut := ledger.counts()
	if keys != n || len(repeated) > 0 || len(unanswered) > 0 || cut > 0 {
		t.Errorf("the fire-and-forget action: %d keys called (want %d), called again: %v, never answered: %v, %d calls cut short", keys, n, repeated, unanswered, cut)
	}
	if !strings.Contains(stderr, "fire-and-forget action(s) have settled") {
		t.Errorf("the batch does not say the actions settled:\n%s", stderr)
	}
}

// fireBatch is fireSetup with a model of its own: the directory, the
// results file and the vibe batch command line on its own engine, with
// flags added.
func fireBatch(t *testing.T, n int, ledger http.Handler, flags ...string) (dir, out string, args []string) {
	t.Helper()
	dir, _ = fireSetup(t, n, ledger)
	model := llmtest.NewServer(t, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{})
	out = filepath.Join(dir, "out.jsonl")
	args = append([]string{"batch", filepath.Join(dir, "moderate.json"), "--in", filepath.Join(dir, "items.jsonl"), "--out", out,
		"--batch-size", "8", "--data", filepath.Join(dir, "data")}, flags...)
	args = append(args, "--actions-file", filepath.Join(dir, "actions.json"), "--llm", "openai:test-model", "--llm-base-url", model.URL)
	return dir, out, args
}

// pendingRun runs vibe batch args, which writes its n results to out
// and exits 1 with its items' fire-and-forget actions pending, its stderr
// saying each of wants.
func pendingRun(t *testing.T, args []string, out string, n int, wants ...string) {
	t.Helper()
	status, _, stderr := run(t, "", args...)
	if status != exitError {
		t.Fatalf("batch, its actions pending: %d (want 1)\n%s", status, stderr)
	}
	checkResults(t, readResults(t, out), n, nil)
	for _, want := range wants {
		if !strings.Contains(stderr, want) {
			t.Errorf("batch's stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// rerunUntilSettled runs vibe batch args again until it exits 0, at most
// tries times: a run may find actions the engine still holds pending,
// and says so (after --wait-actions wait) as the first did. The n
// results in out stay as they were.
func rerunUntilSettled(t *testing.T, args []string, out string, n int, wait string, tries int) {
	t.Helper()
	for try := 1; ; try++ {
		status, _, stderr := run(t, "", args...)
		if status == 0 {
			break
		}
		if status != exitError || !strings.Contains(stderr, "still pending after "+wait) || try == tries {
			t.Fatalf("the same batch again (run %d): %d\n%s", try, status, stderr)
		}
	}
	checkResults(t, readResults(t, out), n, nil)
}

// TestBatchFireAndForgetPending: an action's endpoint that does not answer
// within --wait-actions: vibe batch exits 1 naming the actions pending and
// the command that runs them; that command, run again once the endpoint
// answers, runs every one (an attempt the first run's exit cut short, with
// --drain 0, is tried again, under the same key) and exits 0.
func TestBatchFireAndForgetPending(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	const n = 24
	release := make(chan struct{})
	ledger := newFireLedger(func(string) <-chan struct{} { return release })
	dir, out, args := fireBatch(t, n, ledger, "--wait-actions", "2s", "--drain", "0")
	pendingRun(t, args, out, n,
		fmt.Sprintf("vibe: %d fire-and-forget action(s) still pending after 2s; batch ", n),
		"-1-llmContext1-decide, ",
		"They run on the embedded engine in "+filepath.Join(dir, "data"),
		"; to run them now:\n  vibe "+shellQuote(args)+"\n")
	if _, _, unanswered, _ := ledger.counts(); len(unanswered) == 0 {
		t.Fatalf("every action was answered while the endpoint held them")
	}

	// The attempts the first run's exit cut short are the engine's until
	// their heartbeat is overdue: a rerun or two may find them pending
	// still, and says so as the first did.
	close(release)
	rerunUntilSettled(t, args, out, n, "2s", 30)
	if keys, _, unanswered, _ := ledger.counts(); keys != n || len(unanswered) > 0 {
		t.Errorf("after the rerun, %d keys called (want %d), never answered: %v", keys, n, unanswered)
	}
}

// TestBatchFireAndForgetDrains: vibe batch exits past --wait-actions with
// its items' action calls in flight at an endpoint that takes 8 s a call:
// it lets them finish (--drain) before it exits, says so, and names what
// is pending; the same command again runs the rest. Every key is called
// once and answered, none cut short: with --drain 0 (the test above) the
// calls in flight are cut and made again.
func TestBatchFireAndForgetDrains(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	t.Parallel()
	const n = 16
	ledger := newFireLedger(func(string) <-chan struct{} {
		c := make(chan struct{})
		time.AfterFunc(8*time.Second, func() { close(c) })
		return c
	})
	// The wait ends well before the calls do, and late enough that they
	// have begun on a busy machine.
	_, out, args := fireBatch(t, n, ledger, "--wait-actions", "3s", "--drain", "1m")
	pendingRun(t, args, out, n,
		"for the action calls in flight to finish before exiting (--drain)\n",
		"fire-and-forget action(s) still pending after 3s; batch ")
	keys, repeated, unanswered, cut := ledger.counts()
	if keys == 0 || len(repeated) > 0 || len(unanswered) > 0 || cut > 0 {
		t.Fatalf("at the first exit: %d keys called, %d calls cut short, called again: %v, never answered: %v (want every call answered once)", keys, cut, repeated, unanswered)
	}
	rerunUntilSettled(t, args, out, n, "3s", 10)
	keys, repeated, unanswered, cut = ledger.counts()
	if keys != n || len(repeated) > 0 || len(unanswered) > 0 || cut > 0 {
		t.Errorf("after the rerun: %d keys called (want %d), called again: %v, never answered: %v, %d calls cut short", keys, n, repeated, unanswered, cut)
	}
}
