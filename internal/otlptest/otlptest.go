package otlptest

import (
	"compress/gzip"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// Receiver is an OTLP collector on loopback: gRPC (Start) or HTTP
// (StartHTTP).
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

// StartHTTP starts a receiver of OTLP/HTTP (protobuf bodies at
// /v1/traces and /v1/metrics); it stops when the test ends. Its URL is
// the collector's base, http://127.0.0.1:PORT.
func StartHTTP(t testing.TB) *Receiver {
	r := &Receiver{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, req *http.Request) {
		var in coltracepb.ExportTraceServiceRequest
		if !readProto(w, req, &in) {
			return
		}
		out, _ := traces{r: r}.Export(req.Context(), &in)
		writeProto(w, out)
	})
	mux.HandleFunc("POST /v1/metrics", func(w http.ResponseWriter, req *http.Request) {
		var in colmetricpb.ExportMetricsServiceRequest
		if !readProto(w, req, &in) {
			return
		}
		out, _ := metrics{r: r}.Export(req.Context(), &in)
		writeProto(w, out)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

func readProto(w http.ResponseWriter, req *http.Request, m proto.Message) bool {
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		z, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return false
		}
		body = z
	}
	b, err := io.ReadAll(body)
	if err == nil {
		err = proto.Unmarshal(b, m)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

func writeProto(w http.ResponseWriter, m proto.Message) {
	b, _ := proto.Marshal(m)
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(b)
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
