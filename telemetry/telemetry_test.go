package telemetry

import (
	"bytes"
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/augceo/vibe/internal/otlptest"
)

// reset puts back the no-op providers Setup replaced.
func reset(t *testing.T) {
	t.Cleanup(func() {
		otel.SetTracerProvider(tracenoop.NewTracerProvider())
		otel.SetMeterProvider(metricnoop.NewMeterProvider())
	})
}

// syncBuffer is the warnings' writer: the exporters write from their own
// goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// export records one span and one metric point through the installed
// providers, and flushes them.
func export(t *testing.T, shutdown func(context.Context) error) {
	t.Helper()
	ctx := context.Background()
	_, span := otel.Tracer("test").Start(ctx, "chat test-model")
	span.End()
	c, _ := otel.Meter("test").Int64Counter("test.count")
	c.Add(ctx, 1)
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := shutdown(sctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
}

func received(t *testing.T, r *otlptest.Receiver) {
	t.Helper()
	var spans, metrics []string
	for _, s := range r.Spans() {
		spans = append(spans, s.GetName())
	}
	for _, m := range r.Metrics() {
		metrics = append(metrics, m.GetName())
	}
	if strings.Join(spans, ",") != "chat test-model" || !strings.Contains(strings.Join(metrics, ","), "test.count") {
		t.Errorf("received spans %v, metrics %v", spans, metrics)
	}
}

// TestProtocols: OTLP over gRPC and over HTTP, chosen by Options.Protocol
// or OTEL_EXPORTER_OTLP_PROTOCOL.
func TestProtocols(t *testing.T) {
	t.Run("grpc", func(t *testing.T) {
		reset(t)
		r := otlptest.Start(t)
		var warn syncBuffer
		shutdown, err := Setup(context.Background(), Options{Endpoint: r.URL, Warnings: &warn})
		if err != nil {
			t.Fatal(err)
		}
		export(t, shutdown)
		received(t, r)
		if warn.String() != "" {
			t.Errorf("warnings: %s", warn.String())
		}
	})
	t.Run("http/protobuf", func(t *testing.T) {
		reset(t)
		r := otlptest.StartHTTP(t)
		var warn syncBuffer
		shutdown, err := Setup(context.Background(), Options{Endpoint: r.URL, Protocol: HTTPProtobuf, Warnings: &warn})
		if err != nil {
			t.Fatal(err)
		}
		export(t, shutdown)
		received(t, r)
		if warn.String() != "" {
			t.Errorf("warnings: %s", warn.String())
		}
	})
	t.Run("environment", func(t *testing.T) {
		reset(t)
		r := otlptest.StartHTTP(t)
		t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", r.URL)
		shutdown, err := Setup(context.Background(), Options{Warnings: &syncBuffer{}})
		if err != nil {
			t.Fatal(err)
		}
		export(t, shutdown)
		received(t, r)
	})
	t.Run("unknown", func(t *testing.T) {
		if _, err := Setup(context.Background(), Options{Endpoint: "http://localhost:4318", Protocol: "http/json"}); err == nil || !strings.Contains(err.Error(), `"http/json"`) {
			t.Errorf("http/json: %v", err)
		}
	})
}

// TestWarnings: an endpoint without a scheme, and a collector that
// cannot be reached, are said on the warnings' writer.
func TestWarnings(t *testing.T) {
	t.Run("no scheme", func(t *testing.T) {
		reset(t)
		r := otlptest.Start(t)
		bare := strings.TrimPrefix(r.URL, "http://")
		var warn syncBuffer
		shutdown, err := Setup(context.Background(), Options{Endpoint: bare, Warnings: &warn})
		if err != nil {
			t.Fatal(err)
		}
		export(t, shutdown)
		received(t, r)
		if want := `telemetry: the OTLP endpoint "` + bare + `" has no scheme; exporting in plain text to http://` + bare; !strings.Contains(warn.String(), want) {
			t.Errorf("warnings %q, want %q", warn.String(), want)
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		reset(t)
		// A port that was just free: nothing listens on it.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		var warn syncBuffer
		shutdown, err := Setup(context.Background(), Options{Endpoint: "http://" + addr, Protocol: HTTPProtobuf, Warnings: &warn})
		if err != nil {
			t.Fatal(err)
		}
		if want := "telemetry: cannot reach the OTLP collector at http://" + addr + " (http/protobuf)"; !strings.Contains(warn.String(), want) {
			t.Errorf("warnings %q, want %q", warn.String(), want)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, span := otel.Tracer("test").Start(ctx, "lost")
		span.End()
		shutdown(ctx)
		if !strings.Contains(warn.String(), "telemetry: the last spans and metrics were not exported") {
			t.Errorf("warnings after the shutdown %q", warn.String())
		}
	})
}

// TestInterceptor: workflows and updates get spans; signals and queries,
// which a batch and a follower send by the thousand, do not.
func TestInterceptor(t *testing.T) {
	reset(t)
	spans := tracetest.NewSpanRecorder()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)))
	in, err := Interceptor()
	if err != nil {
		t.Fatal(err)
	}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{in.(interceptor.WorkerInterceptor)},
		DeadlockDetectionTimeout: time.Minute}) // a busy machine may hold the workflow goroutine past the 1 s default
	wf := func(ctx workflow.Context) (int, error) {
		n := 0
		if err := workflow.SetQueryHandler(ctx, "count", func() (int, error) { return n, nil }); err != nil {
			return 0, err
		}
		ch := workflow.GetSignalChannel(ctx, "report")
		for n < 3 {
			ch.Receive(ctx, nil)
			n++
		}
		return n, nil
	}
	for i := range 3 {
		env.RegisterDelayedCallback(func() {
			env.SignalWorkflow("report", i)
			if _, err := env.QueryWorkflow("count"); err != nil {
				t.Error(err)
			}
		}, time.Duration(i+1)*time.Second)
	}
	env.ExecuteWorkflow(wf)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range spans.Ended() {
		names = append(names, s.Name())
	}
	joined := strings.Join(names, ",")
	if strings.Contains(joined, "Signal") || strings.Contains(joined, "Query") || !strings.Contains(joined, "RunWorkflow") {
		t.Errorf("spans %v: want the workflow's, and none for signals or queries", names)
	}
}
