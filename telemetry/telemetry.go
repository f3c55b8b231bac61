package telemetry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
)

// Options configures Setup. The zero value exports to the endpoint the
// standard OTEL_EXPORTER_OTLP_* variables name, if any.
type Options struct {
	// Endpoint is the collector's OTLP/gRPC address as a URL:
	// http://localhost:4317 (plain text) or https://collector:4317 (TLS).
	// Empty means the OTEL_EXPORTER_OTLP_ENDPOINT variables (and their
	// _TRACES_/_METRICS_ forms), which the exporters read themselves.
	Endpoint string
	// ServiceName names this program in the collector; empty means "vibe"
	// (or OTEL_SERVICE_NAME).
	ServiceName string
	// MetricInterval is how often metrics are exported; 0 means 10 s.
	MetricInterval time.Duration
}

// Enabled reports whether opts (or the environment) names a collector.
func (o Options) Enabled() bool {
	for _, v := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"} {
		if os.Getenv(v) != "" {
			return true
		}
	}
	return o.Endpoint != ""
}

// Setup installs global tracer and meter providers that export over
// OTLP/gRPC, and returns the function that flushes and stops them. When no
// collector is named it installs nothing and shutdown does nothing.
func Setup(ctx context.Context, opts Options) (shutdown func(context.Context) error, err error) {
	if !opts.Enabled() {
		return func(context.Context) error { return nil }, nil
	}
	name := opts.ServiceName
	if name == "" {
		name = "vibe"
		if env := os.Getenv("OTEL_SERVICE_NAME"); env != "" {
			name = env
		}
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName(name)))
	if err != nil {
		return nil, fmt.Errorf("telemetry resource: %w", err)
	}
	var traceOpts []otlptracegrpc.Option
	var metricOpts []otlpmetricgrpc.Option
	if opts.Endpoint != "" {
		traceOpts = append(traceOpts, otlptracegrpc.WithEndpointURL(opts.Endpoint))
		metricOpts = append(metricOpts, otlpmetricgrpc.WithEndpointURL(opts.Endpoint))
	}
	traces, err := otlptracegrpc.New(ctx, traceOpts...)
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter for %s: %w", opts.Endpoint, err)
	}
	metrics, err := otlpmetricgrpc.New(ctx, metricOpts...)
	if err != nil {
		traces.Shutdown(ctx)
		return nil, fmt.Errorf("OTLP metric exporter for %s: %w", opts.Endpoint, err)
	}
	interval := opts.MetricInterval
	if interval <= 0 {
		interval = 10 * time.Second
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(traces), sdktrace.WithResource(res))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(metrics, sdkmetric.WithInterval(interval))), sdkmetric.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetMeterProvider(mp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	return func(ctx context.Context) error {
		return errors.Join(tp.Shutdown(ctx), mp.Shutdown(ctx))
	}, nil
}

// Interceptor is Temporal's tracing interceptor on the global tracer
// provider: a span for every workflow run (a process, a Vessel request) and
// every activity, with the trace carried from the client that starts a
// workflow to the activities it runs. Put it in the engine's client
// options (engine.Options.ClientOptions.Interceptors); workers made from
// that client use it too.
func Interceptor() (interceptor.ClientInterceptor, error) {
	return temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{})
}
