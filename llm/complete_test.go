package llm_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/llm/openai"
)

// recorded is a provider that answers as a recording does: it names no
// model, and each answer says which model gave it.
type recorded struct{ err error }

func (recorded) System() string { return "replay" }
func (recorded) Model() string  { return "" }
func (r recorded) Complete(context.Context, *llm.Request) (*llm.Response, error) {
	if r.err != nil {
		return nil, r.err
	}
	return &llm.Response{Content: "{}", Model: "gpt-4o-mini", Usage: llm.Usage{PromptTokens: 9, CompletionTokens: 2}, Replayed: true}, nil
}

// TestCompleteConventions: a model call's span and metrics follow the
// GenAI semantic conventions.
func TestCompleteConventions(t *testing.T) {
	spans := testSpans()
	before := len(spans.Ended())
	reader := testMetrics()
	ctx := context.Background()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil { // what runs before this one recorded
		t.Fatal(err)
	}
	srv := newChatServer(t, `{"subject": "Hi"}`)
	p := llm.Priced{Provider: openai.New(openai.Options{Model: "test-model", BaseURL: srv.URL, APIKey: "k", MaxRetries: -1})}
	req := &llm.Request{Name: "draft", Messages: []llm.Message{{Role: llm.RoleUser, Content: "Draft it."}}, Schema: []byte(`{"type": "object"}`)}
	if _, err := llm.Complete(ctx, p, req); err != nil {
		t.Fatal(err)
	}
	if _, err := llm.Complete(ctx, recorded{}, req); err != nil {
		t.Fatal(err)
	}
	failing := recorded{err: &llm.APIError{Provider: "openai", StatusCode: 429, Message: "slow down"}}
	if _, err := llm.Complete(ctx, failing, req); err == nil {
		t.Fatal("no error")
	}

	ended := spans.Ended()[before:]
	if len(ended) != 3 {
		t.Fatalf("%d spans", len(ended))
	}
	attrs := func(i int) map[attribute.Key]attribute.Value {
		m := map[attribute.Key]attribute.Value{}
		for _, kv := range ended[i].Attributes() {
			m[kv.Key] = kv.Value
		}
		return m
	}
	live := attrs(0)
	host, port, _ := strings.Cut(strings.TrimPrefix(srv.URL, "http://"), ":")
	for key, want := range map[attribute.Key]string{
		"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.system": "openai",
		"gen_ai.request.model": "test-model", "gen_ai.response.model": "test-model", "gen_ai.response.id": "chatcmpl-test",
		"server.address": host, "gen_ai.usage.input_tokens": "100",
	} {
		if got := live[key].String(); got != want {
			t.Errorf("%s = %q, want %q", key, got, want)
		}
	}
	if got := live["server.port"].String(); got != port {
		t.Errorf("server.port = %s, want %s", got, port)
	}
	if got := live["gen_ai.response.finish_reasons"].AsStringSlice(); !slices.Equal(got, []string{"stop"}) {
		t.Errorf("finish reasons %q", got)
	}
	if ended[0].Name() != "chat test-model" {
		t.Errorf("span %q", ended[0].Name())
	}
	// A replayed call still names the model.
	if ended[1].Name() != "chat gpt-4o-mini" || attrs(1)["gen_ai.request.model"].String() != "gpt-4o-mini" {
		t.Errorf("replayed: span %q, %v", ended[1].Name(), attrs(1))
	}
	if got := attrs(2)["error.type"].String(); got != "429" {
		t.Errorf("error.type %q", got)
	}

	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch m.Name {
			case "gen_ai.client.token.usage":
				h := m.Data.(metricdata.Histogram[int64])
				// The live call only: a replayed answer used no tokens.
				var sum int64
				types := map[string]bool{}
				for _, dp := range h.DataPoints {
					sum += dp.Sum
					tt, _ := dp.Attributes.Value("gen_ai.token.type")
					types[tt.AsString()] = true
					if pn, _ := dp.Attributes.Value("gen_ai.provider.name"); pn.AsString() != "openai" {
						t.Errorf("token usage of provider %q", pn.AsString())
					}
				}
				if !types["input"] || !types["output"] || sum < 100 {
					t.Errorf("token usage: types %v, sum %d", types, sum)
				}
				found[m.Name] = true
			case "gen_ai.client.operation.duration":
				h := m.Data.(metricdata.Histogram[float64])
				var errs, ok uint64
				for _, dp := range h.DataPoints {
					if et, has := dp.Attributes.Value("error.type"); has && et.AsString() == "429" {
						errs += dp.Count
					} else {
						ok += dp.Count
					}
				}
				if errs != 1 || ok != 1 || m.Unit != "s" {
					t.Errorf("durations: %d failed, %d answered, unit %q", errs, ok, m.Unit)
				}
				found[m.Name] = true
			}
		}
	}
	if !found["gen_ai.client.token.usage"] || !found["gen_ai.client.operation.duration"] {
		t.Errorf("metrics found: %v", found)
	}
}

// TestRecordBatched: an answer read from a provider batch gets a span of
// its own, with its usage and its cost at the batch discount.
func TestRecordBatched(t *testing.T) {
	spans := testSpans()
	before := len(spans.Ended())
	prices := &llm.Prices{Currency: "USD", Models: map[string]llm.Price{"gpt-4o-mini": {Input: 1, Output: 4, BatchDiscount: 0.5}}}
	p := llm.Priced{Provider: openai.New(openai.Options{Model: "gpt-4o-mini"}), Prices: prices}
	req := &llm.Request{Name: "LLM_assess"}
	resp := &llm.Response{Model: "gpt-4o-mini-2024-07-18", ID: "chatcmpl-1", Usage: llm.Usage{PromptTokens: 1_000_000, CompletionTokens: 250_000}}
	llm.RecordBatched(context.Background(), p, "batch_abc", req, resp)
	ended := spans.Ended()[before:]
	if len(ended) != 1 || ended[0].Name() != "chat gpt-4o-mini-2024-07-18" {
		t.Fatalf("spans %v", ended)
	}
	got := map[attribute.Key]attribute.Value{}
	for _, kv := range ended[0].Attributes() {
		got[kv.Key] = kv.Value
	}
	// (1,000,000 × 1 + 250,000 × 4) / 1e6 = 2, half of it.
	if got["vibe.cost"].AsFloat64() != 1 || got["vibe.provider_batch.id"].AsString() != "batch_abc" || got["gen_ai.usage.input_tokens"].AsInt64() != 1_000_000 ||
		got["gen_ai.provider.name"].AsString() != "openai" || got["gen_ai.response.id"].AsString() != "chatcmpl-1" {
		t.Errorf("attributes %v", got)
	}
}

// testMetrics reads the package's metrics, as what was recorded since the
// last read: the package's instruments delegate to the first meter
// provider installed, so it is installed once (go test -count=N runs a
// test N times in one process).
var testMetrics = sync.OnceValue(func() *sdkmetric.ManualReader {
	reader := sdkmetric.NewManualReader(sdkmetric.WithTemporalitySelector(func(sdkmetric.InstrumentKind) metricdata.Temporality {
		return metricdata.DeltaTemporality
	}))
	otel.SetMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	return reader
})

// testSpans records the package's spans: OpenTelemetry's global tracers
// take the first tracer provider set and keep it, so the tests share one.
var testSpans = sync.OnceValue(func() *tracetest.SpanRecorder {
	spans := tracetest.NewSpanRecorder()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)))
	return spans
})
