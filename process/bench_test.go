package process

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/engine"
	"github.com/augceo/vibe/internal/llmtest"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm/openai"
)

// benchProcess alternates LLM and SERVER chunks: a model step, an action, a
// model step that references both, an action — four chunks.
const benchProcess = `{"type": "object", "properties": {
	"llmContext1": {"properties": {"draft": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}},
	"serverContext1": {"properties": {"store_Activity": {"references": ["llmContext1.draft"], "type": "object"}}},
	"llmContext2": {"properties": {"review": {"references": ["llmContext1.draft", "serverContext1.store_Activity"], "type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}}},
	"serverContext2": {"properties": {"publish_Activity": {"references": ["llmContext2.review"], "type": "object"}}}}}`

// zeroLatencyModel answers every chunk at once, over the real OpenAI wire
// protocol.
func zeroLatencyModel(b *testing.B) *llmtest.Server {
	return llmtest.New(b, llmtest.ByName(map[string]string{
		"LLM_llmContext1": `{"draft":{"text":"hello"}}`,
		"LLM_llmContext2": `{"review":{"ok":true}}`,
	}))
}

// benchEngine starts an embedded engine and a full worker.
func benchEngine(b *testing.B) (*Client, jsonv.Value) {
	b.Helper()
	ctx := context.Background()
	eng, err := engine.Start(ctx, engine.Options{SearchAttributes: durable.SearchAttributes, DataDir: b.TempDir(), Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { eng.Close() })
	var acts action.Registry
	echo := func(ctx context.Context, in jsonv.Value) (jsonv.Value, error) { return jsonv.ObjectValue(), nil }
	acts.Register(action.Action{Name: "store_Activity", Run: echo})
	acts.Register(action.Action{Name: "publish_Activity", Run: echo})
	w := worker.New(eng.Client(), durable.TaskQueue, worker.Options{})
	register(b, eng.Client(), w, &durable.Activities{Provider: openai.New(openai.Options{Model: "m", BaseURL: zeroLatencyModel(b).URL, APIKey: "k"}), Actions: &acts, Logger: quietLogger()})
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(w.Stop)
	doc, _ := jsonv.Parse([]byte(benchProcess))
	p, err := compile.Compile(context.Background(), "bench.json", doc, compile.Options{Actions: acts.Names()})
	if err != nil {
		b.Fatal(err)
	}
	return &Client{Temporal: eng.Client(), Actions: acts.Names()}, p.Document
}

func runOne(b *testing.B, c *Client, doc jsonv.Value) {
	ctx := context.Background()
	st, err := c.Start(ctx, StartOptions{Document: doc})
	if err != nil {
		b.Fatal(err)
	}
	var v View
	if err := c.Temporal.GetWorkflow(ctx, st.ID, "").Get(ctx, &v); err != nil {
		b.Fatal(err)
	}
	if v.Status != Completed {
		b.Fatalf("status %s", v.Status)
	}
}

// bareFour is the baseline: a plain Temporal workflow of four activities
// in a row, each doing nothing.
func bareFour(ctx workflow.Context) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	for range 4 {
		if err := workflow.ExecuteActivity(ctx, "bench.noop").Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

func noop(ctx context.Context) error { return nil }

// BenchmarkProcessStep runs a four-chunk process (LLM, SERVER, LLM,
// SERVER) end to end on the embedded engine, one after another, with a
// model that answers at once: what Vibe costs per step above the model. It
// reports the median time per chunk; compare it with the engine package's
// BenchmarkBareActivity, a bare one-activity Temporal workflow.
//
// In the same run, on the same engine, it times bareFour — four bare
// Temporal activities in a row — and reports both medians per step and
// their difference: Vibe's own cost per step.
func BenchmarkProcessStep(b *testing.B) {
	c, doc := benchEngine(b)
	bare := worker.New(c.Temporal, "bench-bare", worker.Options{})
	bare.RegisterWorkflow(bareFour)
	bare.RegisterActivityWithOptions(noop, activity.RegisterOptions{Name: "bench.noop"})
	if err := bare.Start(); err != nil {
		b.Fatal(err)
	}
	defer bare.Stop()
	ctx := context.Background()
	runBare := func() {
		run, err := c.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: "bench-bare"}, bareFour)
		if err != nil {
			b.Fatal(err)
		}
		if err := run.Get(ctx, nil); err != nil {
			b.Fatal(err)
		}
	}
	runOne(b, c, doc) // warm up
	runBare()
	var vibe, plain []time.Duration
	for b.Loop() {
		start := time.Now()
		runOne(b, c, doc)
		vibe = append(vibe, time.Since(start))
		start = time.Now()
		runBare()
		plain = append(plain, time.Since(start))
	}
	median := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Microseconds()) / 1000
	}
	v, p := median(vibe)/4, median(plain)/4
	b.ReportMetric(v, "vibe-median-ms/step")
	b.ReportMetric(p, "bare-temporal-median-ms/step")
	b.ReportMetric(v-p, "vibe-overhead-ms/step")
}

// BenchmarkProcessThroughput starts the four-chunk process from 16
// goroutines at once and reports completed processes per second.
func BenchmarkProcessThroughput(b *testing.B) {
	c, doc := benchEngine(b)
	runOne(b, c, doc)
	const concurrency = 16
	start := time.Now()
	n := 0
	for b.Loop() {
		var wg sync.WaitGroup
		for range concurrency {
			wg.Go(func() { runOne(b, c, doc) })
		}
		wg.Wait()
		n += concurrency
	}
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "processes/s")
}
