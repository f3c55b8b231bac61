package llm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// A Limiter also watches its endpoint's health, for every call through it
// at once: a call that fails because the endpoint is down — connection
// refused, a timeout, a 5xx or a 429 that outlasted the client's retries —
// is not the item's failure, and no other call is sent while it lasts.
// The calls wait (an activity's heartbeats go on) while one call at a time
// tries the endpoint again, after 1 s, then twice as long each time up to
// 30 s; when it answers, they all go. A failure that waiting does not
// heal (401, 403, 404: a key refused, an unknown model or a wrong URL)
// fails every call at once with an *EndpointError. Health says where
// things stand, for a reporter; Patience bounds the wait.

// Fault says whose a failed model call's failure is.
type Fault int

const (
	// FaultNone: the endpoint answered; a failure is the request's own (a
	// request it refuses, an answer that breaks its schema).
	FaultNone Fault = iota
	// FaultDown: the endpoint is down or overloaded — waiting heals it.
	FaultDown
	// FaultRefused: the endpoint refuses every request (401, 403, 404) —
	// waiting does not heal it.
	FaultRefused
)

// Classify says whose err, a provider's error, is.
func Classify(err error) Fault {
	if err == nil || errors.Is(err, context.Canceled) {
		return FaultNone
	}
	var ee *EndpointError
	if errors.As(err, &ee) {
		if ee.Refused {
			return FaultRefused
		}
		return FaultDown
	}
	var ae *APIError
	if errors.As(err, &ae) {
		switch s := ae.StatusCode; {
		case s == http.StatusUnauthorized, s == http.StatusForbidden, s == http.StatusNotFound:
			return FaultRefused
		case s == 0 && ae.Retryable, s == http.StatusRequestTimeout, s == http.StatusTooManyRequests, s >= 500:
			return FaultDown
		}
		return FaultNone
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) {
		return FaultDown
	}
	return FaultNone
}

// EndpointError is the error of a call that failed for its endpoint, not
// for itself: an endpoint that refuses every request, or one down for
// longer than the limiter's patience. Err is the endpoint's last failure.
type EndpointError struct {
	Refused bool
	Since   time.Time
	Err     error
}

func (e *EndpointError) Error() string {
	if e.Refused {
		return fmt.Sprintf("the model endpoint refuses every request: %v", e.Err)
	}
	return fmt.Sprintf("the model endpoint has not answered since %s: %v", e.Since.Format(time.TimeOnly), e.Err)
}

func (e *EndpointError) Unwrap() error { return e.Err }

// errStillDown is the error of a call whose context is about to end while
// the endpoint is down: the caller (an activity near its timeout) tries
// again later, without having sent anything.
var errStillDown = errors.New("the model endpoint is still down")

// Health is what a Limiter knows of its endpoint.
type Health struct {
	// Down is when the endpoint stopped answering; zero while it answers.
	Down time.Time
	// Failures counts the calls that failed in a row for the endpoint, and
	// Last is the last one's error.
	Failures int
	Last     error
	// Next is when a call tries the endpoint again.
	Next time.Time
	// Waiting counts the calls that wait for it.
	Waiting int
	// Refused is set once the endpoint refused a request for good.
	Refused error
	// Recovered is when it last answered after being down, and Outage how
	// long it had been down then.
	Recovered time.Time
	Outage    time.Duration
}

// health is a Limiter's record of its endpoint, guarded by its mu.
type health struct {
	Health
	probing  bool
	patience time.Duration // 0: wait as long as the calls' contexts let them
}

// Health says where the endpoint stands.
func (l *Limiter) Health() Health {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.health.Health
}

// Patience bounds how long calls wait for an endpoint that is down: once
// it has been down for d, every call fails with an *EndpointError. 0 (the
// default) waits as long as each call's context lets it.
func (l *Limiter) Patience(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.health.patience = d
}

// DefaultPatience is how long a command's calls wait for an endpoint that
// is down before they fail with an *EndpointError.
const DefaultPatience = 30 * time.Minute

// retryUnit is the first wait after an endpoint failed; tests shorten it.
var retryUnit = time.Second

// retryWait is how long the endpoint is left alone after n failures in a
// row: 1 s, then twice as long each time, at most 30 s.
func retryWait(n int) time.Duration {
	d := retryUnit
	for i := 1; i < n && d < 30*retryUnit; i++ {
		d *= 2
	}
	return min(d, 30*retryUnit)
}

// stillDownMargin is how long before its context ends a waiting call
// gives up (errStillDown), so that an activity fails in good order rather
// than by its timeout.
const stillDownMargin = 3 * time.Second

// awaitEndpoint returns when a call may go to the endpoint: at once while
// it answers; while it is down, when this call is the one that tries it
// again. It fails with an *EndpointError when the endpoint refuses every
// request or has been down past the patience, and with errStillDown when
// ctx is about to end.
func (l *Limiter) awaitEndpoint(ctx context.Context) error {
	waiting := false
	defer func() {
		if waiting {
			l.mu.Lock()
			l.health.Waiting--
			l.mu.Unlock()
		}
	}()
	for {
		l.mu.Lock()
		h := &l.health
		now := time.Now()
		switch {
		case h.Refused != nil:
			err := &EndpointError{Refused: true, Since: h.Down, Err: h.Refused}
			l.mu.Unlock()
			return err
		case h.Down.IsZero():
			l.mu.Unlock()
			return nil
		case h.patience > 0 && now.Sub(h.Down) > h.patience:
			err := &EndpointError{Since: h.Down, Err: h.Last}
			l.mu.Unlock()
			return err
		case !h.probing && !now.Before(h.Next):
			h.probing = true
			l.mu.Unlock()
			return nil
		}
		if !waiting {
			waiting = true
			h.Waiting++
		}
		wake, wait := l.wake, max(h.Next.Sub(now), 100*time.Millisecond)
		l.mu.Unlock()
		if dl, ok := ctx.Deadline(); ok {
			if left := time.Until(dl) - stillDownMargin; left <= 0 {
				return fmt.Errorf("%w: %v", errStillDown, l.Health().Last)
			} else if left < wait {
				wait = left
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// Watch has f told of each change of the endpoint's health that a call
// brings — a failure that is the endpoint's, a refusal, its answering
// again after being down — with the health after it: what a reporter
// prints (vibe's commands say on stderr that the endpoint is down). f is
// called outside the limiter's lock, from the call's goroutine; nil stops
// telling.
func (l *Limiter) Watch(f func(Health)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.watch = f
}

// settle records what a call through the endpoint came to, and tells
// Watch's f of a change.
func (l *Limiter) settle(ctx context.Context, err error) {
	h, changed := l.settled(ctx, err)
	l.mu.Lock()
	f := l.watch
	l.mu.Unlock()
	if changed && f != nil {
		f(h)
	}
}

// settled is settle under the lock: the health after the call, and
// whether it changed in a way Watch tells.
func (l *Limiter) settled(ctx context.Context, err error) (Health, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := &l.health
	probe := h.probing
	h.probing = false
	fault := Classify(err)
	if ctx.Err() != nil && fault == FaultDown {
		fault = FaultNone // the caller gave up, not the endpoint
		if !probe {
			return h.Health, false
		}
	}
	changed := false
	switch fault {
	case FaultNone:
		if err != nil && ctx.Err() != nil {
			break // a call cut short tells nothing of the endpoint
		}
		if !h.Down.IsZero() {
			h.Recovered, h.Outage = time.Now(), time.Since(h.Down)
			changed = h.Refused == nil
		}
		h.Down, h.Failures, h.Next = time.Time{}, 0, time.Time{}
	case FaultRefused:
		changed = h.Refused == nil
		h.Refused, h.Last = err, err
		if h.Down.IsZero() {
			h.Down = time.Now()
		}
	case FaultDown:
		now := time.Now()
		if h.Down.IsZero() {
			h.Down = now
		}
		h.Failures++
		h.Last = err
		h.Next = now.Add(retryWait(h.Failures))
		changed = true
	}
	l.signal()
	return h.Health, changed
}

// complete sends req through p once the endpoint may be called, and while
// the endpoint is down sends it again when it answers: a failure that is
// the endpoint's is never the caller's, unless it refuses every request
// or the patience runs out (an *EndpointError).
func (l *Limiter) complete(ctx context.Context, p Provider, req *Request) (*Response, error) {
	for {
		if err := l.awaitEndpoint(ctx); err != nil {
			return nil, err
		}
		release, err := l.Acquire(ctx)
		if err != nil {
			l.settle(ctx, err)
			return nil, err
		}
		start := time.Now()
		resp, err := p.Complete(ctx, req)
		release(time.Since(start), err == nil)
		l.settle(ctx, err)
		if Classify(err) != FaultDown || ctx.Err() != nil {
			if Classify(err) == FaultRefused {
				return nil, &EndpointError{Refused: true, Since: start, Err: err}
			}
			return resp, err
		}
	}
}
