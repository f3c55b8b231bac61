package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/augceo/vibe/api"
	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/internal/llmtest"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/process"
)

// TestProviderBatchCrash SIGKILLs vibe batch --provider-batch (its
// embedded engine and worker with it) at each of the four moments of a
// provider batch — the request file uploaded but its id not yet taken,
// the batch created but its id not yet recorded, the batch in progress,
// its results being read — and runs the same command again: nothing is
// uploaded or submitted twice, no call goes direct, each action's effect
// is applied once and the output holds every item once, in order.
func TestProviderBatchCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("kills vibe batch four times")
	}
	const n, k = 200, 16
	for _, moment := range []string{llmtest.EventUpload, llmtest.EventBatch, llmtest.EventPoll, llmtest.EventResults} {
		t.Run(moment, func(t *testing.T) {
			t.Parallel() // each moment has its own model, data directory and child processes
			dir, led := batchSetup(t, n, nil, 0)
			var (
				mu     sync.Mutex
				victim *exec.Cmd
				killed time.Time
			)
			model := llmtest.NewServer(t, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{OnEvent: func(e llmtest.Event) {
				mu.Lock()
				defer mu.Unlock()
				if e.Kind != moment || !killed.IsZero() || victim == nil {
					return
				}
				killed = time.Now()
				victim.Process.Signal(syscall.SIGKILL)
				time.Sleep(200 * time.Millisecond) // dead before this is answered
			}})
			out := filepath.Join(dir, "out.jsonl")
			prices := filepath.Join(dir, "prices.json")
			os.WriteFile(prices, []byte(`{"models": {"test-model": {"input": 1, "output": 4, "batchDiscount": 0.5}}}`), 0o644)
			args := []string{"batch", filepath.Join(dir, "moderate.json"), "--in", filepath.Join(dir, "items.jsonl"), "--out", out,
				"--batch-size", fmt.Sprint(k), "--data", filepath.Join(dir, "data"), "--actions-file", filepath.Join(dir, "actions.json"),
				"--llm", "openai:test-model", "--llm-base-url", model.URL, "--provider-batch", "--provider-batch-poll", "50ms", "--prices", prices}
			mu.Lock()
			first, firstOut := child(t, args...)
			victim = first
			mu.Unlock()
			first.Wait()
			mu.Lock()
			if killed.IsZero() {
				mu.Unlock()
				t.Fatalf("vibe batch ended before the %s moment:\n%s", moment, firstOut)
			}
			mu.Unlock()
			began := time.Now()
			again, againOut := child(t, args...)
			if err := again.Wait(); err != nil {
				t.Fatalf("rerun: %v\n%s\nfirst run:\n%s", err, againOut, firstOut)
			}
			t.Logf("killed at %s; the rerun took %s: %s", moment, time.Since(began).Round(time.Millisecond), lastLine(againOut.String()))
			checkResults(t, readResults(t, out), n, nil)
			// 13 requests of 100 prompt and 30 completion tokens: 1,300 ×
			// 1 + 390 × 4 = 2,860 per million, half of it.
			if s := againOut.String(); !strings.Contains(s, "1300 prompt + 390 completion tokens, all through the provider's Batch API; cost 0.001430 USD, the batch discount taken off") {
				t.Errorf("the summary does not say the tokens went through the Batch API at half price:\n%s", s)
			}
			b := model.Batches
			if b.Uploads() != 1 || b.Created() != 1 {
				t.Errorf("%d request files uploaded and %d provider batches created, want 1 each", b.Uploads(), b.Created())
			}
			sub := b.Submitted()
			if len(sub) != (n+k-1)/k {
				t.Errorf("%d requests submitted, want %d", len(sub), (n+k-1)/k)
			}
			for id, times := range sub {
				if times != 1 {
					t.Errorf("request %s submitted %d times", id, times)
				}
			}
			if model.Requests() != 0 {
				t.Errorf("%d direct model requests, want none", model.Requests())
			}
			if calls, keys, repeated := led.counts(); keys != n || len(repeated) > 0 {
				t.Errorf("the record action's effect was applied for %d items (%d calls, repeated %v), want %d once each", keys, calls, repeated, n)
			}
		})
	}
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// TestDryRun: vibe batch --dry-run says how many requests a batch makes
// and estimates their prompt tokens within 10% of what the model then
// counts (a test model that counts a request's bytes / 4), and prices
// them with the batch discount; it starts no engine and calls no model.
func TestDryRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a batch")
	}
	const n = 300
	dir, _ := batchSetup(t, n, nil, 0)
	model := llmtest.NewServer(t, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{Tokens: true})
	prices := filepath.Join(dir, "prices.json")
	os.WriteFile(prices, []byte(`{"models": {"test-model": {"input": 0.15, "output": 0.6, "batchDiscount": 0.5}}}`), 0o644)
	data := filepath.Join(dir, "data")
	args := []string{"batch", filepath.Join(dir, "moderate.json"), "--in", filepath.Join(dir, "items.jsonl"), "--out", filepath.Join(dir, "out.jsonl"),
		"--batch-size", "32", "--data", data, "--actions-file", filepath.Join(dir, "actions.json"),
		"--llm", "openai:test-model", "--llm-base-url", model.URL, "--prices", prices}
	status, stdout, stderr := run(t, "", append(args, "--dry-run", "--provider-batch")...)
	if status != 0 {
		t.Fatalf("dry run: %d\n%s%s", status, stdout, stderr)
	}
	t.Logf("vibe batch --dry-run:\n%s", stdout)
	m := regexp.MustCompile(`(?m)^total\s+(\d+)\s+(\d+)`).FindStringSubmatch(stdout)
	if m == nil || !strings.Contains(stdout, "300 items in 10 groups") || !strings.Contains(stdout, "with the batch discount") {
		t.Fatalf("the dry run says:\n%s", stdout)
	}
	// The prompt budget of one call at K, as vibe compile --budget says it.
	if !regexp.MustCompile(`(?m)^LLM_\S+\s+32\s+\d+`).MatchString(stdout) || !strings.Contains(stdout, "MAX K") {
		t.Errorf("no budget of a call of 32 items:\n%s", stdout)
	}
	// A model whose answers are too short for 32 items is refused here.
	models := filepath.Join(dir, "models.json")
	os.WriteFile(models, []byte(`{"models": {"test-model": {"context": 100000, "output": 200}}}`), 0o644)
	if status, _, stderr := run(t, "", append(args, "--dry-run", "--models", models)...); status != 1 || !strings.Contains(stderr, "cannot fit test-model") || !strings.Contains(stderr, "lower K to at most") {
		t.Errorf("a dry run against a model of 200 output tokens: status %d, %s", status, stderr)
	}
	if model.Requests() != 0 {
		t.Errorf("the dry run sent %d requests", model.Requests())
	}
	if _, err := os.Stat(data); err == nil {
		t.Errorf("the dry run made the data directory %s", data)
	}
	requests, _ := strconv.Atoi(m[1])
	estimate, _ := strconv.Atoi(m[2])
	if status, _, stderr := run(t, "", args...); status != 0 {
		t.Fatalf("the batch: %d\n%s", status, stderr)
	}
	got := model.PromptTokens()
	t.Logf("estimated %d requests and %d prompt tokens; the model got %d requests and counted %d", requests, estimate, model.Requests(), got)
	if requests != model.Requests() {
		t.Errorf("estimated %d requests, the batch made %d", requests, model.Requests())
	}
	if d := float64(estimate-got) / float64(got); d > 0.1 || d < -0.1 {
		t.Errorf("estimated %d prompt tokens, the model counted %d: off by %.0f%%", estimate, got, 100*d)
	}
}

// TestProviderBatchAPI: POST /v1/batches with "providerBatch": true runs
// the batch through the provider's Batch API — GET shows its provider
// batches, the results come with no direct call — and POST
// /v1/batches/{id}/cancel cancels a batch and its provider batch.
func TestProviderBatchAPI(t *testing.T) {
	t.Parallel() // vibe runs in child processes of its own, on a data directory and model of its own
	if testing.Short() {
		t.Skip("starts vibe serve")
	}
	const n = 40
	dir, led := batchSetup(t, n, nil, 0)
	model := llmtest.NewServer(t, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{})
	addr := freeAddr(t)
	child(t, "serve", "--data", filepath.Join(dir, "data"), "--addr", addr, "--actions-file", filepath.Join(dir, "actions.json"),
		"--llm", "openai:test-model", "--llm-base-url", model.URL)
	base := "http://" + addr
	c := &api.Client{BaseURL: base}
	waitUntil(t, "vibe serve", time.Minute, func() bool { _, err := c.List(context.Background(), process.ListOptions{Limit: 1}); return err == nil })
	items, _ := os.ReadFile(filepath.Join(dir, "items.jsonl"))
	lines := strings.Join(strings.Split(strings.TrimSpace(string(items)), "\n"), ",")
	start := func(id string) {
		t.Helper()
		body := fmt.Sprintf(`{"process": %s, "id": %q, "size": 8, "providerBatch": true, "providerBatchPoll": "50ms", "items": [%s]}`, moderateProcess, id, lines)
		if code, got := httpJSON(t, "POST", base+"/v1/batches", body); code != http.StatusAccepted {
			t.Fatalf("POST /v1/batches: %d %s", code, jsonv.Marshal(got))
		}
	}
	if code, got := httpJSON(t, "POST", base+"/v1/batches", `{"process": "aug:x", "providerBatch": "yes", "items": ["x"]}`); code != http.StatusBadRequest || got.Lookup("path").Str() != "/providerBatch" {
		t.Errorf("providerBatch \"yes\": %d %s", code, jsonv.Marshal(got))
	}

	// Held at the provider, then cancelled.
	model.Batches.Hold()
	created := model.Batches.Await(llmtest.EventBatch)
	start("held")
	var ev llmtest.Event
	select {
	case ev = <-created:
	case <-time.After(time.Minute):
		t.Fatal("no provider batch was created")
	}
	var st batch.Status
	// status reads a batch; false until the server has started it.
	status := func(id string) bool {
		st = batch.Status{}
		resp, err := http.Get(base + "/v1/batches/" + id)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&st) == nil
	}
	waitUntil(t, "the provider batch in the status", 30*time.Second, func() bool {
		return status("held") && st.Provider != nil && len(st.Provider.Flights) == 1 && st.Provider.Flights[0].ID == ev.ID
	})
	if code, got := httpJSON(t, "POST", base+"/v1/batches/held/cancel", ""); code != http.StatusOK {
		t.Fatalf("cancel: %d %s", code, jsonv.Marshal(got))
	}
	waitUntil(t, "the provider batch cancelled", 30*time.Second, func() bool { return model.Batches.Cancels() == 1 })
	model.Batches.Release()
	waitUntil(t, "the batch cancelled", 30*time.Second, func() bool {
		return status("held") && st.Status == "canceled" && st.Provider != nil && st.Provider.Cancelled
	})

	// Run to the end.
	start("run")
	waitUntil(t, "the batch to complete", time.Minute, func() bool { return status("run") && st.Status == batch.StatusCompleted })
	if st.Done != n || model.Requests() != 0 || st.Provider == nil || st.Provider.Submitted != 1 || st.Provider.Requests != n/8 {
		t.Errorf("status %+v, provider %+v; %d direct requests", st, st.Provider, model.Requests())
	}
	if b := st.Usage.Batched; b == nil || b.PromptTokens != st.Usage.PromptTokens {
		t.Errorf("usage %+v: all of it batched", st.Usage)
	}
	if _, keys, _ := led.counts(); keys != n {
		t.Errorf("the action's effect was applied for %d items, want %d", keys, n)
	}
}

// TestProviderBatchServeKill: vibe serve — its engine and its worker —
// is SIGKILLed while a provider batch is in progress under a vibe batch
// that feeds it, and started again: the same vibe batch, never
// interrupted, finishes with one provider batch, each request submitted
// once, each effect once, every line exact.
func TestProviderBatchServeKill(t *testing.T) {
	t.Parallel() // vibe runs in child processes of its own, on a data directory and model of its own
	if testing.Short() {
		t.Skip("kills and restarts vibe serve")
	}
	const n = 200
	dir, led := batchSetup(t, n, nil, 0)
	var (
		mu     sync.Mutex
		serve  *exec.Cmd
		killed = make(chan struct{})
	)
	model := llmtest.NewServer(t, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{OnEvent: func(e llmtest.Event) {
		mu.Lock()
		defer mu.Unlock()
		if e.Kind != llmtest.EventPoll || serve == nil {
			return
		}
		serve.Process.Signal(syscall.SIGKILL)
		serve = nil
		close(killed)
		time.Sleep(200 * time.Millisecond)
	}})
	data, addr := filepath.Join(dir, "data"), freeAddr(t)
	serveArgs := []string{"serve", "--data", data, "--addr", addr, "--actions-file", filepath.Join(dir, "actions.json"),
		"--llm", "openai:test-model", "--llm-base-url", model.URL}
	c := &api.Client{BaseURL: "http://" + addr}
	ready := func() bool { _, err := c.List(context.Background(), process.ListOptions{Limit: 1}); return err == nil }
	mu.Lock()
	serve, _ = child(t, serveArgs...)
	first := serve
	mu.Unlock()
	waitUntil(t, "vibe serve", time.Minute, ready)
	out := filepath.Join(dir, "out.jsonl")
	feeder, feederOut := child(t, "batch", filepath.Join(dir, "moderate.json"), "--in", filepath.Join(dir, "items.jsonl"), "--out", out,
		"--batch-size", "16", "--data", data, "--provider-batch", "--provider-batch-poll", "50ms")
	select {
	case <-killed:
	case <-time.After(2 * time.Minute):
		t.Fatalf("no provider batch was polled:\n%s", feederOut)
	}
	first.Wait()
	_, serveOut := child(t, serveArgs...)
	if err := feeder.Wait(); err != nil {
		t.Fatalf("vibe batch: %v\n%s\nserve:\n%s", err, feederOut, serveOut)
	}
	t.Logf("vibe batch: %s", lastLine(feederOut.String()))
	checkResults(t, readResults(t, out), n, nil)
	b := model.Batches
	if b.Uploads() != 1 || b.Created() != 1 || model.Requests() != 0 {
		t.Errorf("%d uploads, %d provider batches, %d direct requests; want 1, 1, 0", b.Uploads(), b.Created(), model.Requests())
	}
	for id, times := range b.Submitted() {
		if times != 1 {
			t.Errorf("request %s submitted %d times", id, times)
		}
	}
	if _, keys, repeated := led.counts(); keys != n || len(repeated) > 0 {
		t.Errorf("the effect was applied for %d items (repeated %v), want %d once each", keys, repeated, n)
	}
}

// TestProviderBatchProgress: while a provider batch runs, vibe batch says
// where it is — its id, its status, the requests answered — since the
// progress does not move for as long as the provider takes.
func TestProviderBatchProgress(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a batch")
	}
	dir, _ := batchSetup(t, 32, nil, 0)
	model := llmtest.NewServer(t, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{})
	model.Batches.Hold()
	created := model.Batches.Await(llmtest.EventBatch)
	cmd, out := child(t, "batch", filepath.Join(dir, "moderate.json"), "--in", filepath.Join(dir, "items.jsonl"), "--out", filepath.Join(dir, "out.jsonl"),
		"--data", filepath.Join(dir, "data"), "--actions-file", filepath.Join(dir, "actions.json"),
		"--llm", "openai:test-model", "--llm-base-url", model.URL, "--provider-batch", "--provider-batch-poll", "50ms")
	var ev llmtest.Event
	select {
	case ev = <-created:
	case <-time.After(time.Minute):
		t.Fatalf("no provider batch was created:\n%s", out)
	}
	want := "vibe: provider batches: " + ev.ID + " validating, 0 of 1 requests answered"
	waitUntil(t, "vibe batch to say where the provider batch is", 30*time.Second, func() bool { return strings.Contains(out.String(), want) })
	model.Batches.Release()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("vibe batch: %v\n%s", err, out)
	}
}

// TestProviderBatchRecorded: with $VIBE_LLM_RECORD, the answers vibe
// batch --provider-batch reads from its provider batch are recorded, and
// the same batch replayed from that recording (--llm replay:FILE, direct
// calls) gives every item the same output without a model.
func TestProviderBatchRecorded(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a batch twice")
	}
	const n = 64
	dir, _ := batchSetup(t, n, nil, 0)
	model := llmtest.NewServer(t, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{})
	rec := filepath.Join(dir, "answers.jsonl")
	args := func(data, out string, llm ...string) []string {
		return append([]string{"batch", filepath.Join(dir, "moderate.json"), "--in", filepath.Join(dir, "items.jsonl"), "--out", filepath.Join(dir, out),
			"--batch-size", "16", "--data", filepath.Join(dir, data), "--actions-file", filepath.Join(dir, "actions.json")}, llm...)
	}
	t.Setenv("VIBE_LLM_RECORD", rec)
	status, _, stderr := run(t, "", args("data1", "out1.jsonl", "--llm", "openai:test-model", "--llm-base-url", model.URL, "--provider-batch", "--provider-batch-poll", "50ms")...)
	if status != 0 {
		t.Fatalf("vibe batch --provider-batch: %d\n%s", status, stderr)
	}
	if model.Requests() != 0 || model.Batches.Created() != 1 {
		t.Fatalf("%d direct requests and %d provider batches, want 0 and 1", model.Requests(), model.Batches.Created())
	}
	os.Unsetenv("VIBE_LLM_RECORD")
	status, _, stderr = run(t, "", args("data2", "out2.jsonl", "--llm", "replay:"+rec)...)
	if status != 0 {
		t.Fatalf("vibe batch replaying %s: %d\n%s", rec, status, stderr)
	}
	first, again := readResults(t, filepath.Join(dir, "out1.jsonl")), readResults(t, filepath.Join(dir, "out2.jsonl"))
	checkResults(t, first, n, nil)
	checkResults(t, again, n, nil)
	for i := range first {
		if !bytes.Equal(first[i].Output, again[i].Output) {
			t.Errorf("line %d: %s through the provider batch, %s replayed", i+1, first[i].Output, again[i].Output)
		}
	}
	if model.Requests() != 0 || model.Batches.Created() != 1 {
		t.Errorf("the replay reached the model: %d direct requests, %d provider batches", model.Requests(), model.Batches.Created())
	}
}

// TestInboxBatchItems: the console's inbox of a real vibe serve lists the
// items of a batch that wait for a person — they are not listed among
// processes — and GET /v1/batches/{id} counts them; answered through the
// API, the batch completes.
func TestInboxBatchItems(t *testing.T) {
	if testing.Short() {
		t.Skip("starts vibe serve")
	}
	dir := t.TempDir()
	review, err := os.ReadFile(filepath.Join("..", "..", "batch", "testdata", "review.json"))
	if err != nil {
		t.Fatal(err)
	}
	// The review's record action, whose output schema wants "recorded".
	record := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"recorded": 1}`)
	}))
	t.Cleanup(record.Close)
	os.WriteFile(filepath.Join(dir, "actions.json"), []byte(fmt.Sprintf(`{"record": %q}`, record.URL)), 0o644)
	model := llmtest.NewServer(t, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{})
	base, data := startServe(t, "--actions-file", filepath.Join(dir, "actions.json"), "--llm", "openai:test-model", "--llm-base-url", model.URL)
	c := &api.Client{BaseURL: base}
	if code, got := httpJSON(t, "POST", base+"/v1/batches", fmt.Sprintf(`{"process": %s, "id": "rev", "size": 4, "items": ["comment 1", "comment 2", "comment 3"]}`, review)); code != http.StatusAccepted {
		t.Fatalf("POST /v1/batches: %d %s", code, jsonv.Marshal(got))
	}
	status := func() batch.Status {
		var st batch.Status
		code, got := httpJSON(t, "GET", base+"/v1/batches/rev", "")
		if code == http.StatusOK {
			json.Unmarshal(jsonv.Marshal(got), &st)
		}
		return st
	}
	waitUntil(t, "three items waiting", time.Minute, func() bool { return status().Waiting == 3 })
	resp, err := http.Get(base + "/inbox")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for line := 1; line <= 3; line++ {
		if id := batch.ItemID("rev", line); !strings.Contains(string(page), `action="/processes/`+id+`/answer"`) {
			t.Errorf("the inbox has no form for %s", id)
		}
	}
	if code, got := httpJSON(t, "GET", base+"/v1/batches/rev/waiting", ""); code != http.StatusOK || string(jsonv.Marshal(got)) != `{"items":["rev-1","rev-2","rev-3"]}` {
		t.Errorf("GET /v1/batches/rev/waiting: %d %s", code, jsonv.Marshal(got))
	}
	if code, _ := httpJSON(t, "GET", base+"/v1/batches/none/waiting", ""); code != http.StatusNotFound {
		t.Errorf("GET /v1/batches/none/waiting: %d, want 404", code)
	}
	// vibe batches ID names them, through the serve's engine.
	if code, _, stderr := run(t, "", "batches", "rev", "--data", data); code != 0 || !strings.Contains(stderr, "vibe: batch rev: 3 item(s) wait for a person: rev-1, rev-2, rev-3;") {
		t.Errorf("vibe batches rev: %d\n%s", code, stderr)
	}
	if list, err := c.List(context.Background(), process.ListOptions{Status: process.Waiting}); err != nil || len(list.Processes) != 0 {
		t.Errorf("waiting processes listed: %+v %v", list, err)
	}
	for line := 1; line <= 3; line++ {
		if code, got := httpJSON(t, "POST", base+"/v1/processes/"+batch.ItemID("rev", line)+"/answer", `{"confirm":{"approve":"yes"}}`); code != http.StatusOK {
			t.Fatalf("answer item %d: %d %s", line, code, jsonv.Marshal(got))
		}
	}
	deadline := time.Now().Add(time.Minute)
	for st := status(); st.Status != batch.StatusCompleted || st.Done != 3; st = status() {
		if time.Now().After(deadline) {
			_, item := httpJSON(t, "GET", base+"/v1/processes/"+batch.ItemID("rev", 1), "")
			t.Fatalf("the batch did not complete: %+v\nitem 1: %s", st, jsonv.Marshal(item.Lookup("error")))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
