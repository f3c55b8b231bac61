package main

import (
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
