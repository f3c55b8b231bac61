package durable

import (
	"context"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/augceo/vibe/llm"
)

// Every activity that waits on the outside (a model, an action, a
// delegate) heartbeats, so that when its worker dies the engine gives it to
// another within HeartbeatTimeout instead of waiting out the attempt's
// whole timeout.

// HeartbeatTimeout is how long the engine waits for a running activity's
// heartbeat before it retries the activity elsewhere: after a crash, the
// work resumes within about this long of the restart.
const HeartbeatTimeout = 10 * time.Second

// heartbeatEvery is how often a running activity heartbeats; the SDK
// throttles what it sends to the engine, so this only bounds the delay.
const heartbeatEvery = HeartbeatTimeout / 4

// KeepAlive heartbeats for the activity of ctx until the returned stop is
// called. A heartbeat also tells the activity when it was cancelled, which
// then ends ctx.
func KeepAlive(ctx context.Context) (stop func()) { return KeepAliveWith(ctx, nil) }

// KeepAliveWith is KeepAlive with details: each heartbeat carries what
// details returns (nil: none), for the activity's next attempt to read
// (activity.GetHeartbeatDetails) should this one die.
func KeepAliveWith(ctx context.Context, details func() any) (stop func()) {
	if !activity.IsActivity(ctx) {
		return func() {}
	}
	beat := func() {
		if details == nil {
			activity.RecordHeartbeat(ctx)
			return
		}
		activity.RecordHeartbeat(ctx, details())
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(heartbeatEvery)
		defer t.Stop()
		// The first heartbeat waits a tick: the SDK sends an attempt's
		// first heartbeat at once and holds the later ones back, and the
		// first that matters may be the activity's own (Sent's count).
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			beat()
		}
	}()
	return func() { close(done) }
}

// Sent is a model provider that counts the requests an activity sends,
// across its attempts: each request is counted in the activity's
// heartbeat as it goes, so that when an attempt dies with a request in
// flight (its worker killed) the next attempt knows, and a request the
// model received is counted once, whichever attempt sent it. Heartbeat
// with Details (KeepAliveWith) so that the count is not overwritten.
type Sent struct {
	llm.Provider
	ctx     context.Context
	earlier int64 // sent by the activity's earlier attempts
	n       atomic.Int64
	mu      sync.Mutex
	usage   llm.Usage // of the answers this attempt got
}

// SentDetails is what the heartbeats of an activity that asks a model
// carry (Sent.Details): the requests sent by all its attempts, and the
// usage of the answers this attempt got — what the activity spent so far,
// which a cancelled activity gives back in its CanceledError.
type SentDetails struct {
	Requests int64     `json:"requests"`
	Usage    llm.Usage `json:"usage,omitzero"`
}

// CountSent wraps p for the activity of ctx.
func CountSent(ctx context.Context, p llm.Provider) *Sent {
	s := &Sent{Provider: p, ctx: ctx}
	if activity.IsActivity(ctx) && activity.HasHeartbeatDetails(ctx) {
		var d SentDetails
		if activity.GetHeartbeatDetails(ctx, &d) == nil {
			s.earlier = d.Requests
		} else {
			_ = activity.GetHeartbeatDetails(ctx, &s.earlier) // a count alone, as attempts before SentDetails beat
		}
	}
	return s
}

// Complete sends the request, and counts it and heartbeats the count once
// it is on the wire (its HTTP request written): a request the process was
// killed before sending is not counted, one the model may have received
// is. A provider that answers without HTTP (a recording) has its request
// counted when it answers.
func (s *Sent) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	var counted atomic.Bool
	count := func() {
		if !counted.CompareAndSwap(false, true) {
			return
		}
		s.n.Add(1)
		if activity.IsActivity(s.ctx) {
			activity.RecordHeartbeat(s.ctx, s.Details())
		}
	}
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { count() }})
	resp, err := s.Provider.Complete(ctx, req)
	if err == nil {
		s.mu.Lock()
		s.usage = s.usage.Add(resp.Usage)
		s.mu.Unlock()
		count()
	}
	return resp, err
}

// System and Model are the wrapped provider's, when it says (llm.Describer).
func (s *Sent) System() string {
	if d, ok := s.Provider.(llm.Describer); ok {
		return d.System()
	}
	return ""
}

// Model is the wrapped provider's model, when it says.
func (s *Sent) Model() string {
	if d, ok := s.Provider.(llm.Describer); ok {
		return d.Model()
	}
	return ""
}

// Unwrap is the provider s counts for (llm.Wrapper).
func (s *Sent) Unwrap() llm.Provider { return s.Provider }

// Details is what the activity's heartbeats carry: a SentDetails, the
// requests sent so far by every attempt and the usage of this attempt's
// answers.
func (s *Sent) Details() any { return s.Spent() }

// Spent is what the activity has spent so far: the requests sent by every
// attempt, and the usage of the answers this attempt got.
func (s *Sent) Spent() SentDetails {
	s.mu.Lock()
	defer s.mu.Unlock()
	return SentDetails{Requests: s.earlier + s.n.Load(), Usage: s.usage}
}

// Earlier is how many requests the activity's earlier attempts sent:
// counted for the model received them, though their answers were lost.
func (s *Sent) Earlier() int { return int(s.earlier) }
