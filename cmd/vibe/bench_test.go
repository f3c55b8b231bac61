package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/augceo/vibe/api"
	"github.com/augceo/vibe/internal/llmtest"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/schema"
)

// rssMB reads a process's resident memory from /proc.
func rssMB(b *testing.B, pid int) float64 { return procMB(b, pid, "VmRSS") }

// procMB reads one of a process's memory figures (VmRSS, RssAnon,
// RssFile) from /proc, in MB; 0 for a process that has just exited (a
// zombie's status has no memory lines; a reaped one has no status).
func procMB(b *testing.B, pid int, field string) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		if _, serr := os.Stat("/proc/self/status"); serr != nil {
			b.Skip("no /proc to read memory from")
		}
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return float64(kb) / 1024
		}
	}
	if strings.Contains(string(data), "State:\tZ") {
		return 0
	}
	b.Fatal("no " + field)
	return 0
}

// BenchmarkServeMemory measures the resident memory of a `vibe serve`
// child process at rest, then after it ran b.N one-chunk processes (16 at
// a time) against a model that answers at once.
//
//	go test ./cmd/vibe -run XXX -bench BenchmarkServeMemory -benchtime 500x
func BenchmarkServeMemory(b *testing.B) {
	model := llmtest.New(b, llmtest.Fixed(`{"draft":{"text":"hello"}}`))
	addr := freeAddr(b)
	cmd, out := child(b, "serve", "--data", b.TempDir(), "--addr", addr, "--llm", "openai:m", "--llm-base-url", model.URL)
	c := &api.Client{BaseURL: "http://" + addr}
	ctx := context.Background()
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := c.List(ctx, process.ListOptions{Limit: 1}); err == nil {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("vibe serve did not start:\n%s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second) // let start-up settle
	atRest := rssMB(b, cmd.Process.Pid)
	doc := mustJSON(b, `{"title":"bench","type":"object","properties":{"llmContext1":{"properties":{"draft":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}}}}`)
	b.ResetTimer()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := 0; i < b.N; i++ {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			st, err := c.Start(ctx, process.StartOptions{Document: doc})
			if err != nil {
				b.Error(err)
				return
			}
			for {
				info, err := c.Get(ctx, st.ID)
				if err != nil {
					b.Error(err)
					return
				}
				if info.Status == process.Completed {
					return
				}
				if info.Status == process.Failed {
					b.Errorf("%s failed: %s", st.ID, *info.Error)
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(atRest, "rss-at-rest-MB")
	b.ReportMetric(rssMB(b, cmd.Process.Pid), "rss-after-MB")
}

var (
	batchItems = flag.Int("batch.items", 10000, "items of BenchmarkBatchMemory's input")
	batchServe = flag.Bool("batch.serve", false, "BenchmarkBatchMemory: run vibe batch against a vibe serve, which does the work")
)

// BenchmarkBatchMemory runs `vibe batch` as a child process over
// -batch.items comments at K=32, C=8, against a model that answers at
// once, and reports its peak resident memory (and of that, the anonymous
// part: not the binary's mapped pages), sampled every quarter second, and
// the items per second. By default vibe batch runs the embedded engine
// and its worker itself; with -batch.serve a vibe serve on the same data
// directory does the work, and vibe batch only streams (the serve's peak
// is reported too).
//
//	go test ./cmd/vibe -run XXX -bench BenchmarkBatchMemory -benchtime 1x -timeout 0 -batch.items 100000 [-batch.serve]
func BenchmarkBatchMemory(b *testing.B) {
	dir := b.TempDir()
	led := &tally{effects: map[string]int{}}
	actions := httptest.NewServer(led)
	b.Cleanup(actions.Close)
	model := llmtest.NewServer(b, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{})
	os.WriteFile(filepath.Join(dir, "moderate.json"), []byte(moderateProcess), 0o644)
	os.WriteFile(filepath.Join(dir, "actions.json"), []byte(fmt.Sprintf(`{"record": %q}`, actions.URL)), 0o644)
	f, err := os.Create(filepath.Join(dir, "items.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for i := 1; i <= *batchItems; i++ {
		fmt.Fprintf(w, "%q\n", fmt.Sprintf("comment %d", i))
	}
	w.Flush()
	f.Close()
	peak, anon, servePeak, run := 0.0, 0.0, 0.0, 0
	start := time.Now()
	for b.Loop() {
		run++
		data := filepath.Join(dir, fmt.Sprintf("data-%d", run))
		workerArgs := []string{"--actions-file", filepath.Join(dir, "actions.json"), "--llm", "openai:m", "--llm-base-url", model.URL}
		var serve *exec.Cmd
		if *batchServe {
			addr := freeAddr(b)
			serve, _ = child(b, append([]string{"serve", "--data", data, "--addr", addr}, workerArgs...)...)
			c := &api.Client{BaseURL: "http://" + addr}
			for _, err := c.List(context.Background(), process.ListOptions{Limit: 1}); err != nil; _, err = c.List(context.Background(), process.ListOptions{Limit: 1}) {
				time.Sleep(50 * time.Millisecond)
			}
			workerArgs = nil
		}
		cmd, out := child(b, append([]string{"batch", filepath.Join(dir, "moderate.json"), "--in", filepath.Join(dir, "items.jsonl"),
			"--out", filepath.Join(dir, fmt.Sprintf("out-%d.jsonl", run)), "--id", fmt.Sprintf("mem-%d", run),
			"--batch-size", "32", "--concurrency", "8", "--data", data}, workerArgs...)...)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		tick := time.NewTicker(250 * time.Millisecond)
	wait:
		for {
			select {
			case err := <-done:
				if err != nil {
					b.Fatalf("vibe batch: %v\n%s", err, out)
				}
				break wait
			case <-tick.C:
				peak = max(peak, rssMB(b, cmd.Process.Pid))
				anon = max(anon, procMB(b, cmd.Process.Pid, "RssAnon"))
				if serve != nil {
					servePeak = max(servePeak, rssMB(b, serve.Process.Pid))
				}
			}
		}
		tick.Stop()
		if os.Getenv("VIBE_BENCH_SHOW") != "" {
			b.Logf("%s", out)
		}
	}
	b.ReportMetric(peak, "peak-RSS-MB")
	b.ReportMetric(anon, "peak-anon-MB")
	if *batchServe {
		b.ReportMetric(servePeak, "serve-peak-RSS-MB")
	}
	b.ReportMetric(float64(*batchItems*run)/time.Since(start).Seconds(), "items/s")
}

var (
	lgItems  = flag.Int("lg.items", 1000, "comments of BenchmarkLangGraph")
	lgDelay  = flag.Duration("lg.delay", 200*time.Millisecond, "BenchmarkLangGraph: the test model's time per request")
	lgToken  = flag.Duration("lg.token", 2*time.Millisecond, "BenchmarkLangGraph: the test model's time per completion token")
	lgServes = flag.Int("lg.serves", 16, "BenchmarkLangGraph: the requests the test model serves at once (0: no limit, and LangGraph.js sends them all at once)")
)

// BenchmarkLangGraph runs the same -lg.items comments through LangGraph.js
// (map-reduce: a Send per comment, one model call each, then the record
// action over HTTP; testdata/langgraph/moderate.mjs) and through `vibe
// batch` with its default flags (K and the calls at once its own; its own
// embedded engine), each against a test model of its own with the same
// behaviour — at most -lg.serves requests at once (0: any number),
// -lg.delay plus -lg.token per completion token each — and reports both
// wall times, their ratio, and the requests and prompt tokens of each. LangGraph.js's wall is the graph's run; vibe batch's is the
// command's, the engine's start included. It needs Node.js and the
// harness's packages:
//
//	npm install --prefix cmd/vibe/testdata/langgraph
//	go test ./cmd/vibe -run XXX -bench BenchmarkLangGraph -benchtime 1x -timeout 0 [-lg.items 100]
func BenchmarkLangGraph(b *testing.B) {
	harness, _ := filepath.Abs("testdata/langgraph")
	if _, err := exec.LookPath("node"); err != nil {
		b.Skip("no node on PATH: LangGraph.js runs on Node.js")
	}
	if _, err := os.Stat(filepath.Join(harness, "node_modules", "@langchain", "langgraph")); err != nil {
		b.Skip("LangGraph.js is not installed: npm install --prefix cmd/vibe/testdata/langgraph")
	}
	dir := b.TempDir()
	items := filepath.Join(dir, "items.jsonl")
	os.WriteFile(items, []byte(llmtest.Comments(*lgItems)), 0o644)
	os.WriteFile(filepath.Join(dir, "moderate.json"), []byte(moderateProcess), 0o644)
	opts := llmtest.Options{Tokens: true, Delay: *lgDelay, PerToken: *lgToken, MaxConcurrent: *lgServes}
	var lgWall, vibeWall time.Duration
	var lgModel, vibeModel *llmtest.Server
	for b.Loop() {
		// LangGraph.js.
		lgModel = llmtest.NewServer(b, llmtest.Multiplexed(llmtest.Verdict), opts)
		led := &tally{effects: map[string]int{}}
		actions := httptest.NewServer(led)
		out, err := exec.Command("node", filepath.Join(harness, "moderate.mjs"), lgModel.URL+"/v1", actions.URL, items, strconv.Itoa(cmp.Or(*lgServes, *lgItems))).CombinedOutput()
		actions.Close()
		if err != nil {
			b.Fatalf("langgraph: %v\n%s", err, out)
		}
		var res struct {
			MS      float64 `json:"ms"`
			Results int     `json:"results"`
		}
		if err := json.Unmarshal(bytes.TrimSpace(out[bytes.LastIndexByte(bytes.TrimSpace(out), '\n')+1:]), &res); err != nil || res.Results != *lgItems {
			b.Fatalf("langgraph: %v\n%s", err, out)
		}
		if _, keys, _ := led.counts(); keys != *lgItems {
			b.Fatalf("langgraph recorded %d decisions, want %d", keys, *lgItems)
		}
		lgWall = time.Duration(res.MS * float64(time.Millisecond))

		// vibe batch.
		vibeModel = llmtest.NewServer(b, llmtest.Multiplexed(llmtest.Verdict), opts)
		led = &tally{effects: map[string]int{}}
		actions = httptest.NewServer(led)
		os.WriteFile(filepath.Join(dir, "actions.json"), []byte(fmt.Sprintf(`{"record": %q}`, actions.URL)), 0o644)
		data := filepath.Join(dir, fmt.Sprintf("data-%d", time.Now().UnixNano()))
		start := time.Now()
		cmd, cout := child(b, "batch", filepath.Join(dir, "moderate.json"), "--in", items, "--out", filepath.Join(dir, "out.jsonl"),
			"--id", fmt.Sprintf("lg-%d", time.Now().UnixNano()), "--data", data,
			"--actions-file", filepath.Join(dir, "actions.json"), "--llm", "openai:test-model", "--llm-base-url", vibeModel.URL)
		if err := cmd.Wait(); err != nil {
			b.Fatalf("vibe batch: %v\n%s", err, cout)
		}
		vibeWall = time.Since(start)
		actions.Close()
		if os.Getenv("VIBE_BENCH_SHOW") != "" {
			b.Logf("vibe batch:\n%s", cout)
		}
		if _, keys, _ := led.counts(); keys != *lgItems {
			b.Fatalf("vibe batch recorded %d decisions, want %d", keys, *lgItems)
		}
	}
	b.ReportMetric(lgWall.Seconds(), "langgraph-s")
	b.ReportMetric(vibeWall.Seconds(), "vibe-s")
	b.ReportMetric(vibeWall.Seconds()/lgWall.Seconds(), "wall-ratio")
	b.ReportMetric(float64(lgModel.Requests()), "langgraph-requests")
	b.ReportMetric(float64(vibeModel.Requests()), "vibe-requests")
	b.ReportMetric(float64(vibeModel.PromptTokens())/float64(lgModel.PromptTokens()), "prompt-token-ratio")
	b.ReportMetric(float64(vibeModel.Peak()), "vibe-peak-calls")
}

// longchainAnswers are the test model's answers to the longchain
// workload: each step's {"result", "handoff"}, the same for both.
func longchainAnswers(name, body string) string {
	const step = `{"result":"Decided for this step: the plan keeps to one launch channel, a two-week beta with fifty users from the waiting list, then a public release with a price of five dollars a month.","handoff":"The next step needs the beta's dates, the fifty users' segment and the price; open: the support load."}`
	if !strings.HasPrefix(name, "LLM_") {
		return step
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, s := range schemaProps(body) {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%q:%s", s, step)
	}
	b.WriteByte('}')
	return b.String()
}

// schemaProps are the properties of a chat request's response schema, in
// order.
func schemaProps(body string) []string {
	v, err := jsonv.Parse([]byte(body))
	if err != nil {
		return nil
	}
	return schema.Properties(v.Lookup("response_format").Lookup("json_schema").Lookup("schema")).Names()
}

// BenchmarkLongchain runs a ten-step planning chain — each step an
// instruction with the same two described fields, result and handoff
// (compile/testdata/longchain) — through LangGraph.js (a node per step,
// each asking with the message history; testdata/langgraph/longchain.mjs)
// and through `vibe run` (one LLM chunk: one request), each against a
// test model of its own that answers the same, and reports the prompt
// characters each sent (the request bodies' bytes), their ratio, and the
// requests. It needs Node.js and the harness's packages:
//
//	npm install --prefix cmd/vibe/testdata/langgraph
//	go test ./cmd/vibe -run XXX -bench BenchmarkLongchain -benchtime 1x -count 3
func BenchmarkLongchain(b *testing.B) {
	harness, _ := filepath.Abs("testdata/langgraph")
	instructions, _ := filepath.Abs("../../compile/testdata/longchain/instructions")
	if _, err := exec.LookPath("node"); err != nil {
		b.Skip("no node on PATH: LangGraph.js runs on Node.js")
	}
	if _, err := os.Stat(filepath.Join(harness, "node_modules", "@langchain", "langgraph")); err != nil {
		b.Skip("LangGraph.js is not installed: npm install --prefix cmd/vibe/testdata/langgraph")
	}
	const prompt = "Plan the launch of a note-taking app"
	pipeline := fmt.Sprintf("%q | FrameProblem | GatherFacts | ListOptions | WeighOptions | ChooseApproach | PlanSteps | EstimateCost | IdentifyRisks | MitigateRisks | WriteSummary", prompt)
	var lgModel, vibeModel *llmtest.Server
	for b.Loop() {
		lgModel = llmtest.NewServer(b, longchainAnswers, llmtest.Options{})
		out, err := exec.Command("node", filepath.Join(harness, "longchain.mjs"), lgModel.URL+"/v1", instructions, prompt).CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte(`"steps":10`)) {
			b.Fatalf("langgraph: %v\n%s", err, out)
		}
		vibeModel = llmtest.NewServer(b, longchainAnswers, llmtest.Options{})
		cmd, cout := child(b, "run", "--pipeline", pipeline, "--registry", filepath.Dir(instructions), "--data", b.TempDir(),
			"--llm", "openai:test-model", "--llm-base-url", vibeModel.URL)
		if err := cmd.Wait(); err != nil {
			b.Fatalf("vibe run: %v\n%s", err, cout)
		}
	}
	chars := func(m *llmtest.Server) (n int) {
		for _, body := range m.Bodies() {
			n += len(body)
		}
		return n
	}
	for _, body := range vibeModel.Bodies() {
		for _, f := range []string{"FrameProblem", "WriteSummary"} {
			d, _ := os.ReadFile(filepath.Join(instructions, f+".json"))
			v, _ := jsonv.Parse(d)
			if desc := v.Lookup("description").Str(); !strings.Contains(body, desc) {
				b.Fatalf("vibe's request lacks %s's description %q", f, desc)
			}
		}
	}
	if os.Getenv("VIBE_BENCH_SHOW") != "" {
		b.Logf("vibe's request:\n%s", vibeModel.Bodies()[0])
	}
	b.ReportMetric(float64(chars(lgModel)), "langgraph-chars")
	b.ReportMetric(float64(chars(vibeModel)), "vibe-chars")
	b.ReportMetric(float64(chars(vibeModel))/float64(chars(lgModel)), "chars-ratio")
	b.ReportMetric(float64(lgModel.Requests()), "langgraph-requests")
	b.ReportMetric(float64(vibeModel.Requests()), "vibe-requests")
}

var (
	sseStreams   = flag.Int("sse.streams", 500, "BenchmarkListStreams: event streams open on the list page")
	sseProcesses = flag.Int("sse.processes", 1000, "BenchmarkListStreams: processes stored")
)

// BenchmarkListStreams opens -sse.streams event streams on the console's
// list page of a vibe serve holding -sse.processes processes (each waiting
// for a person), as that many browser tabs do, and meanwhile times b.N
// calls of GET /v1/processes: it reports their median, 99th percentile
// and slowest, and the streams refused.
//
//	go test ./cmd/vibe -run XXX -bench BenchmarkListStreams -benchtime 200x
func BenchmarkListStreams(b *testing.B) {
	addr := freeAddr(b)
	_, out := child(b, "serve", "--data", b.TempDir(), "--addr", addr)
	c := &api.Client{BaseURL: "http://" + addr}
	ctx := context.Background()
	waitUntil(b, "vibe serve", time.Minute, func() bool { _, err := c.List(ctx, process.ListOptions{Limit: 1}); return err == nil })
	doc := mustJSON(b, `{"type":"object","properties":{"draft":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]},`+
		`"approve_User":{"type":"object","references":["draft"],"properties":{"ok":{"type":"boolean"}},"required":["ok"]}}}`)
	first := mustJSON(b, `{"draft":{"text":"hello"}}`)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for range *sseProcesses {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if _, err := c.Start(ctx, process.StartOptions{Document: doc, First: first}); err != nil {
				b.Error(err)
			}
		})
	}
	wg.Wait()
	tr := &http.Transport{MaxIdleConnsPerHost: *sseStreams + 10}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	var refused, open atomic.Int64
	for range *sseStreams {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(sctx, http.MethodGet, "http://"+addr+"/events/", nil)
			resp, err := hc.Do(req)
			if err != nil {
				if sctx.Err() == nil {
					refused.Add(1)
				}
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				refused.Add(1)
				return
			}
			open.Add(1)
			io.Copy(io.Discard, resp.Body)
		})
	}
	waitUntil(b, "the streams to open", time.Minute, func() bool { return open.Load()+refused.Load() >= int64(*sseStreams) })
	var took []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if _, err := c.List(ctx, process.ListOptions{Limit: 20}); err != nil {
			b.Fatalf("list: %v\n%s", err, out)
		}
		took = append(took, time.Since(t0))
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	wg.Wait()
	slices.Sort(took)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(took[len(took)/2]), "p50-ms")
	b.ReportMetric(ms(took[len(took)*99/100]), "p99-ms")
	b.ReportMetric(ms(took[len(took)-1]), "max-ms")
	b.ReportMetric(float64(refused.Load()), "streams-refused")
}
