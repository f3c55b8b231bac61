package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		err  error
		want Fault
	}{
		{nil, FaultNone},
		{&APIError{Message: "dial tcp: connection refused", Retryable: true}, FaultDown},
		{&APIError{StatusCode: 500, Retryable: true}, FaultDown},
		{&APIError{StatusCode: 503, Retryable: true}, FaultDown},
		{&APIError{StatusCode: 429, Retryable: true}, FaultDown},
		{&APIError{StatusCode: 408}, FaultDown},
		{&APIError{StatusCode: 401}, FaultRefused},
		{&APIError{StatusCode: 403}, FaultRefused},
		{&APIError{StatusCode: 404, Message: "The model `gpt-9` does not exist"}, FaultRefused},
		{&APIError{StatusCode: 400, Message: "bad schema"}, FaultNone},
		{&APIError{StatusCode: 413, TooLarge: true}, FaultNone},
		{fmt.Errorf("step x: %w", ErrCutOff), FaultNone},
		{context.Canceled, FaultNone},
		{&net.OpError{Op: "dial", Err: errors.New("connection refused")}, FaultDown},
		{errStalled{time.Second}, FaultDown},
	}
	for _, tt := range tests {
		if got := Classify(tt.err); got != tt.want {
			t.Errorf("Classify(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}

// flaky is a provider whose endpoint fails with err until up is set, and
// counts what reaches it. With hold > 0, the first hold calls wait for
// each other before they fail (they are in flight before the endpoint is
// seen down); every later call that reaches it while it is down is a
// probe, and overlap says whether two probes were ever in flight at once.
type flaky struct {
	mu       sync.Mutex
	up       bool
	err      error
	calls    int
	downAt   int // calls that reached it while it was down
	hold     int
	held     chan struct{}
	probing  int
	overlaps int
}

func (f *flaky) Complete(ctx context.Context, req *Request) (*Response, error) {
	f.mu.Lock()
	f.calls++
	if f.up {
		f.mu.Unlock()
		return &Response{Content: `{}`, Model: "m"}, nil
	}
	f.downAt++
	if f.downAt <= f.hold {
		if f.held == nil {
			f.held = make(chan struct{})
		}
		held := f.held
		if f.downAt == f.hold {
			close(held)
		}
		f.mu.Unlock()
		<-held
		return nil, f.err
	}
	f.probing++
	if f.probing > 1 {
		f.overlaps++
	}
	f.mu.Unlock()
	time.Sleep(time.Millisecond) // long enough for another probe to overlap, were there one
	f.mu.Lock()
	f.probing--
	f.mu.Unlock()
	return nil, f.err
}

func (f *flaky) set(up bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.up = up
}

func shortRetries(t *testing.T) {
	old := retryUnit
	retryUnit = 20 * time.Millisecond
	t.Cleanup(func() { retryUnit = old })
}

// TestBreakerWaitsOut: calls to an endpoint that is down fail none of
// them: while it is down only one call at a time tries it, the others
// wait, and all go once it answers; Health says so along the way.
func TestBreakerWaitsOut(t *testing.T) {
	shortRetries(t)
	const n = 10
	f := &flaky{hold: n, err: &APIError{Message: "dial tcp 127.0.0.1:9: connect: connection refused", Retryable: true}}
	l := NewLimiter(LimiterOptions{Start: n, Fixed: true})
	p := l.Provider(f)
	ctx := context.Background()
	var wg sync.WaitGroup
	var failed atomic.Int32
	for range n {
		wg.Go(func() {
			if _, err := p.Complete(ctx, &Request{Name: "x"}); err != nil {
				failed.Add(1)
				t.Error(err)
			}
		})
	}
	for {
		h := l.Health()
		if h.Failures >= n+3 && h.Waiting > 0 {
			if h.Down.IsZero() || h.Last == nil || !strings.Contains(h.Last.Error(), "connection refused") || h.Next.IsZero() {
				t.Errorf("health while down: %+v", h)
			}
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	f.set(true)
	wg.Wait()
	h := l.Health()
	if failed.Load() != 0 || !h.Down.IsZero() || h.Recovered.IsZero() || h.Outage <= 0 || h.Waiting != 0 {
		t.Errorf("after the endpoint came back: %d failed, health %+v", failed.Load(), h)
	}
	if f.overlaps != 0 {
		t.Errorf("while the endpoint was down, %d calls tried it while another did", f.overlaps)
	}
}

// TestBreakerRefused: an endpoint that refuses every request (401) fails
// the calls waiting and to come at once, sending nothing more.
func TestBreakerRefused(t *testing.T) {
	f := &flaky{err: &APIError{StatusCode: 401, Message: "Incorrect API key provided"}}
	l := NewLimiter(LimiterOptions{Start: 1, Fixed: true})
	p := l.Provider(f)
	for i := range 3 {
		_, err := p.Complete(context.Background(), &Request{Name: "x"})
		var ee *EndpointError
		if !errors.As(err, &ee) || !ee.Refused || !strings.Contains(err.Error(), "Incorrect API key") || Classify(err) != FaultRefused {
			t.Errorf("call %d: %v", i, err)
		}
	}
	if f.calls != 1 {
		t.Errorf("%d calls reached an endpoint that refused the first", f.calls)
	}
}

// TestBreakerPatience: past its patience, a limiter fails the calls that
// wait for an endpoint that is down; a call whose context is about to end
// gives up before it, having sent nothing.
func TestBreakerPatience(t *testing.T) {
	shortRetries(t)
	f := &flaky{err: &APIError{StatusCode: 503, Message: "overloaded", Retryable: true}}
	l := NewLimiter(LimiterOptions{})
	l.Patience(300 * time.Millisecond)
	_, err := l.Provider(f).Complete(context.Background(), &Request{Name: "x"})
	var ee *EndpointError
	if !errors.As(err, &ee) || ee.Refused || !strings.Contains(err.Error(), "has not answered since") || !strings.Contains(err.Error(), "overloaded") {
		t.Errorf("past the patience: %v", err)
	}

	// A call whose context ends soon gives up before it does, in good
	// order (errStillDown, not the context's error).
	l2 := NewLimiter(LimiterOptions{})
	l2.Patience(100 * time.Millisecond)
	l2.Provider(f).Complete(context.Background(), &Request{Name: "x"}) // down now
	l2.Patience(0)
	ctx, cancel := context.WithTimeout(context.Background(), stillDownMargin+200*time.Millisecond)
	defer cancel()
	if _, err := l2.Provider(f).Complete(ctx, &Request{Name: "x"}); !errors.Is(err, errStillDown) || ctx.Err() != nil {
		t.Errorf("a call near its deadline: %v (its context: %v)", err, ctx.Err())
	}
}

// TestBounds: an answer's body that stalls, or has no end, is cut off; an
// answer past MaxAnswerSize or with negative usage is refused by Complete.
func TestBounds(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		switch r.URL.Path {
		case "/drip":
			for range 50 {
				w.Write([]byte(" "))
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
					return
				case <-time.After(400 * time.Millisecond):
				}
			}
		case "/endless":
			chunk := make([]byte, 64<<10)
			for {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}
	}))
	defer srv.Close()
	c := &http.Client{Transport: BoundTransport(nil, 100*time.Millisecond)}
	resp, err := c.Get(srv.URL + "/drip")
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(resp.Body)
	if ne, ok := errors.AsType[net.Error](err); !ok || !ne.Timeout() || Classify(err) != FaultDown {
		t.Errorf("a stalled body: %v", err)
	}
	resp, err = c.Get(srv.URL + "/endless")
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	if tl, ok := errors.AsType[*AnswerTooLargeError](err); !ok || n > MaxBodySize+64<<10 || tl.Limit != MaxBodySize {
		t.Errorf("an endless body: %d bytes, %v", n, err)
	}

	for _, tt := range []struct {
		resp *Response
		want string
	}{
		{&Response{Content: strings.Repeat("x", MaxAnswerSize+1)}, "over the limit of 1048576"},
		{&Response{Content: `{}`, Usage: Usage{PromptTokens: -5, CompletionTokens: 3}}, "malformed: negative token counts (-5 prompt, 3 completion"},
	} {
		_, err := Complete(context.Background(), fixed{tt.resp}, &Request{Name: "x"})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("got %v, want %q", err, tt.want)
		}
	}
}

type fixed struct{ r *Response }

func (f fixed) Complete(context.Context, *Request) (*Response, error) { return f.r, nil }
