package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/augceo/vibe/api"
	"github.com/augceo/vibe/internal/llmtest"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/process"
)

// A model that knows schedule-meeting's two LLM chunks.
var meetingAnswers = map[string]string{
	"LLM_llmContext1": `{"identifyParticipants":{"organizer":"alice@example.com","attendee":"bob@example.com"},"fetchAvailability":{"organizerEmail":"alice@example.com","attendeeEmail":"bob@example.com","timeRange":{"start":"2024-03-20T09:00:00Z","end":"2024-03-20T17:00:00Z"}}}`,
	"LLM_llmContext2": `{"findCommonSlot":{"selectedSlot":"2024-03-20T14:00:00Z","reasoning":"both are free at two"},"draftInvitation":{"subject":"Meeting on March 20","body":"Hi Bob, shall we meet at 14:00?"}}`,
}

func newMeetingModel(t *testing.T) *llmtest.Server {
	return llmtest.New(t, llmtest.ByName(meetingAnswers))
}

// meetingActions serves the two actions over HTTP and writes an actions
// file for them.
func meetingActions(t *testing.T) (file string, calls func() map[string]int) {
	var mu sync.Mutex
	n := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n[r.URL.Path]++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/availability":
			io.WriteString(w, `{"organizerSlots":["2024-03-20T14:00:00Z"],"attendeeSlots":["2024-03-20T14:00:00Z"]}`)
		case "/send":
			io.WriteString(w, `{"messageId":"m-1","status":"sent"}`)
		default:
			w.WriteHeader(404)
		}
	}))
	t.Cleanup(srv.Close)
	file = filepath.Join(t.TempDir(), "actions.json")
	os.WriteFile(file, []byte(fmt.Sprintf(`{"FetchAvailability_Activity": %q, "sendInvitation": {"url": %q, "maxAttempts": 3}}`, srv.URL+"/availability", srv.URL+"/send")), 0o644)
	return file, func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := map[string]int{}
		for k, v := range n {
			out[k] = v
		}
		return out
	}
}

func freeAddr(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// child runs `vibe args…` as a child process; out is what it writes on
// stdout and stderr, safe to read while it runs.
func child(t testing.TB, args ...string) (cmd *exec.Cmd, out *lockedBuffer) {
	t.Helper()
	cmd = exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "VIBE_TEST_MAIN=1", "VIBE_LOG=warn")
	out = &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd, out
}

// lockedBuffer is a bytes.Buffer that a child writes while a test reads.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func waitUntil(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func waitStatus(t *testing.T, c *api.Client, id string, want process.Status) *process.Info {
	t.Helper()
	var info *process.Info
	waitUntil(t, id+" to be "+string(want), time.Minute, func() bool {
		var err error
		info, err = c.Get(context.Background(), id)
		if err == nil && info.Status == process.Failed && want != process.Failed {
			t.Fatalf("%s failed: %s", id, *info.Error)
		}
		return err == nil && info.Status == want
	})
	return info
}

// TestCrashRecovery SIGKILLs a vibe serve while a process waits for a
// person, starts it again on the same data directory, answers, and sees
// the process complete with its earlier model results unchanged and no
// model request repeated.
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("starts vibe serve twice")
	}
	model := newMeetingModel(t)
	actions, calls := meetingActions(t)
	data := t.TempDir()
	addr := freeAddr(t)
	args := []string{"serve", "--registry", example + "/registry", "--data", data, "--addr", addr,
		"--actions-file", actions, "--llm", "openai:test-model", "--llm-base-url", model.URL}
	c := &api.Client{BaseURL: "http://" + addr}
	ctx := context.Background()
	ready := func() bool { _, err := c.List(ctx, process.ListOptions{Limit: 1}); return err == nil }

	serve, out := child(t, args...)
	waitUntil(t, "vibe serve", time.Minute, ready)
	// Without a token, a web page cannot reach it through a browser: not
	// by another name for 127.0.0.1 (DNS rebinding), nor from its origin.
	for _, h := range []map[string]string{{"Host": "evil.example:" + strings.Split(addr, ":")[1]}, {"Origin": "https://evil.example"}} {
		req, _ := http.NewRequest("POST", "http://"+addr+"/v1/processes", strings.NewReader(`{"process":"aug:processes/schedule-meeting"}`))
		req.Header.Set("Content-Type", "application/json")
		for k, v := range h {
			req.Header.Set(k, v)
		}
		req.Host = req.Header.Get("Host")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 403 || !strings.Contains(string(body), `"error": "refused: `) {
			t.Errorf("%v: %d %s", h, resp.StatusCode, body)
		}
	}
	started, err := c.Start(ctx, process.StartOptions{Process: "aug:processes/schedule-meeting", Prompt: "Schedule a meeting between Alice and Bob"})
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	before := waitStatus(t, c, started.ID, process.Waiting)
	if strings.Join(before.Done, ",") != "LLM_llmContext1,SERVER_serverContext1,LLM_llmContext2" {
		t.Fatalf("done before the crash: %v", before.Done)
	}

	if err := serve.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	serve.Wait()
	if ready() {
		t.Fatal("the server still answers after SIGKILL")
	}

	_, out = child(t, args...)
	waitUntil(t, "vibe serve to come back", time.Minute, ready)
	after, err := c.Get(ctx, started.ID)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if after.Status != process.Waiting || !jsonv.Equal(after.State, before.State) {
		t.Fatalf("after the restart: status %s, state\n%s\nwas\n%s", after.Status, jsonv.Marshal(after.State), jsonv.Marshal(before.State))
	}
	// A bad answer: 422 with the errors, and the process still waits.
	req, _ := http.NewRequest("POST", "http://"+addr+"/v1/processes/"+started.ID+"/answer", strings.NewReader(`{"confirmInvitation":{"decision":"Maybe"}}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 422 || !strings.Contains(string(body), `"path": "/confirmInvitation/decision"`) {
		t.Errorf("bad answer: %d %s", resp.StatusCode, body)
	}
	if info, _ := c.Get(ctx, started.ID); info.Status != process.Waiting {
		t.Errorf("after a bad answer the process is %s", info.Status)
	}
	if _, err := c.Answer(ctx, started.ID, mustJSON(t, `{"confirmInvitation":{"decision":"Approve"}}`)); err != nil {
		t.Fatal(err)
	}
	done := waitStatus(t, c, started.ID, process.Completed)
	for _, ctxName := range []string{"llmContext1", "llmContext2"} {
		if !jsonv.Equal(done.State.Lookup(ctxName), before.State.Lookup(ctxName)) {
			t.Errorf("%s changed across the crash", ctxName)
		}
	}
	if got := model.Asked(); got["LLM_llmContext1"] != 1 || got["LLM_llmContext2"] != 1 || len(got) != 2 {
		t.Errorf("model requests %v: none may be repeated", got)
	}
	if got := calls(); got["/availability"] != 1 || got["/send"] != 1 {
		t.Errorf("action calls %v", got)
	}
	if done.Usage.PromptTokens != 200 {
		t.Errorf("usage %+v", done.Usage)
	}
}

func mustJSON(t testing.TB, s string) jsonv.Value {
	t.Helper()
	v, err := jsonv.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestRunEmbedded drives the CLI with no server: run stops where the
// person must answer, answer continues it, show and ps read it.
func TestRunEmbedded(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	model := newMeetingModel(t)
	actions, _ := meetingActions(t)
	data := t.TempDir()
	common := []string{"--data", data, "--actions-file", actions, "--llm", "openai:test-model", "--llm-base-url", model.URL}
	status, stdout, stderr := run(t, "", append([]string{"run", "aug:processes/schedule-meeting", "--registry", example + "/registry", "--prompt", "Meet Bob"}, common...)...)
	if status != 0 {
		t.Fatalf("run: %d\n%s", status, stderr)
	}
	if stdout != "" || !strings.Contains(stderr, "vibe: ✓ LLM_llmContext2") || !strings.Contains(stderr, "waits for a person's answer to USER_userContext") {
		t.Fatalf("run output:\n%s%s", stdout, stderr)
	}
	i := strings.Index(stderr, "vibe answer ")
	if i < 0 {
		t.Fatalf("run does not say how to answer:\n%s", stderr)
	}
	id := strings.Fields(stderr[i+len("vibe answer "):])[0]
	if want := `'{"confirmInvitation":{"decision":"Approve"}}'`; !strings.Contains(stderr, want) {
		t.Errorf("the answer's skeleton %s is not shown:\n%s", want, stderr)
	}

	firstErr := stderr
	status, _, stderr = run(t, "", append([]string{"answer", id, `{"confirmInvitation":{"decision":"Maybe"}}`}, common...)...)
	if status != 1 || !strings.Contains(stderr, "/confirmInvitation/decision") {
		t.Errorf("a bad answer: %d %s", status, stderr)
	}
	// The hint, run as printed, carries the data directory, the actions
	// file and the model the process's next steps need.
	hint := strings.SplitN(firstErr[i:], "\n", 2)[0]
	if want := "vibe answer " + id + ` '{"confirmInvitation":{"decision":"Approve"}}' ` + shellQuote(common); hint != want {
		t.Errorf("the hint\n%s\nwant\n%s", hint, want)
	}
	status, stdout, stderr = run(t, "", append([]string{"answer", id, `{"confirmInvitation":{"decision":"Approve"}}`}, common...)...)
	if status != 0 || !strings.Contains(stderr, "completed") || !strings.Contains(stdout, `"status": "sent"`) {
		t.Fatalf("answer, as the hint says: %d\n%s%s", status, stdout, stderr)
	}
	prices := filepath.Join(t.TempDir(), "prices.json")
	os.WriteFile(prices, []byte(`{"models": {"test-model": {"input": 1, "output": 2}}}`), 0o600)
	status, stdout, stderr = run(t, "", "show", id, "--data", data, "--prices", prices)
	if status != 0 || !strings.Contains(stdout, `"status": "completed"`) || !strings.Contains(stdout, `"sendInvitation"`) {
		t.Errorf("show: %d\n%s", status, stdout)
	}
	// Two calls of 100 prompt and 30 completion tokens each: (200 × 1 + 60 × 2) / 1e6.
	if want := "vibe: " + id + ": 2 model calls cost 0.000320 USD (prices: " + prices + ")"; !strings.Contains(stderr, want) {
		t.Errorf("show's cost: %s, want %s", stderr, want)
	}
	status, stdout, _ = run(t, "", "ps", "--data", data)
	if status != 0 || !strings.Contains(stdout, id) {
		t.Errorf("ps: %d\n%s", status, stdout)
	}
	if got := model.Asked(); got["LLM_llmContext1"] != 1 || got["LLM_llmContext2"] != 1 {
		t.Errorf("model requests %v", got)
	}
	// A second process: ps --limit 1 shows the newest and says there are
	// more; --all follows the cursors to both.
	status, _, stderr = run(t, "", append([]string{"run", "aug:processes/schedule-meeting", "--registry", example + "/registry", "--prompt", "Meet Carol"}, common...)...)
	if status != 0 {
		t.Fatalf("run: %d\n%s", status, stderr)
	}
	second := strings.Fields(stderr[strings.Index(stderr, "vibe answer ")+len("vibe answer "):])[0]
	status, stdout, stderr = run(t, "", "ps", "--limit", "1", "--data", data)
	if status != 0 || !strings.Contains(stdout, second) || strings.Contains(stdout, id) || !strings.Contains(stderr, "the newest 1 shown; there are more (--limit N, or --all)") {
		t.Errorf("ps --limit 1: %d\n%s%s", status, stdout, stderr)
	}
	status, stdout, stderr = run(t, "", "ps", "--all", "--data", data)
	if status != 0 || !strings.Contains(stdout, second) || strings.Index(stdout, second) > strings.Index(stdout, id) || stderr != "" {
		t.Errorf("ps --all: %d\n%s%s", status, stdout, stderr)
	}
}

func TestServeAuth(t *testing.T) {
	if testing.Short() {
		t.Skip("starts vibe serve")
	}
	status, _, stderr := run(t, "", "serve", "--addr", "0.0.0.0:0", "--data", t.TempDir())
	if status != 2 || !strings.Contains(stderr, "not on loopback: give a --token") {
		t.Errorf("off loopback without a token: %d %s", status, stderr)
	}
	addr := freeAddr(t)
	_, out := child(t, "serve", "--data", t.TempDir(), "--addr", addr, "--token", "s3cret")
	good := &api.Client{BaseURL: "http://" + addr, Token: "s3cret"}
	waitUntil(t, "vibe serve", time.Minute, func() bool {
		_, err := good.List(context.Background(), process.ListOptions{Limit: 1})
		return err == nil
	})
	for _, tok := range []string{"", "wrong"} {
		req, _ := http.NewRequest("GET", "http://"+addr+"/v1/processes", nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Errorf("token %q: %d", tok, resp.StatusCode)
		}
	}
}

// newChatAnswer is a test model that gives content to every request.
func newChatAnswer(t *testing.T, content string) *llmtest.Server {
	return llmtest.New(t, llmtest.Fixed(content))
}

// TestAnswerWithoutFlags: vibe answer ID J typed without the actions file
// and the model finishes the process with those vibe run recorded in the
// data directory (the name of the key's variable, never the key), its
// action called once; with the actions file gone it sends nothing, says
// what is missing and how to give it, and the process waits as it did.
func TestAnswerWithoutFlags(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	t.Setenv("VIBE_LLM", "")
	t.Setenv("VIBE_LLM_API_KEY", "k3y-never-written")
	model := newMeetingModel(t)
	actions, calls := meetingActions(t)
	data := t.TempDir()
	start := func() string {
		t.Helper()
		status, _, stderr := run(t, "", "run", "aug:processes/schedule-meeting", "--registry", example+"/registry", "--prompt", "Meet Bob",
			"--data", data, "--actions-file", actions, "--llm", "openai:test-model", "--llm-base-url", model.URL)
		i := strings.Index(stderr, "vibe answer ")
		if status != 0 || i < 0 {
			t.Fatalf("run: %d\n%s", status, stderr)
		}
		return strings.Fields(stderr[i+len("vibe answer "):])[0]
	}
	const approve = `{"confirmInvitation":{"decision":"Approve"}}`

	id := start()
	rec, err := os.ReadFile(needsFile(data, id))
	if err != nil || strings.Contains(string(rec), "k3y-never-written") || !strings.Contains(string(rec), `"keyVar": "VIBE_LLM_API_KEY"`) || !strings.Contains(string(rec), actions) {
		t.Fatalf("the process's needs: %v\n%s", err, rec)
	}
	status, stdout, stderr := run(t, "", "answer", id, approve, "--data", data)
	if status != 0 || !strings.Contains(stderr, "completed") || !strings.Contains(stdout, `"status": "sent"`) {
		t.Fatalf("answer without the flags: %d\n%s%s", status, stdout, stderr)
	}
	if got := calls()["/send"]; got != 1 {
		t.Errorf("sendInvitation called %d times", got)
	}

	second := start()
	if err := os.Rename(actions, actions+".moved"); err != nil {
		t.Fatal(err)
	}
	status, _, stderr = run(t, "", "answer", second, approve, "--data", data)
	if status == 0 || !strings.Contains(stderr, second+" needs its actions file "+actions+" (no such file or directory)") || !strings.Contains(stderr, "--actions-file FILE") {
		t.Errorf("answer with the actions file gone: %d\n%s", status, stderr)
	}
	status, stdout, _ = run(t, "", "show", second, "--data", data)
	if status != 0 || !strings.Contains(stdout, `"status": "waiting"`) {
		t.Errorf("the process after an answer that could not be sent: %d\n%s", status, stdout)
	}
	if got := calls()["/send"]; got != 1 {
		t.Errorf("sendInvitation called %d times", got)
	}

	// No record (a process another way started): the worker has not the
	// action the process goes on with, and nothing is sent; with the
	// actions file, the process completes.
	if err := os.Rename(actions+".moved", actions); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(needsFile(data, second)); err != nil {
		t.Fatal(err)
	}
	status, _, stderr = run(t, "", "answer", second, approve, "--data", data)
	if status == 0 || !strings.Contains(stderr, second+" goes on with the action sendInvitation, which this command has not: nothing was sent") {
		t.Errorf("answer without the actions and no record: %d\n%s", status, stderr)
	}
	status, stdout, stderr = run(t, "", "answer", second, approve, "--data", data, "--actions-file", actions)
	if status != 0 || !strings.Contains(stdout, `"status": "sent"`) || calls()["/send"] != 2 {
		t.Errorf("answer with the actions file: %d, %d calls\n%s%s", status, calls()["/send"], stdout, stderr)
	}
}
