package otlptest

import (
	"context"
	"net"
	"strconv"
	"sync"
	"testing"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
)

// Receiver is an OTLP/gRPC collector on loopback.
type Receiver struct {
	// URL is where exporters send: http://127.0.0.1:PORT.
	URL string

	mu      sync.Mutex
	spans   []*tracepb.Span
	metrics []*metricpb.Metric
}

// Start starts a receiver; it stops when the test ends.
func Start(t testing.TB) *Receiver {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &Receiver{URL: "http://" + ln.Addr().String()}
	s := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(s, traces{r: r})
	colmetricpb.RegisterMetricsServiceServer(s, metrics{r: r})
	go s.Serve(ln)
	t.Cleanup(s.Stop)
	return r
}

type traces struct {
	coltracepb.UnimplementedTraceServiceServer
	r *Receiver
}

func (x traces) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	spans := flatten(req.GetResourceSpans(), (*tracepb.ResourceSpans).GetScopeSpans, (*tracepb.ScopeSpans).GetSpans)
	x.r.mu.Lock()
	defer x.r.mu.Unlock()
	x.r.spans = append(x.r.spans, spans...)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

type metrics struct {
	colmetricpb.UnimplementedMetricsServiceServer
	r *Receiver
}

func (x metrics) Export(_ context.Context, req *colmetricpb.ExportMetricsServiceRequest) (*colmetricpb.ExportMetricsServiceResponse, error) {
	ms := flatten(req.GetResourceMetrics(), (*metricpb.ResourceMetrics).GetScopeMetrics, (*metricpb.ScopeMetrics).GetMetrics)
	x.r.mu.Lock()
	defer x.r.mu.Unlock()
	x.r.metrics = append(x.r.metrics, ms...)
	return &colmetricpb.ExportMetricsServiceResponse{}, nil
}

// flatten lists the items of an export: those of each scope of each
// resource.
func flatten[R, S, T any](resources []R, scopes func(R) []S, items func(S) []T) []T {
	var out []T
	for _, r := range resources {
		for _, s := range scopes(r) {
			out = append(out, items(s)...)
		}
	}
	return out
}

// Spans returns the spans received so far.
func (r *Receiver) Spans() []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*tracepb.Span(nil), r.spans...)
}

// Metrics returns the metrics received so far (every export's, in order).
func (r *Receiver) Metrics() []*metricpb.Metric {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*metricpb.Metric(nil), r.metrics...)
}

// Attrs turns OTLP attributes into strings by key.
func Attrs(kvs []*commonpb.KeyValue) map[string]string {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		v := kv.GetValue()
		switch {
		case v.GetStringValue() != "":
			out[kv.GetKey()] = v.GetStringValue()
		case v.GetIntValue() != 0:
			out[kv.GetKey()] = strconv.FormatInt(v.GetIntValue(), 10)
		case v.GetBoolValue():
			out[kv.GetKey()] = "true"
		default:
			out[kv.GetKey()] = v.String()
		}
	}
	return out
}
