package llm

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// DefaultConcurrency is the model calls a Limiter lets run at once to
// begin with. Providers limit requests and tokens per minute rather than
// calls at once, so this is a start, not a ceiling: the limit grows while
// calls keep their latency and halves when the endpoint answers 429.
const DefaultConcurrency = 32

// Limiter paces the model calls to one endpoint, for every workflow of a
// worker at once: at most Limit calls in flight. Its limit adapts — while
// it is in use, it grows by about one call per two rounds of calls that
// come back in time (no slower than twice the fastest seen), and halves when the endpoint says
// it is over its rate (HTTP 429), after which no call starts until the
// endpoint's Retry-After has passed. A fixed limit (LimiterOptions.Fixed)
// does not grow, but still backs off.
//
// Wrap a provider with it (Limiter.Provider) so that each request takes a
// slot, and give the SDK client its Transport, through which it sees each
// 429 — the SDKs retry them on their own, so the provider's error alone
// would hide all but the last.
type Limiter struct {
	opts LimiterOptions

	mu       sync.Mutex
	limit    float64 // fractional, for the additive growth
	inflight int
	wake     chan struct{} // closed when a slot frees or a pause ends
	pause    time.Time     // no call starts before it (Retry-After)
	lastCut  time.Time
	best     time.Duration // the fastest call seen
	stats    LimiterStats
	health   health       // the endpoint's (breaker.go)
	watch    func(Health) // Watch's
}

// LimiterOptions configure a Limiter; the zero value starts at
// DefaultConcurrency and adapts.
type LimiterOptions struct {
	// Start is the calls in flight at first; 0 means DefaultConcurrency.
	Start int
	// Max bounds the growth; 0 means 8 × Start.
	Max int
	// Fixed keeps the limit at Start: it does not grow, though it halves
	// on 429 and grows back to Start.
	Fixed bool
}

// LimiterStats say what a Limiter did: the limit it started at and has
// now, the lowest and highest it reached, the most calls it had in flight,
// and the 429 answers it saw.
type LimiterStats struct {
	Start    int `json:"start"`
	Limit    int `json:"limit"`
	Low      int `json:"low"`
	High     int `json:"high"`
	MaxCalls int `json:"maxCalls"`
	Refused  int `json:"refused"`
}

// NewLimiter returns a Limiter.
func NewLimiter(opts LimiterOptions) *Limiter {
	if opts.Start <= 0 {
		opts.Start = DefaultConcurrency
	}
	switch {
	case opts.Fixed:
		opts.Max = opts.Start
	case opts.Max <= 0:
		opts.Max = 8 * opts.Start
	}
	l := &Limiter{opts: opts, limit: float64(opts.Start), wake: make(chan struct{})}
	l.stats = LimiterStats{Start: opts.Start, Limit: opts.Start, Low: opts.Start, High: opts.Start}
	return l
}

// Limit is the calls the limiter lets run at once now.
func (l *Limiter) Limit() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return int(l.limit)
}

// Stats says what the limiter did so far.
func (l *Limiter) Stats() LimiterStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.stats
	s.Limit = int(l.limit)
	return s
}

// Acquire waits for a slot, or ctx's end. The returned release gives it
// back with how long the call took and whether it succeeded.
func (l *Limiter) Acquire(ctx context.Context) (release func(latency time.Duration, ok bool), err error) {
	for {
		l.mu.Lock()
		now := time.Now()
		if l.inflight < int(l.limit) && !now.Before(l.pause) {
			l.inflight++
			l.stats.MaxCalls = max(l.stats.MaxCalls, l.inflight)
			l.mu.Unlock()
			var once sync.Once
			return func(latency time.Duration, ok bool) { once.Do(func() { l.release(latency, ok) }) }, nil
		}
		wake, wait := l.wake, l.pause.Sub(now)
		l.mu.Unlock()
		var timer <-chan time.Time
		if wait > 0 {
			t := time.NewTimer(wait)
			defer t.Stop()
			timer = t.C
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-wake:
		case <-timer:
		}
	}
}

// release frees a slot; a call that came back in time lets the limit grow.
func (l *Limiter) release(latency time.Duration, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	// A limit the calls use — half of it or more in flight — is one that
	// may be holding calls back.
	busy := 2*l.inflight >= int(l.limit)
	l.inflight--
	if ok && latency > 0 {
		if l.best == 0 || latency < l.best {
			l.best = latency
		}
		// Additive growth, about one call per two rounds of calls, while
		// the limit is in use and latency holds.
		if busy && latency <= 2*l.best && l.limit < float64(l.opts.Max) {
			l.limit = math.Min(float64(l.opts.Max), l.limit+1/l.limit)
			l.stats.High = max(l.stats.High, int(l.limit))
		}
	}
	l.signal()
}

// Refused tells the limiter the endpoint answered 429, asking to wait
// retryAfter (0: not said) before the next call: the limit halves — once
// per burst of refusals, not once per refused call — and no call starts
// before the wait is over.
func (l *Limiter) Refused(retryAfter time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	l.stats.Refused++
	if retryAfter <= 0 {
		retryAfter = time.Second
	}
	if until := now.Add(retryAfter); until.After(l.pause) {
		l.pause = until
	}
	if now.Sub(l.lastCut) > max(retryAfter, l.best) {
		l.limit = math.Max(1, math.Floor(l.limit/2))
		l.lastCut = now
		l.stats.Low = min(l.stats.Low, int(l.limit))
	}
	l.signal()
}

// signal wakes the waiters; l.mu is held.
func (l *Limiter) signal() {
	close(l.wake)
	l.wake = make(chan struct{})
}

// String says what the limiter did, for a summary: "32 calls at once,
// grew to 40" or "started at 32, fell to 8 after 3 refusals (429), …".
func (l *Limiter) String() string {
	s := l.Stats()
	text := fmt.Sprintf("%d calls at once", s.Start)
	if l.opts.Fixed {
		text = fmt.Sprintf("at most %d calls at once", s.Start)
	}
	if s.Refused > 0 {
		text += fmt.Sprintf(", fell to %d after %d refusals (429)", s.Low, s.Refused)
		if s.Limit != s.Low {
			text += fmt.Sprintf(", back to %d", s.Limit)
		}
	} else if s.High > s.Start {
		text += fmt.Sprintf(", grew to %d", s.High)
	}
	return text + fmt.Sprintf("; at most %d in flight", s.MaxCalls)
}

// Transport returns base telling the limiter of each 429 it gets, with the
// wait its Retry-After (or retry-after-ms) asks for. A nil base is
// http.DefaultTransport's copy that keeps as many idle connections to the
// endpoint as the limiter may have calls in flight, so that each call does
// not open one anew.
func (l *Limiter) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = l.opts.Max
		base = t
	}
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := base.RoundTrip(req)
		if err == nil && resp.StatusCode == http.StatusTooManyRequests {
			l.Refused(RetryAfter(resp.Header))
		}
		return resp, err
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// RetryAfter is the wait a response's headers ask for: retry-after-ms
// (OpenAI's), or Retry-After in seconds or as an HTTP date; 0 when they
// ask for none.
func RetryAfter(h http.Header) time.Duration {
	if ms, err := strconv.ParseFloat(h.Get("Retry-After-Ms"), 64); err == nil && ms > 0 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	v := h.Get("Retry-After")
	if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// Provider wraps p so that each request takes one of the limiter's slots
// for as long as it runs, the provider's own retries included.
func (l *Limiter) Provider(p Provider) Provider { return &limited{Provider: p, l: l} }

// limited is a provider whose requests take a Limiter's slots.
type limited struct {
	Provider
	l *Limiter
}

func (p *limited) Complete(ctx context.Context, req *Request) (*Response, error) {
	return p.l.complete(ctx, p.Provider, req) // waits out an endpoint that is down (breaker.go)
}

// Unwrap is the provider the limiter paces (Wrapper).
func (p *limited) Unwrap() Provider { return p.Provider }

// Limiter is the limiter p's requests go through.
func (p *limited) Limiter() *Limiter { return p.l }

// System and Model are the wrapped provider's, when it says (Describer).
func (p *limited) System() string {
	if d, ok := p.Provider.(Describer); ok {
		return d.System()
	}
	return ""
}

// Model is the wrapped provider's model, when it says.
func (p *limited) Model() string {
	if d, ok := p.Provider.(Describer); ok {
		return d.Model()
	}
	return ""
}

// LimiterOf is the limiter p's requests go through, found through
// wrappers (Wrapper); nil when they go through none.
func LimiterOf(p Provider) *Limiter {
	for p != nil {
		if lp, ok := p.(*limited); ok {
			return lp.l
		}
		w, ok := p.(Wrapper)
		if !ok {
			return nil
		}
		p = w.Unwrap()
	}
	return nil
}

// ModelOf is the model p's requests go to, as the first provider that
// says (Describer) through wrappers (Wrapper) says it; "" when none does.
func ModelOf(p Provider) string {
	for p != nil {
		if d, ok := p.(Describer); ok && d.Model() != "" {
			return d.Model()
		}
		w, ok := p.(Wrapper)
		if !ok {
			return ""
		}
		p = w.Unwrap()
	}
	return ""
}
