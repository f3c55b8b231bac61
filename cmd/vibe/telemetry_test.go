package main

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/augceo/vibe/internal/llmtest"
	"github.com/augceo/vibe/internal/otlptest"
)

// TestTelemetry runs schedule-meeting with --otlp pointing at an
// in-process OTLP receiver: it gets a span for the process run, each LLM
// chunk, each model call (GenAI attributes, token counts) and each action,
// and the models' "$" metrics tagged with their step and instance.
func TestTelemetry(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	t.Cleanup(func() {
		// Setup installed global providers; later tests record nothing.
		otel.SetTracerProvider(tracenoop.NewTracerProvider())
		otel.SetMeterProvider(metricnoop.NewMeterProvider())
	})
	recv := otlptest.Start(t)
	answers := map[string]string{
		"LLM_llmContext1": meetingAnswers["LLM_llmContext1"],
		"LLM_llmContext2": strings.Replace(meetingAnswers["LLM_llmContext2"], `"reasoning":`, `"$confidence":0.8,"reasoning":`, 1),
	}
	model := llmtest.New(t, llmtest.ByName(answers))
	actions, _ := meetingActions(t)
	status, _, stderr := run(t, "", "run", "aug:processes/schedule-meeting", "--registry", example+"/registry", "--prompt", "Meet Bob",
		"--data", t.TempDir(), "--actions-file", actions, "--llm", "openai:test-model", "--llm-base-url", model.URL,
		"--answer", `{"confirmInvitation":{"decision":"Approve"}}`, "--otlp", recv.URL)
	if status != 0 {
		t.Fatalf("run: %d\n%s", status, stderr)
	}
	// The command flushed the exporters when it ended.
	spans := map[string]map[string]string{}
	for _, s := range recv.Spans() {
		spans[s.GetName()] = otlptest.Attrs(s.GetAttributes())
	}
	for _, name := range []string{"RunWorkflow:vibe.Process", "chunk LLM_llmContext1", "chunk LLM_llmContext2", "chat test-model",
		"action FetchAvailability_Activity", "action sendInvitation"} {
		if _, ok := spans[name]; !ok {
			t.Errorf("no span %q; got %v", name, keys(spans))
		}
	}
	if chat := spans["chat test-model"]; chat["gen_ai.system"] != "openai" || chat["gen_ai.request.model"] != "test-model" ||
		chat["gen_ai.usage.input_tokens"] != "100" || chat["gen_ai.usage.output_tokens"] == "" {
		t.Errorf("model-call span %v", chat)
	}
	// GenAI conventions on the model call; token usage there only, the
	// chunk's totals under vibe.* names.
	if chat := spans["chat test-model"]; chat["gen_ai.provider.name"] != "openai" || chat["gen_ai.response.id"] != "chatcmpl-test" ||
		chat["server.address"] != "127.0.0.1" || chat["server.port"] == "" {
		t.Errorf("model-call span %v", chat)
	}
	for _, name := range []string{"chunk LLM_llmContext1", "chunk LLM_llmContext2"} {
		if c := spans[name]; c["gen_ai.usage.input_tokens"] != "" || c["vibe.usage.input_tokens"] == "" {
			t.Errorf("%s: %v", name, c)
		}
	}
	var signals int
	for name := range spans {
		if strings.Contains(name, "Signal") || strings.Contains(name, "Query") {
			signals++
		}
	}
	if signals > 0 {
		t.Errorf("%d signal or query spans: %v", signals, keys(spans))
	}
	if a := spans["action sendInvitation"]; !strings.HasPrefix(a["vibe.idempotency_key"], "vibe:schedule-meeting-") || a["vibe.step"] != "serverContext2.sendInvitation" {
		t.Errorf("action span %v", a)
	}
	var metric map[string]string
	for _, m := range recv.Metrics() {
		if m.GetName() != "vibe.instruction.metric" {
			continue
		}
		for _, dp := range m.GetHistogram().GetDataPoints() {
			metric = otlptest.Attrs(dp.GetAttributes())
		}
	}
	if metric["metric"] != "$confidence" || metric["step"] != "llmContext2.findCommonSlot" || !strings.HasPrefix(metric["instance"], "schedule-meeting-") {
		t.Errorf("$ metric tagged %v: want step llmContext2.findCommonSlot and the process's instance", metric)
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestBatchSpans runs vibe batch over 96 items, an HTTP action each, with
// --otlp pointing at an in-process receiver: an item costs its action's
// span and its share of its group's workflow, activities and multiplexed
// call (1.2 spans an item here), with none for signals or queries — which
// made the bulk of a batch's spans when each item was a workflow (10.5k
// spans for 1.1k workflows, issue 27).
func TestBatchSpans(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	const n = 96
	recv := otlptest.Start(t)
	dir, _ := batchSetup(t, n, nil, 0)
	model := llmtest.NewServer(t, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{})
	// A process of its own: OpenTelemetry's global tracers stay with the
	// first provider a process sets, which another test may have set.
	cmd, out := child(t, "batch", filepath.Join(dir, "moderate.json"), "--in", filepath.Join(dir, "items.jsonl"), "--out", filepath.Join(dir, "out.jsonl"),
		"--batch-size", "32", "--data", filepath.Join(dir, "data"), "--actions-file", filepath.Join(dir, "actions.json"),
		"--llm", "openai:test-model", "--llm-base-url", model.URL, "--otlp", recv.URL)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("vibe batch: %v\n%s", err, out)
	}
	checkResults(t, readResults(t, filepath.Join(dir, "out.jsonl")), n, nil)
	byName := map[string]int{}
	total := 0
	for _, s := range recv.Spans() {
		byName[s.GetName()]++
		total++
	}
	names := slices.Sorted(maps.Keys(byName))
	var counts []string
	for _, name := range names {
		counts = append(counts, fmt.Sprintf("%s %d", name, byName[name]))
		if strings.Contains(name, "Signal") || strings.Contains(name, "Query") {
			t.Errorf("a span for a signal or query: %s (%d)", name, byName[name])
		}
	}
	t.Logf("%d spans for %d items (%.1f per item): %s", total, n, float64(total)/n, strings.Join(counts, ", "))
	if byName["action record"] != n {
		t.Errorf("%d action spans, want one per item (%d)", byName["action record"], n)
	}
	if total > 2*n {
		t.Errorf("%d spans for %d items: over 2 per item", total, n)
	}
}
