package telemetry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
)

// The OTLP protocols Setup exports with (OTEL_EXPORTER_OTLP_PROTOCOL).
const (
	GRPC         = "grpc"
	HTTPProtobuf = "http/protobuf"
)

// Options configures Setup. The zero value exports to the endpoint the
// standard OTEL_EXPORTER_OTLP_* variables name, if any.
type Options struct {
	// Endpoint is the collector's OTLP address as a URL:
	// http://localhost:4317 (plain text) or https://collector:4317 (TLS)
	// for gRPC, http://localhost:4318 for HTTP (the paths /v1/traces and
	// /v1/metrics are added to a URL without a path). An address without
	// a scheme is taken as http:// with a warning. Empty means
	// OTEL_EXPORTER_OTLP_ENDPOINT (or the exporters' own reading of its
	// _TRACES_/_METRICS_ forms).
	Endpoint string
	// Protocol is GRPC or HTTPProtobuf; empty means
	// OTEL_EXPORTER_OTLP_PROTOCOL, and gRPC without it.
	Protocol string
	// ServiceName names this program in the collector; empty means "vibe"
	// (or OTEL_SERVICE_NAME).
	ServiceName string
	// MetricInterval is how often metrics are exported; 0 means 10 s.
	MetricInterval time.Duration
	// Warnings receives what goes wrong with the export: an endpoint
	// without a scheme, a collector that cannot be reached when Setup
	// starts, each distinct export error once. Nil means standard error —
	// telemetry that is silently lost is worse than a line on stderr.
	Warnings io.Writer
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

// reachTimeout bounds Setup's check that the collector answers: a
// connection refused is known at once, a host that drops packets is not.
const reachTimeout = time.Second

// Setup installs global tracer and meter providers that export over OTLP
// (gRPC or HTTP), and returns the function that flushes and stops them.
// When no collector is named it installs nothing and shutdown does
// nothing. A collector it cannot connect to is a warning, not an error:
// the program runs on, and the exporters retry.
func Setup(ctx context.Context, opts Options) (shutdown func(context.Context) error, err error) {
	if !opts.Enabled() {
		return func(context.Context) error { return nil }, nil
	}
	warn := opts.Warnings
	if warn == nil {
		warn = os.Stderr
	}
	name := opts.ServiceName
	if name == "" {
		name = "vibe"
		if env := os.Getenv("OTEL_SERVICE_NAME"); env != "" {
			name = env
		}
	}
	protocol := opts.Protocol
	if protocol == "" {
		protocol = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch protocol {
	case "":
		protocol = GRPC
	case GRPC, HTTPProtobuf:
	default:
		return nil, fmt.Errorf("OTLP protocol %q: Vibe exports over %s or %s (OTEL_EXPORTER_OTLP_PROTOCOL)", protocol, GRPC, HTTPProtobuf)
	}
	endpoint := opts.Endpoint
	if endpoint == "" {
		endpoint = os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	var u *url.URL
	if endpoint != "" {
		if u, err = endpointURL(endpoint, warn); err != nil {
			return nil, err
		}
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName(name)))
	if err != nil {
		return nil, fmt.Errorf("telemetry resource: %w", err)
	}
	traces, metrics, err := exporters(ctx, protocol, u)
	if err != nil {
		return nil, err
	}
	if u != nil {
		reachable(ctx, u, protocol, warn)
	}
	otel.SetErrorHandler(&onceHandler{w: warn, seen: map[string]bool{}})
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
		err := errors.Join(tp.Shutdown(ctx), mp.Shutdown(ctx))
		if err != nil {
			fmt.Fprintf(warn, "telemetry: the last spans and metrics were not exported: %v\n", err)
		}
		return err
	}, nil
}

// endpointURL reads an endpoint as a URL. One without a scheme
// ("localhost:4317", which url.Parse reads as the scheme "localhost") is
// taken as plain-text http://, and a warning says so.
func endpointURL(endpoint string, warn io.Writer) (*url.URL, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		fixed := "http://" + strings.TrimPrefix(endpoint, "//")
		v, ferr := url.Parse(fixed)
		if ferr != nil || v.Host == "" {
			return nil, fmt.Errorf("OTLP endpoint %q is not a URL such as http://localhost:4317", endpoint)
		}
		fmt.Fprintf(warn, "telemetry: the OTLP endpoint %q has no scheme; exporting in plain text to %s (write https:// for TLS)\n", endpoint, fixed)
		return v, nil
	}
	return u, nil
}

// exporters makes the trace and metric exporters of protocol to u (nil:
// the environment's endpoints, which the exporters read themselves).
func exporters(ctx context.Context, protocol string, u *url.URL) (sdktrace.SpanExporter, sdkmetric.Exporter, error) {
	var (
		traces  sdktrace.SpanExporter
		metrics sdkmetric.Exporter
		err     error
	)
	at := "the environment's endpoint"
	if u != nil {
		at = u.String()
	}
	if protocol == HTTPProtobuf {
		var topts []otlptracehttp.Option
		var mopts []otlpmetrichttp.Option
		if u != nil {
			// A URL without a path is the collector's base: each signal
			// has its own path on it.
			topts = append(topts, otlptracehttp.WithEndpointURL(withPath(u, "/v1/traces")))
			mopts = append(mopts, otlpmetrichttp.WithEndpointURL(withPath(u, "/v1/metrics")))
		}
		if traces, err = otlptracehttp.New(ctx, topts...); err != nil {
			return nil, nil, fmt.Errorf("OTLP/HTTP trace exporter for %s: %w", at, err)
		}
		if metrics, err = otlpmetrichttp.New(ctx, mopts...); err != nil {
			traces.Shutdown(ctx)
			return nil, nil, fmt.Errorf("OTLP/HTTP metric exporter for %s: %w", at, err)
		}
		return traces, metrics, nil
	}
	var topts []otlptracegrpc.Option
	var mopts []otlpmetricgrpc.Option
	if u != nil {
		topts = append(topts, otlptracegrpc.WithEndpointURL(u.String()))
		mopts = append(mopts, otlpmetricgrpc.WithEndpointURL(u.String()))
	}
	if traces, err = otlptracegrpc.New(ctx, topts...); err != nil {
		return nil, nil, fmt.Errorf("OTLP trace exporter for %s: %w", at, err)
	}
	if metrics, err = otlpmetricgrpc.New(ctx, mopts...); err != nil {
		traces.Shutdown(ctx)
		return nil, nil, fmt.Errorf("OTLP metric exporter for %s: %w", at, err)
	}
	return traces, metrics, nil
}

// withPath is u with path p when u has none.
func withPath(u *url.URL, p string) string {
	v := *u
	if v.Path == "" || v.Path == "/" {
		v.Path = p
	}
	return v.String()
}

// reachable warns when no connection to the collector opens within
// reachTimeout: the exporters would otherwise drop what they cannot send
// with no word (they retry, and log only through otel's error handler).
func reachable(ctx context.Context, u *url.URL, protocol string, warn io.Writer) {
	port := u.Port()
	if port == "" {
		switch {
		case u.Scheme == "https":
			port = "443"
		case protocol == HTTPProtobuf:
			port = "4318"
		default:
			port = "4317"
		}
	}
	d := net.Dialer{Timeout: reachTimeout}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(u.Hostname(), port))
	if err != nil {
		fmt.Fprintf(warn, "telemetry: cannot reach the OTLP collector at %s (%s): %v; spans and metrics are lost until it answers\n", u, protocol, err)
		return
	}
	conn.Close()
}

// onceHandler writes each distinct export error once: an unreachable
// collector fails every export the same way.
type onceHandler struct {
	w    io.Writer
	mu   sync.Mutex
	seen map[string]bool
}

func (h *onceHandler) Handle(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	msg := err.Error()
	if h.seen[msg] || len(h.seen) > 100 {
		return
	}
	h.seen[msg] = true
	fmt.Fprintf(h.w, "telemetry: %s\n", msg)
}

// Interceptor is Temporal's tracing interceptor on the global tracer
// provider: a span for every workflow run (a process, a Vessel request) and
// every activity, with the trace carried from the client that starts a
// workflow to the activities it runs, and a span for each update (a
// person's answer). Put it in the engine's client options
// (engine.Options.ClientOptions.Interceptors); workers made from that
// client use it too.
//
// Signals and queries get no span: a batch's groups signal the batch at
// every report and the clients that follow a process query it every
// fraction of a second, so their spans outnumbered all others ten to one
// (10.5k spans for a batch of 1.1k workflows) and told nothing the
// workflow's own spans do not.
func Interceptor() (interceptor.ClientInterceptor, error) {
	return temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{DisableSignalTracing: true, DisableQueryTracing: true})
}
