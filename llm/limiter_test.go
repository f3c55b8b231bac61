package llm

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// TestLimiterBounds: no more calls run at once than the limit; a call
// waits for a slot, or its context.
func TestLimiterBounds(t *testing.T) {
	l := NewLimiter(LimiterOptions{Start: 3, Fixed: true})
	ctx := context.Background()
	var releases []func(time.Duration, bool)
	for range 3 {
		r, err := l.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, r)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := l.Acquire(short); err == nil {
		t.Fatal("a fourth call got a slot of three")
	}
	got := make(chan struct{})
	go func() {
		r, err := l.Acquire(ctx)
		if err == nil {
			r(time.Millisecond, true)
		}
		close(got)
	}()
	releases[0](time.Millisecond, true)
	<-got
	if s := l.Stats(); s.MaxCalls != 3 || s.Limit != 3 {
		t.Errorf("stats %+v", s)
	}
}

// TestLimiterAdapts: calls that use the limit and come back in time raise
// it by about one every two rounds; a 429 halves it once per burst and holds
// every call back for its Retry-After; a fixed limit does not grow.
func TestLimiterAdapts(t *testing.T) {
	ctx := context.Background()
	round := func(l *Limiter, latency time.Duration) {
		n := l.Limit()
		rs := make([]func(time.Duration, bool), n)
		for i := range rs {
			rs[i], _ = l.Acquire(ctx)
		}
		for _, r := range rs {
			r(latency, true)
		}
	}
	l := NewLimiter(LimiterOptions{Start: 4})
	for range 8 {
		round(l, 10*time.Millisecond)
	}
	if got := l.Limit(); got < 7 || got > 9 {
		t.Errorf("after 8 rounds in time from 4: limit %d, want about 8", got)
	}
	high := l.Limit()
	round(l, time.Second) // slow: latency does not hold
	if l.Limit() != high {
		t.Errorf("slow calls grew the limit to %d", l.Limit())
	}
	l.Refused(50 * time.Millisecond)
	l.Refused(50 * time.Millisecond) // the same burst
	if got := l.Limit(); got != high/2 {
		t.Errorf("after a burst of 429: limit %d, want %d", got, high/2)
	}
	start := time.Now()
	r, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r(0, true)
	if waited := time.Since(start); waited < 40*time.Millisecond {
		t.Errorf("a call started %s after a 429 asking for 50ms", waited)
	}
	if s := l.Stats(); s.Refused != 2 || s.Low != high/2 || s.High != high || s.Start != 4 {
		t.Errorf("stats %+v", s)
	}

	fixed := NewLimiter(LimiterOptions{Start: 4, Fixed: true})
	for range 8 {
		round(fixed, 10*time.Millisecond)
	}
	if fixed.Limit() != 4 {
		t.Errorf("a fixed limit grew to %d", fixed.Limit())
	}
}

// TestLimiterTransport: the transport tells the limiter of each 429 and
// the wait its headers ask for.
func TestLimiterTransport(t *testing.T) {
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		first := n == 1
		mu.Unlock()
		if first {
			w.Header().Set("Retry-After", "0.05")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	l := NewLimiter(LimiterOptions{Start: 8})
	c := &http.Client{Transport: l.Transport(nil)}
	for range 2 {
		resp, err := c.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if s := l.Stats(); s.Refused != 1 || s.Limit != 4 {
		t.Errorf("after one 429: %+v", s)
	}
}

func TestRetryAfter(t *testing.T) {
	for _, tt := range []struct {
		h    http.Header
		want time.Duration
	}{
		{http.Header{"Retry-After": {"3"}}, 3 * time.Second},
		{http.Header{"Retry-After": {"0.5"}}, 500 * time.Millisecond},
		{http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"9"}}, 250 * time.Millisecond},
		{http.Header{"Retry-After": {"soon"}}, 0},
		{http.Header{}, 0},
	} {
		if got := RetryAfter(tt.h); got != tt.want {
			t.Errorf("RetryAfter(%v) = %s, want %s", tt.h, got, tt.want)
		}
	}
}
