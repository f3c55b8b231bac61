package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/augceo/vibe/api"
	"github.com/augceo/vibe/internal/llmtest"
	"github.com/augceo/vibe/process"
)

var soakLong = flag.Bool("soak.long", false, "run the fault soak long: 200 processes, 10 kills")

// soakProcess has two blocking actions around a person's approval:
// Record_Activity after the model's plan, Send_Activity after the answer.
const soakProcess = `{
  "title": "Soak",
  "type": "object",
  "properties": {
    "llmContext1": {"type": "object", "properties": {
      "plan": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}},
    "serverContext1": {"type": "object", "properties": {
      "Record_Activity": {"type": "object", "references": ["llmContext1.plan"],
        "properties": {"applied": {"type": "boolean"}, "n": {"type": "integer"}}, "required": ["n"]}}},
    "userContext": {"type": "object", "properties": {
      "approve": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}}},
    "serverContext2": {"type": "object", "properties": {
      "Send_Activity": {"type": "object", "references": ["llmContext1.plan", "userContext.approve"],
        "properties": {"applied": {"type": "boolean"}, "n": {"type": "integer"}}, "required": ["n"]}}}
  }
}`

// ledger is an HTTP endpoint that honours idempotency keys: it applies
// each key's effect once and answers a repeated key as it did the first
// time. It also records every call, to check that a repeated call carries
// the key of its first.
type ledger struct {
	mu      sync.Mutex
	calls   map[string][]string // "/path n" → the key of each call
	seen    map[string]bool     // the keys whose effect was applied
	effects map[string]int      // "/path n" → effects applied for it
	delay   func() time.Duration
}

func (l *ledger) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var in struct {
		LLMContext1 struct {
			Plan struct{ N int } `json:"plan"`
		} `json:"llmContext1"`
	}
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	key := r.Header.Get("Idempotency-Key")
	time.Sleep(l.delay()) // an effect takes a while: kills land in the middle
	l.mu.Lock()
	defer l.mu.Unlock()
	call := fmt.Sprintf("%s %d", r.URL.Path, in.LLMContext1.Plan.N)
	l.calls[call] = append(l.calls[call], key)
	if key == "" || !l.seen[key] {
		l.seen[key] = true
		l.effects[call]++
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"applied": true, "n": %d}`, in.LLMContext1.Plan.N)
}

// TestFaultSoak runs processes, and a batch whose items each start a
// fire-and-forget action, through vibe serve while SIGKILLing it at random
// points and starting it again on the same data directory, and sends it
// SIGTERM once while fire-and-forget calls are in flight: every process
// completes with its own output, and every action's effect is applied
// exactly once, each repeated call carrying its first call's key; the
// batch writes each item once, none failed; the SIGTERM cuts no call short
// (serve exits 0), and no call in flight at it is made again. In CI: 50
// processes, 1,000 items and 3 kills; with -soak.long: 200 processes and
// 10 kills. The seed is logged; VIBE_SOAK_SEED runs the same kill points
// again.
func TestFaultSoak(t *testing.T) {
	t.Parallel() // its vibe serve is a child process, its model and actions its own
	if testing.Short() {
		t.Skip("kills and restarts vibe serve")
	}
	processes, kills, items := 50, 3, 1000
	if *soakLong {
		processes, kills = 200, 10
	}
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("VIBE_SOAK_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d (VIBE_SOAK_SEED=%d reruns it)", seed, seed)
	rnd := rand.New(rand.NewPCG(seed, seed))
	var rndMu sync.Mutex
	jitter := func(lo, hi time.Duration) time.Duration {
		rndMu.Lock()
		defer rndMu.Unlock()
		return lo + time.Duration(rnd.Int64N(int64(hi-lo)))
	}

	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "registry", "processes"), 0o755)
	os.WriteFile(filepath.Join(dir, "registry", "processes", "soak.json"), []byte(soakProcess), 0o644)
	led := &ledger{calls: map[string][]string{}, seen: map[string]bool{}, effects: map[string]int{}, delay: func() time.Duration { return jitter(50*time.Millisecond, 600*time.Millisecond) }}
	actions := httptest.NewServer(led)
	defer actions.Close()
	// The batch: moderateProcess over items comments, its decide step a
	// fire-and-forget action.
	fire := newFireLedger(func(string) <-chan struct{} {
		c := make(chan struct{})
		time.AfterFunc(jitter(50*time.Millisecond, 600*time.Millisecond), func() { close(c) })
		return c
	})
	bdir, bled := fireSetup(t, items, fire)
	var bactions map[string]string
	b, _ := os.ReadFile(filepath.Join(bdir, "actions.json"))
	if err := json.Unmarshal(b, &bactions); err != nil {
		t.Fatal(err)
	}
	actionsFile := filepath.Join(dir, "actions.json")
	os.WriteFile(actionsFile, []byte(fmt.Sprintf(`{"Record_Activity": %q, "Send_Activity": %q, "record": %q, "decide": %q}`,
		actions.URL+"/record", actions.URL+"/send", bactions["record"], bactions["decide"])), 0o644)
	item := regexp.MustCompile(`item (\d+)`)
	moderate := llmtest.Multiplexed(llmtest.Verdict)
	model := llmtest.NewWith(t, func(name, body string) string {
		time.Sleep(jitter(10*time.Millisecond, 200*time.Millisecond))
		if strings.Contains(body, "comment ") {
			return moderate(name, body)
		}
		return fmt.Sprintf(`{"plan": {"n": %s}}`, item.FindStringSubmatch(body)[1])
	})

	data := filepath.Join(dir, "data")
	addr := freeAddr(t)
	args := []string{"serve", "--registry", filepath.Join(dir, "registry"), "--data", data, "--addr", addr,
		"--actions-file", actionsFile, "--llm", "openai:test-model", "--llm-base-url", model.URL}
	c := &api.Client{BaseURL: "http://" + addr}
	ctx := context.Background()
	ready := func() bool { _, err := c.List(ctx, process.ListOptions{Limit: 1}); return err == nil }
	serve, _ := child(t, args...)
	waitUntil(t, "vibe serve", time.Minute, ready)
	out := filepath.Join(bdir, "out.jsonl")
	feeder, feederOut := child(t, "batch", filepath.Join(bdir, "moderate.json"), "--in", filepath.Join(bdir, "items.jsonl"), "--out", out,
		"--batch-size", "16", "--data", data, "--actions-file", actionsFile)
	restart := func(what string) {
		t.Helper()
		serve.Process.Signal(syscall.SIGKILL)
		serve.Wait()
		t.Logf("killed vibe serve %s", what)
		serve, _ = child(t, args...)
		waitUntil(t, "vibe serve to come back", time.Minute, ready)
	}

	// Start every process; kill while the plans and the first actions run.
	ids := make([]string, processes)
	for i := range ids {
		started, err := c.Start(ctx, process.StartOptions{Process: "aug:processes/soak", Prompt: fmt.Sprintf("item %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = started.ID
	}
	for k := 0; k < kills-1; k++ {
		time.Sleep(jitter(300*time.Millisecond, 2*time.Second))
		restart(fmt.Sprintf("%d of %d, in the first half", k+1, kills))
	}
	for _, id := range ids {
		waitStatus(t, c, id, process.Waiting)
	}

	// SIGTERM while the batch's fire-and-forget calls are in flight: the
	// serve lets them finish and exits 0; none is made again.
	waitUntil(t, "fire-and-forget calls in flight", 3*time.Minute, func() bool { return fire.inFlight() > 0 })
	atTerm := fire.inFlightKeys()
	_, _, _, cutBefore := fire.counts() // the kills' cuts
	serve.Process.Signal(syscall.SIGTERM)
	termSent := time.Now()
	if err := serve.Wait(); err != nil {
		t.Errorf("vibe serve, sent SIGTERM: %v, want exit 0", err)
	}
	t.Logf("SIGTERM with %d fire-and-forget calls in flight: vibe serve stopped in %s", len(atTerm), time.Since(termSent).Round(time.Millisecond))
	if _, _, _, cut := fire.counts(); cut > cutBefore {
		t.Errorf("%d fire-and-forget calls were cut short by the SIGTERM", cut-cutBefore)
	}
	serve, _ = child(t, args...)
	waitUntil(t, "vibe serve to come back", time.Minute, ready)

	// Approve every process, and kill once more while the answers come in
	// and the second actions run. An answer lost to the kill is given again.
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() {
			time.Sleep(jitter(0, time.Second))
			c.Answer(ctx, id, mustJSON(t, `{"approve": {"ok": true}}`))
		})
	}
	time.Sleep(jitter(200*time.Millisecond, time.Second))
	restart(fmt.Sprintf("%d of %d, while answers and sends run", kills, kills))
	wg.Wait()
	// A serve just restarted replays its 50 processes and the batch's
	// groups before it answers: an answer may wait past the client's
	// minute on a busy machine, and is given again until the process no
	// longer waits.
	for _, id := range ids {
		waitUntil(t, "the answer to "+id, 5*time.Minute, func() bool {
			info, err := c.Get(ctx, id)
			if err != nil {
				return false
			}
			if info.Status != process.Waiting {
				return true
			}
			if _, err := c.Answer(ctx, id, mustJSON(t, `{"approve": {"ok": true}}`)); err != nil {
				t.Logf("answer %s again: %v", id, err)
				return false
			}
			return true
		})
	}
	waitUntil(t, "every process to complete", 5*time.Minute, func() bool {
		for _, id := range ids {
			info, err := c.Get(ctx, id)
			if err == nil && info.Status == process.Failed {
				t.Fatalf("%s failed: %s", id, *info.Error)
			}
			if err != nil || info.Status != process.Completed {
				return false
			}
		}
		return true
	})

	for i, id := range ids {
		info := waitStatus(t, c, id, process.Completed)
		for _, step := range []string{"serverContext1.Record_Activity", "serverContext2.Send_Activity"} {
			ctxName, name, _ := cut(step)
			if n, _ := info.State.Lookup(ctxName).Lookup(name).Lookup("n").Int(); n != int64(i) {
				t.Errorf("%s: %s has n=%d, want %d", id, step, n, i)
			}
		}
	}
	if err := feeder.Wait(); err != nil {
		t.Errorf("vibe batch: %v\n%s", err, feederOut)
	}
	checkResults(t, readResults(t, out), items, nil)
	waitUntil(t, "every item's fire-and-forget action", 5*time.Minute, func() bool {
		keys, _, unanswered, _ := fire.counts()
		return keys == items && len(unanswered) == 0
	})
	for k, n := range atTerm {
		if got := fire.callsOf(k); got != n {
			t.Errorf("fire-and-forget call %s, in flight at the SIGTERM, was made again: %d calls", k, got)
		}
	}
	if _, keys, _ := bled.counts(); keys != items {
		t.Errorf("the batch's record action was applied for %d items, want %d", keys, items)
	}
	_, fireRepeated, _, _ := fire.counts()
	t.Logf("batch: %d items written once each, none failed; %d fire-and-forget keys called again after a kill, none after the SIGTERM", items, len(fireRepeated))
	led.mu.Lock()
	defer led.mu.Unlock()
	repeated := 0
	for _, path := range []string{"/record", "/send"} {
		for i := range processes {
			call := fmt.Sprintf("%s %d", path, i)
			keys := led.calls[call]
			if len(keys) == 0 {
				t.Errorf("%s never ran for item %d", path, i)
				continue
			}
			for _, k := range keys[1:] {
				if k != keys[0] {
					t.Errorf("%s for item %d: a repeated call carries key %q, the first %q", path, i, k, keys[0])
				}
			}
			if keys[0] == "" || led.effects[call] != 1 {
				t.Errorf("%s for item %d: key %q, effect applied %d times", path, i, keys[0], led.effects[call])
			}
			repeated += len(keys) - 1
		}
	}
	if len(led.seen) != 2*processes {
		t.Errorf("%d distinct keys, want %d (two actions for each process)", len(led.seen), 2*processes)
	}
	t.Logf("%d processes completed across %d kills and a SIGTERM; %d action calls were repeated after a kill, each applied once", processes, kills, repeated)
}

func cut(step string) (string, string, bool) {
	for i := range step {
		if step[i] == '.' {
			return step[:i], step[i+1:], true
		}
	}
	return step, "", false
}

// TestKillMidFlight SIGKILLs vibe serve while one process's 3-second action
// and another's slow model call are in flight: the activities heartbeat, so
// after the restart both are retried within seconds, not after their whole
// timeouts (minutes), and both processes complete within 30 seconds.
func TestKillMidFlight(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts vibe serve")
	}
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "registry", "processes"), 0o755)
	os.WriteFile(filepath.Join(dir, "registry", "processes", "soak.json"), []byte(soakProcess), 0o644)
	inFlight := make(chan string, 2)
	var once sync.Map
	slowOnce := func(what string) time.Duration {
		if _, done := once.LoadOrStore(what, true); done {
			return 0
		}
		inFlight <- what
		return 3 * time.Second
	}
	led := &ledger{calls: map[string][]string{}, seen: map[string]bool{}, effects: map[string]int{}, delay: func() time.Duration { return 0 }}
	actions := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/record" {
			time.Sleep(slowOnce("the action"))
		}
		led.ServeHTTP(w, r)
	}))
	defer actions.Close()
	actionsFile := filepath.Join(dir, "actions.json")
	os.WriteFile(actionsFile, []byte(fmt.Sprintf(`{"Record_Activity": %q, "Send_Activity": %q}`, actions.URL+"/record", actions.URL+"/send")), 0o644)
	item := regexp.MustCompile(`item (\d+)`)
	model := llmtest.NewWith(t, func(name, body string) string {
		n := item.FindStringSubmatch(body)[1]
		if n == "1" {
			time.Sleep(slowOnce("the model call"))
		}
		return fmt.Sprintf(`{"plan": {"n": %s}}`, n)
	})

	addr := freeAddr(t)
	args := []string{"serve", "--registry", filepath.Join(dir, "registry"), "--data", filepath.Join(dir, "data"), "--addr", addr,
		"--actions-file", actionsFile, "--llm", "openai:test-model", "--llm-base-url", model.URL}
	c := &api.Client{BaseURL: "http://" + addr}
	ctx := context.Background()
	ready := func() bool { _, err := c.List(ctx, process.ListOptions{Limit: 1}); return err == nil }
	serve, _ := child(t, args...)
	waitUntil(t, "vibe serve", time.Minute, ready)
	var ids []string
	for i := range 2 {
		started, err := c.Start(ctx, process.StartOptions{Process: "aug:processes/soak", Prompt: fmt.Sprintf("item %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, started.ID)
	}
	for range 2 {
		select {
		case what := <-inFlight:
			t.Logf("%s is in flight", what)
		case <-time.After(time.Minute):
			t.Fatal("the slow action and model call never started")
		}
	}
	serve.Process.Signal(syscall.SIGKILL)
	serve.Wait()
	child(t, args...) // killed when the test ends
	waitUntil(t, "vibe serve to come back", time.Minute, ready)
	restarted := time.Now()
	deadline := 30 * time.Second
	for _, id := range ids {
		waitUntil(t, id+" to wait for its answer", deadline-time.Since(restarted), func() bool {
			info, err := c.Get(ctx, id)
			return err == nil && info.Status == process.Waiting
		})
		if _, err := c.Answer(ctx, id, mustJSON(t, `{"approve": {"ok": true}}`)); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids {
		waitUntil(t, id+" to complete", deadline-time.Since(restarted), func() bool {
			info, err := c.Get(ctx, id)
			return err == nil && info.Status == process.Completed
		})
	}
	t.Logf("both processes completed %s after the restart", time.Since(restarted).Round(100*time.Millisecond))
}

// TestOneDoor: the embedded engine's Temporal frontend refuses a client
// without the data directory's certificate — vibe ps --temporal ADDR — and
// takes one with it; the data directory is the owner's alone.
func TestOneDoor(t *testing.T) {
	if testing.Short() {
		t.Skip("starts vibe serve")
	}
	data := filepath.Join(t.TempDir(), "data")
	addr := freeAddr(t)
	child(t, "serve", "--registry", example+"/registry", "--data", data, "--addr", addr)
	c := &api.Client{BaseURL: "http://" + addr}
	waitUntil(t, "vibe serve", time.Minute, func() bool { _, err := c.List(context.Background(), process.ListOptions{Limit: 1}); return err == nil })
	frontend, err := os.ReadFile(filepath.Join(data, "engine.addr"))
	if err != nil {
		t.Fatal(err)
	}
	hp := string(regexp.MustCompile(`\S+`).Find(frontend))

	status, _, stderr := run(t, "", "ps", "--temporal", hp)
	if status == 0 || !regexp.MustCompile(`mutual TLS only: give --tls-dir`).MatchString(stderr) {
		t.Errorf("without a certificate: status %d\n%s", status, stderr)
	}
	status, stdout, stderr := run(t, "", "ps", "--temporal", hp, "--tls-dir", filepath.Join(data, "tls"))
	if status != 0 || !regexp.MustCompile(`^ID\s+PROCESS`).MatchString(stdout) {
		t.Errorf("with the certificate: status %d\n%s%s", status, stdout, stderr)
	}

	err = filepath.WalkDir(data, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return nil // a file SQLite removed meanwhile
		}
		want := os.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s is %v, want %v", path, fi.Mode().Perm(), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
