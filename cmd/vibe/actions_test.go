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

	"github.com/augceo/vibe/internal/llmtest"
	"github.com/augceo/vibe/process"
)

// TestRunFireAndForget: a process's fire-and-forget actions, one that
// succeeds on its third attempt, one that fails for good after two, one
// that is still retrying when the wait ends. vibe run on its own engine
// waits for them with progress and its bound, then says what is pending
// and where it runs; vibe show reads each one's attempts, last error and
// whether it is done, long after the process completed.
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
	if status != 0 || !strings.Contains(stdout, `"step5_summary"`) {
		t.Fatalf("run: %d\n%s%s", status, stdout, stderr)
	}
	id := strings.Fields(stderr[strings.Index(stderr, "vibe: started ")+len("vibe: started "):])[0]
	for _, want := range []string{
		"vibe: waiting up to 8s (--wait-actions) for ",
		"vibe: fire-and-forget step2_log_event completed after 3 attempts",
		"vibe: fire-and-forget step3_alert failed after 2 attempts: ",
		"/alert is down (call 2)",
		"vibe: fire-and-forget step4_audit running: ",
		"vibe: 1 fire-and-forget action(s) still pending after 8s; the process does not wait for them. They run on the embedded engine in " + data +
			": they go on when a vibe serve, vibe worker or vibe run next runs on that data directory, each in its workflow (" + id + "-step4_audit); vibe show " + id + " tells how they end",
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
