package llm

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// Bounds of one model call. An endpoint that sends its headers and then a
// byte a second defeats an idle timeout alone, so an attempt has a
// deadline too (the SDK client's request timeout: CallTimeout); one that
// answers without end is cut at MaxBodySize, and an answer past
// MaxAnswerSize is refused before it is parsed, repaired or kept.
const (
	// CallTimeout bounds one attempt of a model call, from the request
	// to the answer's last byte.
	CallTimeout = 10 * time.Minute
	// IdleTimeout bounds the wait for the next bytes of an answer's body.
	IdleTimeout = time.Minute
	// MaxAnswerSize bounds the answer a model writes (the content, or the
	// forced call's arguments): the engine keeps no more of one step
	// (durable.MaxResultSize), and a repair turn would send it back.
	MaxAnswerSize = 1 << 20
	// MaxBodySize bounds an answer's HTTP body: the answer escaped as a
	// JSON string (up to six bytes a character) and its envelope.
	MaxBodySize = 8 * MaxAnswerSize
)

// AnswerTooLargeError is the error of an answer past MaxAnswerSize (or a
// body past MaxBodySize). The same request would be answered as long
// again, so it is not retried; it is an ErrCutOff, so that a batch halves
// a call that gets it.
type AnswerTooLargeError struct {
	Size  int64 // the answer's size, or what was read of the body
	Limit int64
}

func (e *AnswerTooLargeError) Error() string {
	return fmt.Sprintf("the model's answer is %d bytes or more, over the limit of %d", e.Size, e.Limit)
}

// Is makes the error an ErrCutOff.
func (e *AnswerTooLargeError) Is(target error) bool { return target == ErrCutOff }

// ErrMalformedAnswer is the error of an answer whose envelope cannot be
// true: negative token counts, from a model or a recording.
var ErrMalformedAnswer = errors.New("the model's answer is malformed")

// checkAnswer refuses an answer past MaxAnswerSize or with negative usage.
func checkAnswer(resp *Response) error {
	if n := int64(len(resp.Content)); n > MaxAnswerSize {
		return &AnswerTooLargeError{Size: n, Limit: MaxAnswerSize}
	}
	u := resp.Usage
	if u.PromptTokens < 0 || u.CompletionTokens < 0 || u.CachedPromptTokens < 0 || u.CacheWriteTokens < 0 {
		return fmt.Errorf("%w: negative token counts (%d prompt, %d completion, %d cached, %d cache-written)",
			ErrMalformedAnswer, u.PromptTokens, u.CompletionTokens, u.CachedPromptTokens, u.CacheWriteTokens)
	}
	return nil
}

// BoundAnswer bounds the body of resp, a model call's answer, as
// BoundTransport does: providers call it from their SDK's middleware on
// each model call (and not on a batch's result files, which are larger).
func BoundAnswer(resp *http.Response, err error, idle time.Duration) (*http.Response, error) {
	if err != nil || resp == nil || resp.Body == nil {
		return resp, err
	}
	if idle <= 0 {
		idle = IdleTimeout
	}
	resp.Body = newBoundedBody(resp.Body, idle, MaxBodySize)
	return resp, nil
}

// BoundTransport is base (nil: http.DefaultTransport) with every answer's
// body bounded: a read that waits longer than idle (0: IdleTimeout) for
// its next bytes fails, and so does a body past MaxBodySize.
func BoundTransport(base http.RoundTripper, idle time.Duration) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	if idle <= 0 {
		idle = IdleTimeout
	}
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := base.RoundTrip(req)
		return BoundAnswer(resp, err, idle)
	})
}

// boundedBody is a body whose reads wait at most idle, and of at most max
// bytes: past either, the body is closed and reads fail.
type boundedBody struct {
	rc    io.ReadCloser
	idle  time.Duration
	max   int64
	read  int64
	timer *time.Timer

	mu      sync.Mutex
	stalled bool
}

func newBoundedBody(rc io.ReadCloser, idle time.Duration, max int64) *boundedBody {
	b := &boundedBody{rc: rc, idle: idle, max: max}
	b.timer = time.AfterFunc(idle, func() {
		b.mu.Lock()
		b.stalled = true
		b.mu.Unlock()
		rc.Close() // a read waiting on it returns
	})
	return b
}

// errStalled is the error of a body that sent nothing for its idle time.
type errStalled struct{ idle time.Duration }

func (e errStalled) Error() string {
	return fmt.Sprintf("the model endpoint sent nothing of its answer for %s", e.idle)
}

// Timeout makes it a net.Error that timed out: a transport failure, which
// says the endpoint is down (Classify).
func (e errStalled) Timeout() bool   { return true }
func (e errStalled) Temporary() bool { return true }

func (b *boundedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.read += int64(n)
	b.mu.Lock()
	stalled := b.stalled
	b.mu.Unlock()
	switch {
	case stalled:
		return n, errStalled{b.idle}
	case b.read > b.max:
		b.timer.Stop()
		b.rc.Close()
		return n, &AnswerTooLargeError{Size: b.read, Limit: b.max}
	case err != nil:
		b.timer.Stop()
	default:
		b.timer.Reset(b.idle)
	}
	return n, err
}

func (b *boundedBody) Close() error {
	b.timer.Stop()
	return b.rc.Close()
}
