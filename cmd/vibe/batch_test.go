package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/augceo/vibe/api"
	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/internal/diskspace"
	"github.com/augceo/vibe/internal/llmtest"
	"github.com/augceo/vibe/process"
)

// moderateProcess is the batch tests' process: a model's chunk of two
// steps, then a server step that records the decision.
const moderateProcess = `{
  "title": "Moderate",
  "type": "object",
  "properties": {
    "llmContext1": {"type": "object", "properties": {
      "assess": {"type": "object", "properties": {"sentiment": {"type": "string", "enum": ["positive", "negative"]}}, "required": ["sentiment"]},
      "decide": {"type": "object", "properties": {"decision": {"type": "string", "enum": ["publish", "hide"]}}, "required": ["decision"]}},
      "required": ["assess", "decide"]},
    "serverContext1": {"type": "object", "properties": {
      "record": {"type": "object", "references": ["llmContext1.decide"],
        "properties": {"applied": {"type": "boolean"}}, "required": ["applied"]}}}
  }
}`

// tally is the record action's endpoint: it applies each idempotency
// key's effect once, and counts every call.
type tally struct {
	mu      sync.Mutex
	calls   int
	effects map[string]int
	delay   time.Duration
}

func (l *tally) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	time.Sleep(l.delay)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls++
	l.effects[r.Header.Get("Idempotency-Key")]++
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, `{"applied": true}`)
}

func (l *tally) counts() (calls, keys int, repeated []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, n := range l.effects {
		if n > 1 {
			repeated = append(repeated, k)
		}
	}
	return l.calls, len(l.effects), repeated
}

// batchSetup writes the process, an actions file for a tally and an input
// of n comments (and lines bad) into a directory.
func batchSetup(t *testing.T, n int, bad map[int]string, delay time.Duration) (dir string, led *tally) {
	t.Helper()
	dir = t.TempDir()
	led = &tally{effects: map[string]int{}, delay: delay}
	srv := httptest.NewServer(led)
	t.Cleanup(srv.Close)
	os.WriteFile(filepath.Join(dir, "moderate.json"), []byte(moderateProcess), 0o644)
	os.WriteFile(filepath.Join(dir, "actions.json"), []byte(fmt.Sprintf(`{"record": %q}`, srv.URL)), 0o644)
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if line, ok := bad[i]; ok {
			b.WriteString(line + "\n")
			continue
		}
		fmt.Fprintf(&b, "%q\n", fmt.Sprintf("comment %d", i))
	}
	os.WriteFile(filepath.Join(dir, "items.jsonl"), []byte(b.String()), 0o644)
	return dir, led
}

// readResults reads the complete lines of a results file (a kill may have
// torn the last), checking each is a result.
func readResults(t *testing.T, path string) []batch.Result {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data = data[:strings.LastIndexByte(string(data), '\n')+1]
	var out []batch.Result
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r batch.Result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s: line %d is no result: %q", path, len(out)+1, sc.Text())
		}
		out = append(out, r)
	}
	return out
}

// checkResults checks that results hold lines 1…n once each, in order,
// with the model's verdict for each comment (but for the lines bad).
func checkResults(t *testing.T, results []batch.Result, n int, bad map[int]string) {
	t.Helper()
	if len(results) != n {
		t.Fatalf("%d result lines, want %d", len(results), n)
	}
	for i, r := range results {
		line := i + 1
		if r.Line != line {
			t.Fatalf("result %d is for line %d", line, r.Line)
		}
		if _, isBad := bad[line]; isBad {
			if r.Status != batch.StatusFailed {
				t.Errorf("line %d (bad): %+v", line, r)
			}
			continue
		}
		want := fmt.Sprintf(`"decide":%s`, llmtest.Verdict("decide", fmt.Sprintf("comment %d", line), false))
		if r.Status != batch.StatusCompleted || !strings.Contains(string(r.Output), want) {
			t.Errorf("line %d: %+v, want output with %s", line, r, want)
		}
	}
}

// TestBatchCommand runs vibe batch on the embedded engine over 70 lines,
// two of them bad: every line gets its result in order, the bad ones an
// error naming the file, line and JSON path; the exit status is 1 and the
// summary says why. Run again, it reads the finished batch back: no model
// call, no action, the output file unchanged.
func TestBatchCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	bad := map[int]string{5: `{"prompt": 3}`, 9: `{not json`}
	dir, led := batchSetup(t, 70, bad, 0)
	model := llmtest.NewServer(t, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{Cached: 0.5})
	out := filepath.Join(dir, "out.jsonl")
	prices := filepath.Join(dir, "prices.json")
	os.WriteFile(prices, []byte(`{"models": {"test-model": {"input": 1, "cachedInput": 0.5, "output": 2}}}`), 0o600)
	args := []string{"batch", filepath.Join(dir, "moderate.json"), "--in", filepath.Join(dir, "items.jsonl"), "--out", out,
		"--batch-size", "8", "--concurrency", "2", "--data", filepath.Join(dir, "data"), "--prices", prices,
		"--actions-file", filepath.Join(dir, "actions.json"), "--llm", "openai:test-model", "--llm-base-url", model.URL}
	status, _, stderr := run(t, "", args...)
	if status != exitError || !strings.Contains(stderr, "this run wrote 70 results, 68 ok, 2 failed; 9 new LLM requests; ") ||
		!strings.Contains(stderr, "2 of 70 items failed") || strings.Contains(stderr, "in all") {
		t.Fatalf("status %d, stderr:\n%s", status, stderr)
	}
	// Every item's prompt and answer is in the results: the owner's alone.
	if fi, err := os.Stat(out); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: mode %v (%v), want 0600", out, fi.Mode().Perm(), err)
	}
	// The provider said half of each prompt came from its cache, and the
	// prices file says what that costs: (450 × 1 + 450 × 0.5 + 270 × 2) / 1e6.
	if !strings.Contains(stderr, "900 prompt + 270 completion tokens (450 of the prompt's from the provider's cache, 50%); cost 0.001215 USD (prices: "+prices+")") {
		t.Errorf("no cached share or cost in the summary:\n%s", stderr)
	}
	// vibe batches prices the batch by the model its record names.
	if m := regexp.MustCompile(`vibe: batch (\S+): this run`).FindStringSubmatch(stderr); m == nil {
		t.Errorf("no batch id in\n%s", stderr)
	} else {
		_, stdout, berr := run(t, "", "batches", m[1], "--data", filepath.Join(dir, "data"), "--prices", prices)
		if !strings.Contains(stdout, `"model": "test-model"`) || !strings.Contains(berr, "cost 0.001215 USD") {
			t.Errorf("vibe batches %s: %s\n%s", m[1], stdout, berr)
		}
		_, stdout, _ = run(t, "", "batches", "--data", filepath.Join(dir, "data"), "--prices", prices)
		if !strings.Contains(stdout, "COST (USD)") || !strings.Contains(stdout, "0.001215") {
			t.Errorf("vibe batches: %s", stdout)
		}
	}
	results := readResults(t, out)
	checkResults(t, results, 70, bad)
	if e := results[4].Error; !strings.Contains(e, "items.jsonl:5: /prompt: must be a string") {
		t.Errorf("line 5's error: %q", e)
	}
	if e := results[8].Error; !strings.Contains(e, "items.jsonl:9: /: not JSON") {
		t.Errorf("line 9's error: %q", e)
	}
	if calls, keys, _ := led.counts(); calls != 68 || keys != 68 {
		t.Errorf("the action ran %d times with %d keys, want 68", calls, keys)
	}
	before, _ := os.ReadFile(out)

	status, _, stderr = run(t, "", args...)
	after, _ := os.ReadFile(out)
	if status != exitError || !strings.Contains(stderr, "holds results up to line 70") ||
		!strings.Contains(stderr, ": nothing to do: "+out+" already holds every result; 0 new results, 0 new LLM requests\n") ||
		!strings.Contains(stderr, "in all: 70 items, 68 ok, 2 failed; 9 LLM requests") ||
		!strings.Contains(stderr, "2 of 70 items failed") || string(after) != string(before) {
		t.Errorf("rerun: status %d, output changed %v, stderr:\n%s", status, string(after) != string(before), stderr)
	}
	if n := model.Requests(); n != 9 {
		t.Errorf("%d model requests after the rerun, want the first run's 9", n)
	}
	if calls, _, _ := led.counts(); calls != 68 {
		t.Errorf("the action ran %d times after the rerun, want 68", calls)
	}

	// K is how a batch is cut, not what it is: the same command with
	// another K is the same batch, which keeps the K of its first run; its
	// results are read back into another file, with no model request.
	id := regexp.MustCompile(`vibe: batch (\S+) in all`).FindStringSubmatch(stderr)
	if id == nil {
		t.Fatalf("no batch id in\n%s", stderr)
	}
	other := slices.Clone(args)
	other[slices.Index(other, "--batch-size")+1] = "4"
	other[slices.Index(other, "--out")+1] = filepath.Join(dir, "out4.jsonl")
	status, _, stderr = run(t, "", other...)
	if status != exitError || !strings.Contains(stderr, "vibe: batch "+id[1]+" keeps the group size of its first run, 8 items (this run asked for 4)") ||
		!strings.Contains(stderr, "vibe: batch "+id[1]+": this run wrote 70 results, 68 ok, 2 failed; 0 new LLM requests") {
		t.Errorf("another size: status %d, stderr:\n%s", status, stderr)
	}
	checkResults(t, readResults(t, filepath.Join(dir, "out4.jsonl")), 70, bad)
	if n := model.Requests(); n != 9 {
		t.Errorf("%d model requests after a run with another K, want the first run's 9", n)
	}
}

// TestBatchIDAgrees: the command line and POST /v1/batches name the same
// batch for the same process and items — a registry URI, a pipeline —
// whatever K each asks, and however the items are sent (JSONL, an items
// array): the batch vibe batch ran is found by the server and not run
// again.
func TestBatchIDAgrees(t *testing.T) {
	if testing.Short() {
		t.Skip("starts vibe serve")
	}
	const n = 6
	dir, _ := batchSetup(t, n, nil, 0)
	reg := filepath.Join(dir, "registry")
	for name, s := range map[string]string{
		"processes/moderate.json":  moderateProcess,
		"instructions/Assess.json": `{"type": "object", "properties": {"sentiment": {"type": "string", "enum": ["positive", "negative"]}}, "required": ["sentiment"]}`,
		"instructions/Decide.json": `{"type": "object", "properties": {"decision": {"type": "string", "enum": ["publish", "hide"]}}, "required": ["decision"]}`,
	} {
		os.MkdirAll(filepath.Dir(filepath.Join(reg, name)), 0o755)
		os.WriteFile(filepath.Join(reg, name), []byte(s), 0o644)
	}
	model := llmtest.NewServer(t, llmtest.Multiplexed(func(step, prompt string, repair bool) string {
		return llmtest.Verdict(strings.TrimPrefix(strings.TrimPrefix(step, "step1_"), "step2_"), prompt, repair)
	}), llmtest.Options{})
	data := filepath.Join(dir, "data")
	common := []string{"--registry", reg, "--data", data, "--actions-file", filepath.Join(dir, "actions.json"), "--llm", "openai:test-model", "--llm-base-url", model.URL}
	items, _ := os.ReadFile(filepath.Join(dir, "items.jsonl"))
	lines := strings.Split(strings.TrimSpace(string(items)), "\n")
	const pipeline = "prompt | Assess | Decide"
	cli := map[string]string{}
	for what, args := range map[string][]string{
		"uri":      {"batch", "aug:processes/moderate", "--batch-size", "4"},
		"pipeline": {"batch", "--pipeline", pipeline, "--batch-size", "2"},
	} {
		status, _, stderr := run(t, "", append(append(args, "--in", filepath.Join(dir, "items.jsonl")), common...)...)
		m := regexp.MustCompile(`vibe: batch (\S+): this run wrote 6 results, 6 ok`).FindStringSubmatch(stderr)
		if status != 0 || m == nil {
			t.Fatalf("vibe batch (%s): status %d\n%s", what, status, stderr)
		}
		cli[what] = m[1]
	}
	if cli["uri"] == cli["pipeline"] {
		t.Fatalf("a process and a pipeline named the same batch %s", cli["uri"])
	}
	requests := model.Requests()

	addr := freeAddr(t)
	base := "http://" + addr
	child(t, append([]string{"serve", "--addr", addr}, common...)...)
	c := &api.Client{BaseURL: base}
	waitUntil(t, "vibe serve", time.Minute, func() bool { _, err := c.List(context.Background(), process.ListOptions{Limit: 1}); return err == nil })
	for _, tc := range []struct {
		name, contentType, path, body, want string
	}{
		{"JSONL, a registry URI", "application/x-ndjson", "/v1/batches?process=aug:processes/moderate&size=8", string(items), cli["uri"]},
		{"items, a registry URI", "application/json", "/v1/batches", `{"process": "aug:processes/moderate", "size": 3, "items": [` + strings.Join(lines, ",") + `]}`, cli["uri"]},
		{"JSONL, a pipeline", "application/x-ndjson", "/v1/batches?pipeline=" + url.QueryEscape(pipeline), string(items), cli["pipeline"]},
		{"items, a pipeline", "application/json", "/v1/batches", fmt.Sprintf(`{"pipeline": %q, "size": 5, "items": [%s]}`, pipeline, strings.Join(lines, ",")), cli["pipeline"]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.Post(base+tc.path, tc.contentType, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var got struct {
				ID      string `json:"id"`
				Created bool   `json:"created"`
			}
			json.NewDecoder(resp.Body).Decode(&got)
			if resp.StatusCode != http.StatusOK || got.ID != tc.want || got.Created {
				t.Errorf("POST %s: %d %+v, want the batch vibe batch ran, %s, not created", tc.path, resp.StatusCode, got, tc.want)
			}
		})
	}
	if model.Requests() != requests {
		t.Errorf("the server asked the model %d more times for batches that had run", model.Requests()-requests)
	}

	// An id that names a batch, given with another input, is refused —
	// exit 2, 409 — naming both inputs' digests, and nothing of that batch
	// is read back for it.
	other := filepath.Join(dir, "other.jsonl")
	os.WriteFile(other, []byte(`"another item"`+"\n"), 0o600)
	otherDigest, _ := batch.InputDigest(strings.NewReader(`"another item"` + "\n"))
	resp, err := http.Get(base + "/v1/batches/" + cli["uri"])
	if err != nil {
		t.Fatal(err)
	}
	var rec batch.Status
	json.NewDecoder(resp.Body).Decode(&rec)
	resp.Body.Close()
	if rec.Digest == "" {
		t.Fatalf("batch %s keeps no digest: %+v", cli["uri"], rec)
	}
	status, stdout, stderr := run(t, "", "batch", "aug:processes/moderate", "--id", cli["uri"], "--in", other, "--registry", reg, "--data", data)
	if status != exitUsage || stdout != "" || !strings.Contains(stderr, "batch "+cli["uri"]+" was made from another input: its input's digest is "+rec.Digest+", this input's is "+otherDigest) {
		t.Errorf("vibe batch --id with another input: status %d\n%s%s", status, stdout, stderr)
	}
	resp, err = http.Post(base+"/v1/batches?process=aug:processes/moderate&id="+cli["uri"], "application/x-ndjson", strings.NewReader(`"another item"`+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict || !strings.Contains(string(body), rec.Digest) || !strings.Contains(string(body), otherDigest) {
		t.Errorf("POST /v1/batches with the id and another input: %d %s", resp.StatusCode, body)
	}
	if model.Requests() != requests {
		t.Errorf("the model was asked %d more times for a refused batch", model.Requests()-requests)
	}
}

// TestBatchDrain interrupts vibe batch (a child process) with Ctrl-C: the
// first makes it read no more and finish the groups in flight, whose
// results are written whole and in order, and it exits 130 saying the
// command that goes on; two stop it at once. The printed command, run
// again, completes the batch with each line once, and no item whose
// result was written is sent to the model again.
func TestBatchDrain(t *testing.T) {
	if testing.Short() {
		t.Skip("runs vibe batch as a child process")
	}
	const n, k = 96, 8
	dir, led := batchSetup(t, n, nil, 0)
	model := llmtest.NewServer(t, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{Delay: 300 * time.Millisecond})
	out := filepath.Join(dir, "out.jsonl")
	args := []string{"batch", filepath.Join(dir, "moderate.json"), "--in", filepath.Join(dir, "items.jsonl"), "--out", out,
		"--batch-size", strconv.Itoa(k), "--concurrency", "2", "--data", filepath.Join(dir, "data"),
		"--actions-file", filepath.Join(dir, "actions.json"), "--llm", "openai:test-model", "--llm-base-url", model.URL}
	// interrupt runs the command, sends it signals SIGINTs once it wrote
	// more than from lines, and returns its exit status and output.
	interrupt := func(from, signals int) (int, string) {
		t.Helper()
		cmd, output := child(t, args...)
		waitUntil(t, fmt.Sprintf("results after line %d", from), time.Minute, func() bool { return completeLines(out) > from })
		for i := range signals {
			if i > 0 {
				time.Sleep(200 * time.Millisecond) // two signals, not one coalesced
			}
			cmd.Process.Signal(os.Interrupt)
		}
		cmd.Wait()
		return cmd.ProcessState.ExitCode(), output.String()
	}
	// written checks the output holds whole result lines, in order, from
	// line 1, for whole groups, and returns how many.
	written := func(output string) int {
		t.Helper()
		data, _ := os.ReadFile(out)
		if len(data) > 0 && data[len(data)-1] != '\n' {
			t.Errorf("the output ends in a torn line:\n%s", data)
		}
		results := readResults(t, out)
		checkResults(t, results, len(results), nil)
		if len(results)%k != 0 || len(results) == n {
			t.Errorf("%d result lines written, want whole groups of %d, fewer than %d\n%s", len(results), k, n, output)
		}
		return len(results)
	}
	// resume finds the command to run again in output: it is this one.
	resume := func(output string) []string {
		t.Helper()
		_, cmdline, ok := strings.Cut(output, "\n  vibe ")
		cmdline, _, _ = strings.Cut(cmdline, "\n")
		if got := strings.Fields(cmdline); !ok || !slices.Equal(got, args) {
			t.Fatalf("no command to run again, or another: %q\n%s", cmdline, output)
		}
		return strings.Fields(cmdline)
	}

	status, output := interrupt(0, 1)
	lines := written(output)
	asked := 0 // the last line asked of the model: its group was in flight
	for p := range itemsAsked(model) {
		line, _ := strconv.Atoi(strings.TrimPrefix(p, "comment "))
		asked = max(asked, line)
	}
	want := fmt.Sprintf("stopped after line %d; run the same command again to go on; it continues %s after line %d:\n", lines, out, lines)
	if status != exitInterrupted || !strings.Contains(output, "vibe: stopping: no more input is read") || !strings.Contains(output, want) ||
		!strings.Contains(output, fmt.Sprintf("this run wrote %d results, %d ok, 0 failed; ", lines, lines)) || lines < asked {
		t.Fatalf("one Ctrl-C: status %d, %d lines written, line %d asked of the model, output:\n%s", status, lines, asked, output)
	}
	resume(output)
	t.Logf("one Ctrl-C: %d of %d lines written", lines, n)

	status, output = interrupt(lines, 2)
	if status != exitInterrupted || !strings.Contains(output, "stopped at once: the groups in flight go on in the engine, and a rerun picks up their results; run the same command again to go on") {
		t.Fatalf("two Ctrl-Cs: status %d, output:\n%s", status, output)
	}
	again := resume(output)
	t.Logf("two Ctrl-Cs: %d of %d lines written", written(output), n)

	writtenBefore := readResults(t, out)
	status, _, stderr := run(t, "", again...)
	if status != exitOK || !strings.Contains(stderr, "in all: 96 items, 96 ok, 0 failed") {
		t.Fatalf("rerun: status %d, stderr:\n%s", status, stderr)
	}
	checkResults(t, readResults(t, out), n, nil)
	if _, keys, _ := led.counts(); keys != n {
		t.Errorf("the record action's effect was applied for %d items, want %d", keys, n)
	}
	asks := itemsAsked(model)
	for _, r := range writtenBefore {
		if k := asks[fmt.Sprintf("comment %d", r.Line)]; k != 1 {
			t.Errorf("line %d was written before the rerun, yet was sent to the model %d times", r.Line, k)
		}
	}
}

// TestShellQuote: the command printed to run again reads back, in a
// POSIX shell, as the arguments it was given.
func TestShellQuote(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"batch", "aug:processes/moderate", "--in", "/tmp/a-b_c.jsonl", "--batch-size", "8"}, "batch aug:processes/moderate --in /tmp/a-b_c.jsonl --batch-size 8"},
		{[]string{"batch", "--pipeline", "assess | decide", "--prompt", ""}, "batch --pipeline 'assess | decide' --prompt ''"},
		{[]string{"--system", "it's $HOME"}, `--system 'it'\''s $HOME'`},
	} {
		if got := shellQuote(c.args); got != c.want {
			t.Errorf("shellQuote(%q) = %s, want %s", c.args, got, c.want)
		}
	}
}

// completeLines counts the complete lines of a file.
func completeLines(path string) int {
	data, _ := os.ReadFile(path)
	return strings.Count(string(data), "\n")
}

// itemsAsked counts, per item prompt, the model calls (not repairs) that
// carried it.
func itemsAsked(model *llmtest.Server) map[string]int {
	asked := map[string]int{}
	for _, b := range model.Bodies() {
		r := llmtest.Read(b)
		if r.Repair {
			continue
		}
		for _, p := range r.Prompts {
			asked[p]++
		}
	}
	return asked
}

// serveBatch is a batch of n comments for vibe batch to run on a vibe
// serve, both as child processes for a test to kill: a test model that
// takes 150 ms a call, the record action's tally, and their command lines.
type serveBatch struct {
	dir, data, out       string
	led                  *tally
	model                *llmtest.Server
	serveArgs, batchArgs []string
	ready                func() bool // the serve answers its API
}

func newServeBatch(t *testing.T, n int) *serveBatch {
	t.Helper()
	dir, led := batchSetup(t, n, nil, 20*time.Millisecond)
	model := llmtest.NewServer(t, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{Delay: 150 * time.Millisecond})
	data, addr := filepath.Join(dir, "data"), freeAddr(t)
	out := filepath.Join(dir, "out.jsonl")
	c := &api.Client{BaseURL: "http://" + addr}
	return &serveBatch{dir: dir, data: data, out: out, led: led, model: model,
		serveArgs: []string{"serve", "--data", data, "--addr", addr, "--actions-file", filepath.Join(dir, "actions.json"),
			"--llm", "openai:test-model", "--llm-base-url", model.URL},
		batchArgs: []string{"batch", filepath.Join(dir, "moderate.json"), "--in", filepath.Join(dir, "items.jsonl"), "--out", out,
			"--batch-size", "16", "--concurrency", "4", "--data", data},
		ready: func() bool { _, err := c.List(context.Background(), process.ListOptions{Limit: 1}); return err == nil },
	}
}

// TestBatchCrash SIGKILLs vibe serve and the vibe batch that feeds it in
// the middle of a 500-item batch, starts the serve again and reruns the
// same command: the output holds each item once, in order; the record
// action's effect was applied once per item; and no item whose group had
// finished before the kill was sent to the model again.
func TestBatchCrash(t *testing.T) {
	t.Parallel() // vibe runs in child processes of its own, on a data directory and model of its own
	if testing.Short() {
		t.Skip("kills and restarts vibe serve")
	}
	const n = 500
	sb := newServeBatch(t, n)
	led, model, out, serveArgs, batchArgs, ready := sb.led, sb.model, sb.out, sb.serveArgs, sb.batchArgs, sb.ready

	serve, _ := child(t, serveArgs...)
	waitUntil(t, "vibe serve", time.Minute, ready)
	feeder, feederOut := child(t, batchArgs...)
	waitUntil(t, "a fifth of the results", 2*time.Minute, func() bool { return completeLines(out) >= n/5 })
	feeder.Process.Signal(syscall.SIGKILL)
	serve.Process.Signal(syscall.SIGKILL)
	feeder.Wait()
	serve.Wait()
	finished := readResults(t, out) // the lines of groups that had finished
	t.Logf("killed vibe serve and vibe batch with %d of %d results written", len(finished), n)

	_, serveOut := child(t, serveArgs...)
	waitUntil(t, "vibe serve to come back", time.Minute, ready)
	rerun, rerunOut := child(t, batchArgs...)
	if err := rerun.Wait(); err != nil {
		t.Fatalf("rerun: %v\n%s\nfirst run:\n%s\nserve:\n%s", err, rerunOut, feederOut, serveOut)
	}
	t.Logf("rerun: %s", strings.TrimSpace(rerunOut.String()))
	checkResults(t, readResults(t, out), n, nil)
	// Every request the model received is counted, those of calls that
	// were in flight at the kill and sent again included — but for a
	// request on the wire at the SIGKILL whose count the killed worker's
	// heartbeat had not yet carried to the engine: at most the calls the
	// batch runs at once (--concurrency 4). None is counted twice.
	m := regexp.MustCompile(`in all: \d+ items, \d+ ok, \d+ failed; (\d+) LLM requests`).FindStringSubmatch(rerunOut.String())
	if m == nil {
		t.Errorf("no summary of the whole batch in\n%s", rerunOut)
	} else if got, _ := strconv.Atoi(m[1]); got > model.Requests() || model.Requests()-got > 4 {
		t.Errorf("the summary counts %d LLM requests; the model received %d", got, model.Requests())
	} else {
		t.Logf("the summary counts %d of the %d requests the model received (%d groups)", got, model.Requests(), (n+15)/16)
	}

	calls, keys, repeated := led.counts()
	if keys != n {
		t.Errorf("the record action's effect was applied for %d items, want %d", keys, n)
	}
	t.Logf("the record action was called %d times for %d items: %d calls repeated after the kill, with their first call's key", calls, keys, calls-keys)
	_ = repeated
	asked := itemsAsked(model)
	for _, r := range finished {
		if k := asked[fmt.Sprintf("comment %d", r.Line)]; k != 1 {
			t.Errorf("line %d finished before the kill, yet was sent to the model %d times", r.Line, k)
		}
	}
	for i := 1; i <= n; i++ {
		if asked[fmt.Sprintf("comment %d", i)] == 0 {
			t.Errorf("line %d was never sent to the model", i)
		}
	}
}

// TestBatchOutlivesServer: vibe serve is SIGKILLed under a running vibe
// batch and started again — its engine then listens on another port. The
// same vibe batch, never interrupted, finds the engine again and ends with
// every item once and completed, each effect applied once; no line says
// "failed" for an item that did not fail.
func TestBatchOutlivesServer(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts vibe serve")
	}
	const n = 300
	sb := newServeBatch(t, n)
	led, model, data, out, serveArgs, batchArgs, ready := sb.led, sb.model, sb.data, sb.out, sb.serveArgs, sb.batchArgs, sb.ready

	serve, _ := child(t, serveArgs...)
	waitUntil(t, "vibe serve", time.Minute, ready)
	before, _ := os.ReadFile(filepath.Join(data, "engine.addr"))
	feeder, feederOut := child(t, batchArgs...)
	waitUntil(t, "a fifth of the results", 2*time.Minute, func() bool { return completeLines(out) >= n/5 })
	serve.Process.Signal(syscall.SIGKILL)
	serve.Wait()
	t.Logf("killed vibe serve with %d of %d results written", completeLines(out), n)
	_, serveOut := child(t, serveArgs...)
	waitUntil(t, "vibe serve to come back", time.Minute, ready)
	after, _ := os.ReadFile(filepath.Join(data, "engine.addr"))
	t.Logf("the engine was at %s and is now at %s", strings.TrimSpace(string(before)), strings.TrimSpace(string(after)))
	if err := feeder.Wait(); err != nil {
		t.Fatalf("vibe batch: %v\n%s\nserve:\n%s", err, feederOut, serveOut)
	}
	t.Logf("vibe batch: %s", strings.TrimSpace(feederOut.String()))
	checkResults(t, readResults(t, out), n, nil)
	if calls, keys, _ := led.counts(); keys != n {
		t.Errorf("the record action's effect was applied for %d items, want %d (%d calls)", keys, n, calls)
	}
	if !strings.Contains(feederOut.String(), fmt.Sprintf("this run wrote %d results, %d ok, 0 failed", n, n)) {
		t.Errorf("vibe batch said:\n%s", feederOut)
	}

	// An output that a Vibe from before this wrote: lines that say
	// "failed" for items that completed, because that run lost its engine.
	// Run again, the lines are mended from the batch's record, and nothing
	// runs again.
	b, _ := os.ReadFile(out)
	var mended bytes.Buffer
	for i, l := range strings.SplitAfter(string(b), "\n") {
		if i == 9 || i == 10 || i == 199 {
			l = fmt.Sprintf(`{"line":%d,"status":"failed","error":"group x: context deadline exceeded"}`+"\n", i+1)
		}
		mended.WriteString(l)
	}
	os.WriteFile(out, mended.Bytes(), 0o644)
	requests := model.Requests()
	status, _, stderr := run(t, "", batchArgs...)
	if status != 0 || !strings.Contains(stderr, "3 lines said failed for items that completed; rewritten from the batch's record") {
		t.Errorf("the rerun: %d\n%s", status, stderr)
	}
	checkResults(t, readResults(t, out), n, nil)
	if model.Requests() != requests {
		t.Errorf("the rerun made %d model requests", model.Requests()-requests)
	}
}

// TestBatchScaleOut runs a batch on the engine of a vibe serve with no
// model, with two vibe worker processes joined through --temporal-listen,
// each with a model endpoint of its own; one worker is SIGKILLed mid-run.
// vibe batch learns from the serve that its model calls go on the queue
// any model may answer (durable.AnyModelQueue), which both workers poll
// and the serve's own worker, having no model, does not: none is failed
// for want of a model. A third worker has a model and no actions: given
// the serve's actions file, vibe batch routes its items' action calls to
// the actions' queues, which that worker does not poll, so none is failed
// for want of the action. The batch completes with each item once and each
// effect applied once, and both workers took part.
func TestBatchScaleOut(t *testing.T) {
	t.Parallel() // vibe runs in child processes of its own, on a data directory and model of its own
	if testing.Short() {
		t.Skip("starts vibe serve and two workers")
	}
	const n = 300
	dir, led := batchSetup(t, n, nil, 20*time.Millisecond)
	models := make([]*llmtest.Server, 3)
	for i := range models {
		models[i] = llmtest.NewServer(t, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{Delay: 200 * time.Millisecond})
	}
	data, addr, frontend := filepath.Join(dir, "data"), freeAddr(t), freeAddr(t)
	actions := filepath.Join(dir, "actions.json")
	serve, serveOut := child(t, "serve", "--data", data, "--addr", addr, "--temporal-listen", frontend, "--actions-file", actions)
	c := &api.Client{BaseURL: "http://" + addr}
	waitUntil(t, "vibe serve", time.Minute, func() bool { _, err := c.List(context.Background(), process.ListOptions{Limit: 1}); return err == nil })
	workers := make([]*exec.Cmd, 2)
	for i := range workers {
		workers[i], _ = child(t, "worker", "--temporal", frontend, "--tls-dir", filepath.Join(data, "tls"), "--actions-file", actions,
			"--llm", "openai:test-model", "--llm-base-url", models[i].URL)
	}
	child(t, "worker", "--temporal", frontend, "--tls-dir", filepath.Join(data, "tls"), // no actions
		"--llm", "openai:test-model", "--llm-base-url", models[2].URL)
	out := filepath.Join(dir, "out.jsonl")
	feeder, feederOut := child(t, "batch", filepath.Join(dir, "moderate.json"), "--in", filepath.Join(dir, "items.jsonl"), "--out", out,
		"--batch-size", "10", "--concurrency", "6", "--data", data, "--actions-file", actions)
	waitUntil(t, "both workers to take calls", 2*time.Minute, func() bool { return models[0].Requests() > 0 && models[1].Requests() > 0 })
	workers[0].Process.Signal(syscall.SIGKILL)
	workers[0].Wait()
	t.Logf("killed a worker with %d results written", completeLines(out))
	if err := feeder.Wait(); err != nil {
		t.Fatalf("vibe batch: %v\n%s\nserve:\n%s", err, feederOut, serveOut)
	}
	_ = serve
	checkResults(t, readResults(t, out), n, nil)
	calls, keys, _ := led.counts()
	if keys != n {
		t.Errorf("the record action's effect was applied for %d items, want %d", keys, n)
	}
	t.Logf("model calls by the three workers: %d, %d, %d; the action was called %d times for %d items",
		models[0].Requests(), models[1].Requests(), models[2].Requests(), calls, keys)
	asked := itemsAsked(models[0])
	for _, m := range models[1:] {
		for p, k := range itemsAsked(m) {
			asked[p] += k
		}
	}
	twice := 0
	for i := 1; i <= n; i++ {
		switch asked[fmt.Sprintf("comment %d", i)] {
		case 0:
			t.Errorf("line %d was never sent to a model", i)
		case 1:
		default:
			twice++
		}
	}
	t.Logf("%d items were sent to a model again: their call was in flight on the killed worker", twice)
}

// TestBatchesAPI gives vibe serve a batch over HTTP — JSONL with the
// process in the query, and JSON items with the process inline — kills the
// serve while they run, starts it again, and reads each batch's status and
// result lines: the spooled batches were resumed and every line has its
// result once. The same JSON body given again names the same batch. A
// batch whose process does not compile, or whose URI's fragment names
// nothing, or that gives a process and a pipeline, is refused (422, 404,
// 400) and not spooled.
func TestBatchesAPI(t *testing.T) {
	t.Parallel() // vibe runs in child processes of its own, on a data directory and model of its own
	if testing.Short() {
		t.Skip("starts vibe serve twice")
	}
	const n = 64
	dir, led := batchSetup(t, n, nil, 0)
	os.MkdirAll(filepath.Join(dir, "registry", "processes"), 0o755)
	os.WriteFile(filepath.Join(dir, "registry", "processes", "moderate.json"), []byte(moderateProcess), 0o644)
	model := llmtest.NewServer(t, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{Delay: 300 * time.Millisecond})
	data, addr := filepath.Join(dir, "data"), freeAddr(t)
	args := []string{"serve", "--data", data, "--addr", addr, "--registry", filepath.Join(dir, "registry"),
		"--actions-file", filepath.Join(dir, "actions.json"), "--llm", "openai:test-model", "--llm-base-url", model.URL}
	base := "http://" + addr
	c := &api.Client{BaseURL: base}
	ready := func() bool { _, err := c.List(context.Background(), process.ListOptions{Limit: 1}); return err == nil }
	serve, _ := child(t, args...)
	waitUntil(t, "vibe serve", time.Minute, ready)

	post := func(contentType, path, body string) (int, map[string]any) {
		t.Helper()
		resp, err := http.Post(base+path, contentType, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	items, _ := os.ReadFile(filepath.Join(dir, "items.jsonl"))
	status, got := post("application/x-ndjson", "/v1/batches?process=aug:processes/moderate&size=8&concurrency=2", string(items))
	if status != http.StatusAccepted || got["id"] == "" {
		t.Fatalf("POST JSONL: %d %v", status, got)
	}
	jsonlID := got["id"].(string)
	lines := strings.Split(strings.TrimSpace(string(items)), "\n")
	jsonBody := fmt.Sprintf(`{"process": %s, "id": "inline-1", "size": 16, "items": [%s]}`, moderateProcess, strings.Join(lines[:32], ","))
	if status, got = post("application/json", "/v1/batches", jsonBody); status != http.StatusAccepted || got["id"] != "inline-1" {
		t.Fatalf("POST JSON: %d %v", status, got)
	}
	if status, got = post("application/json", "/v1/batches", `{"process": "aug:processes/moderate", "size": 0, "items": []}`); status != http.StatusBadRequest || !strings.Contains(fmt.Sprint(got), "/size") {
		t.Errorf("a size of 0: %d %v", status, got)
	}
	// What its run would refuse is refused before the batch is taken, as
	// POST /v1/processes refuses it, and nothing of it is spooled.
	for body, want := range map[string]string{
		`{"process": {"properties": {"a": {"type": "object", "properties": {"b": {"type": "string", "pattern": "(["}}}}}, "id": "bad-1", "items": ["x"]}`: "422 /properties/a/properties/b/pattern",
		`{"process": "aug:processes/moderate#/nope/x", "id": "bad-2", "items": ["x"]}`:                                                                    "404 #/nope/x",
		`{"process": "aug:processes/moderate", "pipeline": "\"x\" | Moderate", "id": "bad-3", "items": ["x"]}`:                                            "400 /pipeline",
	} {
		code, what, _ := strings.Cut(want, " ")
		if status, got = post("application/json", "/v1/batches", body); strconv.Itoa(status) != code || !strings.Contains(fmt.Sprint(got), what) {
			t.Errorf("%s: %d %v, want %s", body, status, got, want)
		}
	}
	if spooled, _ := filepath.Glob(filepath.Join(data, "batches", "bad-*")); len(spooled) > 0 {
		t.Errorf("refused batches were spooled: %v", spooled)
	}
	if resp, err := http.Get(base + "/v1/batches/bad-1"); err != nil {
		t.Error(err)
	} else if resp.Body.Close(); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET a refused batch: %d, want 404", resp.StatusCode)
	}

	waitUntil(t, "a few model calls", time.Minute, func() bool { return model.Requests() >= 2 })
	serve.Process.Signal(syscall.SIGKILL)
	serve.Wait()
	t.Logf("killed vibe serve after %d model calls", model.Requests())
	_, serveOut := child(t, args...)
	waitUntil(t, "vibe serve to come back", time.Minute, ready)

	for _, b := range []struct {
		id    string
		lines int
	}{{jsonlID, n}, {"inline-1", 32}} {
		resp, err := http.Get(base + "/v1/batches/" + b.id + "/results")
		if err != nil {
			t.Fatal(err)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/x-ndjson" {
			t.Errorf("results' content type %q", ct)
		}
		path := filepath.Join(dir, b.id+".jsonl")
		f, _ := os.Create(path)
		io.Copy(f, resp.Body)
		f.Close()
		resp.Body.Close()
		checkResults(t, readResults(t, path), b.lines, nil)
		var st batch.Status
		waitUntil(t, b.id+" to complete", time.Minute, func() bool {
			resp, err := http.Get(base + "/v1/batches/" + b.id)
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			json.NewDecoder(resp.Body).Decode(&st)
			return st.Status == batch.StatusCompleted
		})
		if st.Items != b.lines || st.Done != b.lines || st.Requests == 0 {
			t.Errorf("batch %s: %+v", b.id, st)
		}
	}
	if _, keys, _ := led.counts(); keys != n+32 {
		t.Errorf("the record action's effect was applied %d times, want %d", keys, n+32)
	}
	// The console shows the batches, each with its counts.
	for path, want := range map[string]string{"/batches": jsonlID, "/batches/inline-1": "inline-1", "/batches/nope": "no such batch"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if wantStatus := map[bool]int{true: http.StatusNotFound, false: http.StatusOK}[path == "/batches/nope"]; resp.StatusCode != wantStatus || !strings.Contains(string(page), want) {
			t.Errorf("console %s: %d, want %d with %q", path, resp.StatusCode, wantStatus, want)
		}
	}
	// The same body again names the same batch, which runs no more.
	before := model.Requests()
	if status, got = post("application/json", "/v1/batches", jsonBody); status != http.StatusOK || got["id"] != "inline-1" || got["created"] != false {
		t.Errorf("POST JSON again: %d %v", status, got)
	}
	if model.Requests() != before {
		t.Errorf("the batch given again made %d model calls", model.Requests()-before)
	}
	if t.Failed() {
		t.Logf("serve:\n%s", serveOut)
	}
}

// TestBatchSystemicStop: a batch whose model endpoint refuses every
// request (401) marks no item failed: it stops at once, exit 2, saying why
// and the command that goes on; run again once the endpoint answers, the
// same command asks every item and writes every result, none failed.
func TestBatchSystemicStop(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	const n = 6
	dir, _ := batchSetup(t, n, nil, 0)
	model := llmtest.NewServer(t, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{})
	var refuse atomic.Bool
	refuse.Store(true)
	gate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refuse.Load() {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`)
			return
		}
		model.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(gate.Close)
	out := filepath.Join(dir, "out.jsonl")
	args := []string{"batch", filepath.Join(dir, "moderate.json"), "--in", filepath.Join(dir, "items.jsonl"), "--out", out,
		"--batch-size", "2", "--data", filepath.Join(dir, "data"),
		"--actions-file", filepath.Join(dir, "actions.json"), "--llm", "openai:test-model", "--llm-base-url", gate.URL}
	status, _, stderr := run(t, "", args...)
	if status != exitUsage || !strings.Contains(stderr, "which failed for a reason not its own") || !strings.Contains(stderr, "Incorrect API key provided") ||
		!strings.Contains(stderr, "no item is marked failed for it; run the same command again once the model, its key or its endpoint is mended") ||
		strings.Contains(stderr, "vibe help") {
		t.Fatalf("status %d, stderr:\n%s", status, stderr)
	}
	if b, _ := os.ReadFile(out); strings.Contains(string(b), `"failed"`) {
		t.Errorf("an item was written failed:\n%s", b)
	}

	refuse.Store(false)
	status, _, stderr = run(t, "", args...)
	if status != exitOK || !strings.Contains(stderr, fmt.Sprintf("this run wrote %d results, %d ok, 0 failed", n, n)) {
		t.Fatalf("the same command again: status %d, stderr:\n%s", status, stderr)
	}
	if rs := readResults(t, out); len(rs) != n {
		t.Errorf("%d results, want %d", len(rs), n)
	}
}

// TestBatchRetryFailed: an item that failed for its own reason (the
// model's answer refused after its repairs) stays failed when the same
// command runs again, and the failure's message points to --retry-failed;
// with it, only that item is asked again, --out is written again whole,
// and the summary counts it.
func TestBatchRetryFailed(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	const n = 4
	dir, _ := batchSetup(t, n, nil, 0)
	var broken atomic.Bool
	broken.Store(true)
	model := llmtest.NewServer(t, llmtest.Multiplexed(func(step, prompt string, repair bool) string {
		if broken.Load() && prompt == "comment 3" && step == "assess" {
			return `{"sentiment":"furious"}`
		}
		return llmtest.Verdict(step, prompt, repair)
	}), llmtest.Options{})
	out := filepath.Join(dir, "out.jsonl")
	args := []string{"batch", filepath.Join(dir, "moderate.json"), "--in", filepath.Join(dir, "items.jsonl"), "--out", out,
		"--batch-size", "4", "--data", filepath.Join(dir, "data"),
		"--actions-file", filepath.Join(dir, "actions.json"), "--llm", "openai:test-model", "--llm-base-url", model.URL}
	status, _, stderr := run(t, "", args...)
	if status != exitError || !strings.Contains(stderr, "1 of 4 items failed: their result lines say why; the same command with --retry-failed asks them again") {
		t.Fatalf("status %d, stderr:\n%s", status, stderr)
	}
	broken.Store(false)
	asked := model.Requests()
	status, _, stderr = run(t, "", append(args, "--retry-failed")...)
	if status != exitOK || !strings.Contains(stderr, "this run wrote 4 results, 4 ok, 0 failed; 1 failed items retried") {
		t.Fatalf("--retry-failed: status %d, stderr:\n%s", status, stderr)
	}
	if got := model.Requests() - asked; got != 1 {
		t.Errorf("--retry-failed made %d model requests, want 1, for the failed item alone", got)
	}
	rs := readResults(t, out)
	if len(rs) != n {
		t.Fatalf("%d results, want %d", len(rs), n)
	}
	for i, r := range rs {
		if r.Line != i+1 || r.Status != batch.StatusCompleted {
			t.Errorf("result %d: %+v", i+1, r)
		}
	}
}

// TestEndpointDownReported: vibe ask, vibe run and vibe batch against a
// model endpoint that refuses connections say so on stderr while their
// calls wait for it — the failure, how long it has been down, when the
// next try is — long before they would give up (30 min).
func TestEndpointDownReported(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	dir, _ := batchSetup(t, 2, nil, 0)
	down := "http://" + freeAddr(t) // nothing listens there
	model := []string{"--llm", "openai:test-model", "--llm-base-url", down}
	for name, args := range map[string][]string{
		"ask":   {"ask", filepath.Join(dir, "moderate.json"), "--prompt", "comment 1"},
		"run":   {"run", filepath.Join(dir, "moderate.json"), "--prompt", "comment 1", "--data", filepath.Join(dir, "run"), "--actions-file", filepath.Join(dir, "actions.json")},
		"batch": {"batch", filepath.Join(dir, "moderate.json"), "--in", filepath.Join(dir, "items.jsonl"), "--data", filepath.Join(dir, "batch"), "--actions-file", filepath.Join(dir, "actions.json")},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, out := child(t, append(args, model...)...)
			waitUntil(t, "the report of the down endpoint", 2*time.Minute, func() bool {
				return strings.Contains(out.String(), "vibe: model call failed (attempt 1):")
			})
			if s := out.String(); !strings.Contains(s, "connection refused") || !strings.Contains(s, "the model endpoint has been unreachable for") || !strings.Contains(s, "next try in") {
				t.Errorf("stderr:\n%s", s)
			}
		})
	}
}

// TestUnreachableNote: a batch the disk-space guard stops says so, and
// why, instead of that the engine does not answer.
func TestUnreachableNote(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&diskspace.Error{Dir: "/data", Free: 1 << 20, What: "the engine cannot write its database"},
			"vibe: batch b-1 is stopped by the disk-space guard: no space left on device on /data (1 MiB free)"},
		{errors.New("rpc error: code = Unavailable desc = connection refused"), "vibe: the engine does not answer (rpc error"},
	} {
		if got := unreachableNote("b-1", tc.err); !strings.HasPrefix(got, tc.want) || !strings.Contains(got, "waiting up to 10m0s") && !strings.Contains(got, "waits up to 10m0s") {
			t.Errorf("%v: %s", tc.err, got)
		}
	}
}
