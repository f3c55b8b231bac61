//go:build unix

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/augceo/vibe/api"
	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/internal/clustertest"
	"github.com/augceo/vibe/internal/llmtest"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/process"
)

// clusterModel is the one test model of the cluster test's serve and
// workers: it answers a batch's multiplexed calls with verdict,
// schedule-meeting's chunks with meetingAnswers, and the music example's
// Vessels with delegateAnswers.
func clusterModel(t *testing.T) *llmtest.Server {
	batchAnswer := llmtest.Multiplexed(llmtest.Verdict)
	return llmtest.NewServer(t, func(name, body string) string {
		if strings.Contains(body, "comment ") {
			return batchAnswer(name, body)
		}
		if a, ok := meetingAnswers[name]; ok {
			return a
		}
		v, err := jsonv.Parse([]byte(delegateAnswers(name, body)))
		if err != nil {
			t.Error(err)
		}
		return string(jsonv.Marshal(v))
	}, llmtest.Options{Delay: 50 * time.Millisecond})
}

// clusterRegistry is one registry with schedule-meeting's processes and
// the music example's instructions and delegates, as a team's workers
// would all have it.
func clusterRegistry(t *testing.T) string {
	dir := t.TempDir()
	for _, from := range []string{example + "/registry", "../../examples/music/registry"} {
		if err := os.CopyFS(dir, os.DirFS(from)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// mergeActions writes one actions file with the actions of files.
func mergeActions(t *testing.T, files ...string) string {
	all := map[string]json.RawMessage{}
	for _, f := range files {
		var m map[string]json.RawMessage
		b, err := os.ReadFile(f)
		if err == nil {
			err = json.Unmarshal(b, &m)
		}
		if err != nil {
			t.Fatal(err)
		}
		maps.Copy(all, m)
	}
	b, _ := json.Marshal(all)
	out := filepath.Join(t.TempDir(), "actions.json")
	os.WriteFile(out, b, 0o644)
	return out
}

// getJSON reads a JSON answer of the API into v.
func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v\n%s", url, err, b)
	}
}

// TestCluster runs Vibe on a real Temporal cluster — PostgreSQL for
// persistence and visibility, the frontend, history, matching and worker
// services as processes of their own (internal/clustertest) — the way the
// docs/engine.md's "Moving to a Temporal cluster" says: a namespace created by the
// team, not by Vibe; vibe doctor on it, which names each missing search
// attribute with the command that adds it; vibe serve --temporal, which
// adds them, and two vibe worker --temporal processes. On it run the
// schedule-meeting example (a person's answer included), the music
// example's Vessel with its nested delegates (its output exactly the
// embedded engine's), and a batch of 2,000 items with an action per item
// through the API, during which a Vibe worker, the history service and the
// matching service are each SIGKILLed and started again: every item has
// its result once, in order, exact; every action's effect was applied
// once. The lists and filters — vibe ps, vibe batches, the API's list, the
// console's filters, MCP list_processes — read the cluster's visibility
// store.
func TestCluster(t *testing.T) {
	t.Parallel() // a cluster of its own; beside the other long tests that run no vibe in this process
	const n = 2000
	cl := clustertest.Start(t)
	start := time.Now()
	phase := func(what string) {
		t.Logf("%s: %s", what, time.Since(start).Round(100*time.Millisecond))
		start = time.Now()
	}
	// docs/engine.md's first step: the team creates the namespace, as
	// `temporal operator namespace create --namespace vibe-team
	// --retention 72h` does.
	const ns = "vibe-team"
	cl.CreateNamespace(ns, 72*time.Hour)
	tf := []string{"--temporal", cl.HostPort, "--namespace", ns}

	// vibe doctor on the fresh namespace: each search attribute is
	// missing, by name, with the command that adds it; no worker polls.
	status, stdout, stderr := run(t, "", append([]string{"doctor"}, tf...)...)
	if status != 1 || !strings.Contains(stderr, "checks failed") {
		t.Errorf("doctor on a fresh namespace: %d\n%s%s", status, stdout, stderr)
	}
	for _, want := range []string{
		"ok    reachable: Temporal at " + cl.HostPort + " (server " + strings.TrimPrefix(cl.Version, "v") + ")",
		"ok    namespace: vibe-team: finished workflows, results included, are kept 72h0m0s",
		"FAIL  search attribute VibeBatch: missing",
		"fix: temporal operator search-attribute create --namespace vibe-team --name VibeBatch --type Keyword",
		"FAIL  search attribute VibeProcess: missing",
		"fix: temporal operator search-attribute create --namespace vibe-team --name VibeProcess --type Keyword",
		"FAIL  search attribute VibeStatus: missing",
		"fix: temporal operator search-attribute create --namespace vibe-team --name VibeStatus --type Keyword",
		"FAIL  worker: task queue vibe: 0 polling workflows, 0 polling activities",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("doctor on a fresh namespace does not say %q:\n%s", want, stdout)
		}
	}

	// vibe serve and two vibe workers on the cluster, all with the same
	// registry, actions and model.
	reg := clusterRegistry(t)
	model := clusterModel(t)
	dir, led := batchSetup(t, 0, nil, 0)
	meeting, meetingCalls := meetingActions(t)
	work := append([]string{"--actions-file", mergeActions(t, meeting, filepath.Join(dir, "actions.json")),
		"--llm", "openai:test-model", "--llm-base-url", model.URL}, tf...)
	common := append([]string{"--registry", reg}, work...)
	addr := freeAddr(t)
	base := "http://" + addr
	_, serveOut := child(t, append([]string{"serve", "--data", t.TempDir(), "--addr", addr}, common...)...)
	c := &api.Client{BaseURL: base}
	waitUntil(t, "vibe serve on the cluster", time.Minute, func() bool {
		_, err := c.List(context.Background(), process.ListOptions{Limit: 1})
		return err == nil
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("vibe serve:\n%s", serveOut)
		}
	})
	workers := make([]*exec.Cmd, 2)
	startWorker := func(i int) {
		workers[i], _ = child(t, append([]string{"worker"}, common...)...)
	}
	startWorker(0)
	startWorker(1)
	// vibe serve added the search attributes at start; the workers poll.
	waitUntil(t, "vibe doctor to pass", time.Minute, func() bool {
		status, stdout, _ = run(t, "", append([]string{"doctor"}, tf...)...)
		return status == 0
	})
	t.Logf("vibe doctor, with vibe serve and two workers running:\n%s", stdout)
	phase("cluster, namespace, doctor, serve and workers up")

	// The schedule-meeting example, as TestRunEmbedded runs it: vibe run
	// until it waits for a person, vibe answer, both on the cluster.
	status, _, stderr = run(t, "", append([]string{"run", "aug:processes/schedule-meeting", "--prompt", "Meet Bob"}, common...)...)
	i := strings.Index(stderr, "vibe answer ")
	if status != 0 || i < 0 {
		t.Fatalf("run: %d\n%s", status, stderr)
	}
	meetingID := strings.Fields(stderr[i+len("vibe answer "):])[0]
	status, stdout, stderr = run(t, "", append([]string{"answer", meetingID, `{"confirmInvitation":{"decision":"Approve"}}`}, work...)...)
	if status != 0 || !strings.Contains(stderr, "completed") || !strings.Contains(stdout, `"status": "sent"`) {
		t.Fatalf("answer: %d\n%s%s", status, stdout, stderr)
	}
	if got := meetingCalls(); got["/availability"] != 1 || got["/send"] != 1 {
		t.Errorf("the meeting's actions were called %v, want each once", got)
	}
	phase("schedule-meeting")

	// The music example's Vessel: the producer delegates to the composer,
	// who calls the sound engineer, and calls the sound engineer itself.
	// Whichever worker runs a delegate call loads it from its registry.
	status, stdout, stderr = run(t, "", append([]string{"vessel", "../../examples/music/producer.vessel.json", "--context", "../../examples/music/context.json",
		"--prompt", "Make the album's first track: a song, and a rain ambience for its intro."}, common...)...)
	if status != 0 {
		t.Fatalf("vessel: %d\n%s", status, stderr)
	}
	want, err := os.ReadFile("testdata/examples/music.out.json")
	if err != nil {
		t.Fatal(err)
	}
	if got := runIDs.ReplaceAllString(stdout, `"$1": "…"`); got != string(want) {
		t.Errorf("the music Vessel on the cluster:\n%s\nwant, as on the embedded engine:\n%s", got, want)
	}
	phase("music Vessel with delegates")

	// A batch of n comments through the API, its record action's effects
	// counted by the tally; three faults on the way.
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf("comment %d", i+1)
	}
	body, _ := json.Marshal(map[string]any{"process": json.RawMessage(moderateProcess), "items": items, "size": 16, "concurrency": 8, "id": "moderate-cluster"})
	code, started := httpJSON(t, "POST", base+"/v1/batches", string(body))
	batchID := started.Lookup("id").Str()
	if code != 202 || batchID == "" {
		t.Fatalf("POST /v1/batches: %d %s", code, jsonv.Marshal(started))
	}
	batchStatus := func() batch.Status {
		var st batch.Status
		getJSON(t, base+"/v1/batches/"+batchID, &st)
		return st
	}
	effects := func() int { _, keys, _ := led.counts(); return keys }
	faults := []struct {
		at            int
		what          string
		kill, restart func()
	}{
		{n / 5, "a vibe worker", func() { workers[0].Process.Kill(); workers[0].Wait() }, func() { startWorker(0) }},
		{2 * n / 5, "the Temporal history service", func() { cl.Kill("history") }, func() { cl.StartService("history") }},
		{3 * n / 5, "the Temporal matching service", func() { cl.Kill("matching") }, func() { cl.StartService("matching") }},
	}
	for _, f := range faults {
		waitUntil(t, fmt.Sprintf("%d effects", f.at), 5*time.Minute, func() bool { return effects() >= f.at })
		f.kill()
		at := effects()
		// Down for a second, as when a supervisor restarts it.
		time.Sleep(time.Second)
		f.restart()
		restarted, back := time.Now(), effects()
		waitUntil(t, "the batch to go on after killing "+f.what, 3*time.Minute, func() bool { return effects() > back })
		t.Logf("SIGKILLed %s with %d of %d effects applied, restarted it 1 s later: the next effect %s after the restart (%d effects meanwhile)",
			f.what, at, n, time.Since(restarted).Round(10*time.Millisecond), back-at)
	}
	waitUntil(t, "the batch to complete", 10*time.Minute, func() bool { return batchStatus().Status == "completed" })
	phase(fmt.Sprintf("batch of %d with three faults", n))

	// Every line's result once, in order, exact; every effect once.
	resp, err := http.Get(base + "/v1/batches/" + batchID + "/results")
	if err != nil {
		t.Fatal(err)
	}
	var results []batch.Result
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var r batch.Result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("result line %d: %v: %s", len(results)+1, err, sc.Text())
		}
		results = append(results, r)
	}
	resp.Body.Close()
	checkResults(t, results, n, nil)
	calls, keys, _ := led.counts()
	if keys != n {
		t.Errorf("the record action's effect was applied for %d items, want %d", keys, n)
	}
	asked, again := itemsAsked(model), 0
	for i := 1; i <= n; i++ {
		switch asked[fmt.Sprintf("comment %d", i)] {
		case 0:
			t.Errorf("line %d was never sent to the model", i)
		case 1:
		default:
			again++
		}
	}
	st := batchStatus()
	if st.Done != n || st.Failed != 0 {
		t.Errorf("the batch's status: %+v", st)
	}
	t.Logf("batch %s: %d items done; the record action called %d times for %d items (calls repeated after a kill keep their key); %d items sent to the model again (in flight at a kill)",
		batchID, st.Done, calls, keys, again)

	// The lists, through the cluster's visibility store (PostgreSQL):
	// processes leave out the batch's 2,000 items (VibeBatch IS NULL).
	status, stdout, _ = run(t, "", append([]string{"ps"}, tf...)...)
	if lines := strings.Split(strings.TrimSpace(stdout), "\n"); status != 0 || len(lines) != 2 || !strings.Contains(lines[1], meetingID) || !strings.Contains(lines[1], "completed") {
		t.Errorf("vibe ps: %d\n%s", status, stdout)
	}
	status, stdout, _ = run(t, "", append([]string{"batches"}, tf...)...)
	if status != 0 || !strings.Contains(stdout, batchID) || !strings.Contains(stdout, "completed") {
		t.Errorf("vibe batches: %d\n%s", status, stdout)
	}
	status, stdout, _ = run(t, "", append([]string{"batches", batchID}, tf...)...)
	if status != 0 || !strings.Contains(stdout, fmt.Sprint(n)) {
		t.Errorf("vibe batches %s: %d\n%s", batchID, status, stdout)
	}
	page, err := c.List(context.Background(), process.ListOptions{})
	if err != nil || len(page.Processes) != 1 || page.Processes[0].ID != meetingID {
		t.Errorf("GET /v1/processes: %+v %v", page, err)
	}
	// The console's filters: by status (ExecutionStatus, and VibeStatus
	// for waiting) and by the start of the process's name (STARTS_WITH).
	for _, f := range []struct {
		query string
		shown bool
	}{
		{"status=completed&name=schedule", true},
		{"status=completed", true},
		{"status=waiting", false},
		{"name=moderate", false},
	} {
		page := getBody(t, base+"/processes?"+f.query)
		if strings.Contains(page, meetingID) != f.shown || strings.Contains(page, `class="problem"`) {
			t.Errorf("the console's /processes?%s shows %s: %v, want %v", f.query, meetingID, !f.shown, f.shown)
		}
	}
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_processes", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if got := toolResult(t, res); got.Lookup("processes").Len() != 1 || got.Lookup("processes").Array()[0].Lookup("id").Str() != meetingID {
		t.Errorf("MCP list_processes: %s", jsonv.Marshal(got))
	}
	phase("lists")
}
