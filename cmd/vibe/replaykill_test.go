package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/augceo/vibe/internal/llmtest"
	"github.com/augceo/vibe/replay"
)

// gate passes requests on to a model and answers at most hold of them
// (0: every one): the others wait, unanswered, until their client is
// killed or the gate opens. It counts the requests it answered.
type gate struct {
	proxy    *httputil.ReverseProxy
	open     chan struct{}
	mu       sync.Mutex
	hold     int
	answered int
	taken    int // answered, or being answered
}

func newGate(t *testing.T, to string, hold int) (*gate, string) {
	u, err := url.Parse(to)
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{proxy: httputil.NewSingleHostReverseProxy(u), open: make(chan struct{}), hold: hold}
	srv := httptest.NewServer(g)
	t.Cleanup(func() { g.release(); srv.Close() })
	return g, srv.URL
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	held := g.hold > 0 && g.taken >= g.hold
	if !held {
		g.taken++
	}
	g.mu.Unlock()
	if held {
		select {
		case <-r.Context().Done():
			return
		case <-g.open:
			http.Error(w, "the gate opened", http.StatusServiceUnavailable)
			return
		}
	}
	g.proxy.ServeHTTP(w, r)
	g.mu.Lock()
	g.answered++
	g.mu.Unlock()
}

// release lets every request through from now on.
func (g *gate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.hold != 0 {
		g.hold = 0
		close(g.open)
	}
}

func (g *gate) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.answered
}

// TestReplayKill: vibe replay of a batch of 1,000 items is SIGKILLed once
// the model has answered some of its calls, with more in flight; the same
// command run again reports each item once, and the model answers as many
// calls over both runs as an uninterrupted replay makes: no call answered
// before the kill is asked again. The replay's record, listed by vibe
// batches, counts the requests of both runs.
func TestReplayKill(t *testing.T) {
	t.Parallel() // vibe replay runs in child processes of its own, on a data directory and model of its own
	if testing.Short() {
		t.Skip("records a batch of 1,000 items and kills vibe replay")
	}
	const n, k, hold = 1000, 8, 40
	calls := (n + k - 1) / k // an uninterrupted replay's
	dir, _ := batchSetup(t, n, nil, 0)
	data := filepath.Join(dir, "data")
	model := llmtest.NewServer(t, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{})
	status, _, stderr := run(t, "", "batch", filepath.Join(dir, "moderate.json"), "--in", filepath.Join(dir, "items.jsonl"), "--out", filepath.Join(dir, "out.jsonl"),
		"--id", "moderation", "--batch-size", "32", "--data", data,
		"--actions-file", filepath.Join(dir, "actions.json"), "--llm", "openai:test-model", "--llm-base-url", model.URL)
	if status != exitOK {
		t.Fatalf("vibe batch: status %d\n%s", status, stderr)
	}
	enum := filepath.Join(dir, "enum.json")
	os.WriteFile(enum, []byte(strings.Replace(moderateProcess, `"enum": ["positive", "negative"]`, `"enum": ["positive", "neutral", "negative"]`, 1)), 0o644)
	neutral := llmtest.NewServer(t, llmtest.Multiplexed(func(step, prompt string, repair bool) string {
		if step == "assess" {
			return `{"sentiment":"neutral"}`
		}
		return llmtest.Verdict(step, prompt, repair)
	}), llmtest.Options{})
	g, gated := newGate(t, neutral.URL, hold)
	report := filepath.Join(dir, "report.jsonl")
	args := []string{"replay", "moderation", "--process", enum, "--data", data, "--batch-size", "8", "--out", report,
		"--actions-file", filepath.Join(dir, "actions.json"), "--llm", "openai:test-model", "--llm-base-url", gated}

	first, firstOut := child(t, args...)
	kept := func() int { // the answers the first run kept
		files, _ := filepath.Glob(filepath.Join(data, "replay", "answers", "*.jsonl"))
		lines := 0
		for _, f := range files {
			lines += completeLines(f)
		}
		return lines
	}
	waitUntil(t, "the model's first answers kept", 3*time.Minute, func() bool { return kept() >= hold*k })
	first.Process.Signal(syscall.SIGKILL)
	first.Wait()
	if _, err := os.Stat(report); err == nil {
		t.Fatalf("the killed replay wrote its report:\n%s", firstOut)
	}
	t.Logf("killed vibe replay with %d calls answered and %d answers kept", g.count(), kept())
	g.release()

	again, againOut := child(t, args...)
	if err := again.Wait(); err != nil {
		t.Fatalf("run again: %v\n%s\nfirst run:\n%s", err, againOut, firstOut)
	}
	t.Logf("run again: %s", strings.TrimSpace(againOut.String()))
	if !strings.Contains(againOut.String(), "answers taken from an earlier run of this replay") {
		t.Errorf("the run again took no answers of the first:\n%s", againOut)
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	seen := map[string]int{}
	for _, l := range lines {
		var it replay.Item
		if err := json.Unmarshal([]byte(l), &it); err != nil {
			t.Fatalf("report line %q: %v", l, err)
		}
		seen[it.ID]++
		if it.Outcome != replay.Changed {
			t.Errorf("item %s: %s", it.ID, l)
		}
	}
	if len(lines) != n || len(seen) != n {
		t.Errorf("the report has %d lines for %d items, want each of %d once", len(lines), len(seen), n)
	}
	if got := g.count(); got != calls {
		t.Errorf("the model answered %d calls over both runs; an uninterrupted replay makes %d", got, calls)
	}
	m := regexp.MustCompile(`vibe: replay (\S+): `).FindStringSubmatch(againOut.String())
	if m == nil {
		t.Fatalf("no replay id in\n%s", againOut)
	}
	_, stdout, _ := run(t, "", "batches", m[1], "--data", data)
	var st struct {
		Kind     string `json:"kind"`
		Status   string `json:"status"`
		Items    int    `json:"items"`
		Done     int    `json:"done"`
		Changed  int    `json:"changed"`
		Requests int    `json:"requests"`
	}
	json.Unmarshal([]byte(stdout), &st)
	if st.Kind != "replay" || st.Status != "completed" || st.Items != n || st.Done != n || st.Changed != n || st.Requests != calls {
		t.Errorf("vibe batches %s: %+v, want %d items changed, %d requests\n%s", m[1], st, n, calls, stdout)
	}
}
