package llm

import (
	"context"
	"log/slog"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Metrics are the OpenTelemetry instruments Fill records to.
type Metrics struct {
	tokens   metric.Int64Counter     // vibe.llm.tokens {kind=prompt|completion, step, model}
	requests metric.Int64Counter     // vibe.llm.requests {step, model, replayed}
	duration metric.Float64Histogram // vibe.llm.duration, seconds {step, model}
	values   metric.Float64Histogram // vibe.instruction.metric: numeric "$" metrics {metric, step, process, instance}

	// The GenAI semantic conventions' client metrics, one record per
	// model call (Complete), with the call span's gen_ai.* and server.*
	// attributes.
	operation metric.Float64Histogram // gen_ai.client.operation.duration, seconds {error.type on failures}
	usage     metric.Int64Histogram   // gen_ai.client.token.usage {gen_ai.token.type=input|output}
}

// The conventions' advised bucket boundaries of the GenAI client metrics.
var (
	durationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	tokenBuckets    = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
)

// NewMetrics creates the instruments on meter.
func NewMetrics(meter metric.Meter) (*Metrics, error) {
	var m Metrics
	var err error
	if m.tokens, err = meter.Int64Counter("vibe.llm.tokens", metric.WithUnit("{token}"),
		metric.WithDescription("Tokens sent to and received from models, by kind (prompt or completion).")); err != nil {
		return nil, err
	}
	if m.requests, err = meter.Int64Counter("vibe.llm.requests", metric.WithUnit("{request}"),
		metric.WithDescription("Requests sent to models, repair turns included.")); err != nil {
		return nil, err
	}
	if m.duration, err = meter.Float64Histogram("vibe.llm.duration", metric.WithUnit("s"),
		metric.WithDescription("Time spent waiting for models per filled task.")); err != nil {
		return nil, err
	}
	if m.values, err = meter.Float64Histogram("vibe.instruction.metric",
		metric.WithDescription(`Numeric "$" metrics models filled in, by metric name.`)); err != nil {
		return nil, err
	}
	if m.operation, err = meter.Float64Histogram("gen_ai.client.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("GenAI operation duration."), metric.WithExplicitBucketBoundaries(durationBuckets...)); err != nil {
		return nil, err
	}
	if m.usage, err = meter.Int64Histogram("gen_ai.client.token.usage", metric.WithUnit("{token}"),
		metric.WithDescription("Number of input and output tokens used."), metric.WithExplicitBucketBoundaries(tokenBuckets...)); err != nil {
		return nil, err
	}
	return &m, nil
}

// defaultMetrics are made on the global meter provider, which is a no-op
// until the program installs one; its instruments then delegate to it.
var defaultMetrics = sync.OnceValue(func() *Metrics {
	m, _ := NewMetrics(otel.Meter("github.com/augceo/vibe/llm"))
	return m
})

func metricsFor(opts Options) *Metrics {
	if opts.Metrics != nil {
		return opts.Metrics
	}
	return defaultMetrics()
}

// account logs one record for a filled (or failed) task and records its
// metrics.
func account(ctx context.Context, step string, res *Result, rejected bool, opts Options) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	attrs := []slog.Attr{
		slog.String("step", step),
		slog.String("model", res.Model),
		slog.Int64("prompt_tokens", res.Usage.PromptTokens),
		slog.Int64("completion_tokens", res.Usage.CompletionTokens),
		slog.Duration("latency", res.Latency),
		slog.Int("requests", res.Requests),
	}
	if res.Replayed {
		attrs = append(attrs, slog.Bool("replayed", true))
	}
	if opts.Process != "" {
		attrs = append(attrs, slog.String("process", opts.Process))
	}
	if opts.Instance != "" {
		attrs = append(attrs, slog.String("instance", opts.Instance))
	}
	for _, m := range res.Metrics {
		attrs = append(attrs, slog.String(m.Name, m.Value.String()))
	}
	if rejected {
		logger.LogAttrs(ctx, slog.LevelWarn, "llm: answer rejected", attrs...)
	} else {
		logger.LogAttrs(ctx, slog.LevelInfo, "llm: filled", attrs...)
	}

	m := metricsFor(opts)
	if m == nil {
		return
	}
	common := attribute.NewSet(attribute.String("step", step), attribute.String("model", res.Model))
	m.tokens.Add(ctx, res.Usage.PromptTokens, metric.WithAttributeSet(common), metric.WithAttributes(attribute.String("kind", "prompt")))
	m.tokens.Add(ctx, res.Usage.CompletionTokens, metric.WithAttributeSet(common), metric.WithAttributes(attribute.String("kind", "completion")))
	m.requests.Add(ctx, int64(res.Requests), metric.WithAttributeSet(common), metric.WithAttributes(attribute.Bool("replayed", res.Replayed)))
	m.duration.Record(ctx, res.Latency.Seconds(), metric.WithAttributeSet(common))
	for _, f := range res.Metrics {
		x, ok := f.Value.Float()
		if !ok {
			continue
		}
		at := step
		if opts.StepOf != nil {
			at = opts.StepOf(f.Path)
		}
		m.values.Record(ctx, x, metric.WithAttributes(
			attribute.String("metric", f.Name), attribute.String("step", at),
			attribute.String("process", opts.Process), attribute.String("instance", opts.Instance)))
	}
}
