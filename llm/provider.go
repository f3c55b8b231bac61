package llm

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Provider sends one structured-output request to a model and returns the
// model's raw answer. It is the seam between the call path (prompt, parse,
// validate, repair, account) and a vendor's wire protocol; providers live in
// sub-packages (llm/openai, llm/anthropic, llm/replay).
//
// A Provider does not parse or validate the answer: the call path does that,
// so that every provider gets the same tolerant parsing and repair turns.
type Provider interface {
	Complete(ctx context.Context, req *Request) (*Response, error)
}

// Role is who speaks a message in a request.
type Role string

const (
	// RoleUser is text sent to the model: context, the request to fill the
	// schema, a repair turn listing validation errors.
	RoleUser Role = "user"
	// RoleAssistant is an earlier answer of the model, sent back in a repair
	// turn so that the model sees what it produced.
	RoleAssistant Role = "assistant"
)

// Message is one turn of a request's conversation.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content"`
}

// Request is what a provider sends: a system text, the conversation, and the
// schema the answer must fill.
type Request struct {
	// Name names the schema on the wire (the response format's or the tool's
	// name). Providers restrict it to [A-Za-z0-9_-], at most 64 bytes; see
	// WireName.
	Name string `json:"name"`
	// System is the system prompt; empty sends none.
	System string `json:"system,omitempty"`
	// Messages are the conversation turns, in order.
	Messages []Message `json:"messages"`
	// Schema is the projected JSON Schema as raw bytes. It goes on the wire
	// byte for byte: property order is the order the model thinks in, and a
	// Go map would sort it. A provider may adapt it to its endpoint (OpenAI's
	// strict mode) and must then undo that on the answer.
	Schema json.RawMessage `json:"schema"`
	// Temperature, when set, is the sampling temperature asked for (0 for
	// the most repeatable answers, as calibration asks); nil leaves it to
	// the endpoint. See WithTemperature.
	Temperature *float64 `json:"temperature,omitempty"`
}

// WithTemperature wraps p so that every request asks for temperature t.
func WithTemperature(p Provider, t float64) Provider { return &tempered{Provider: p, t: t} }

type tempered struct {
	Provider
	t float64
}

func (p *tempered) Complete(ctx context.Context, req *Request) (*Response, error) {
	r := *req
	r.Temperature = &p.t
	return p.Provider.Complete(ctx, &r)
}

// Unwrap is the provider p asks (Wrapper).
func (p *tempered) Unwrap() Provider { return p.Provider }

// Usage counts the tokens of one request.
type Usage struct {
	// PromptTokens are all the prompt's tokens, those read from or
	// written to the provider's prompt cache included.
	PromptTokens     int64 `json:"promptTokens"`
	CompletionTokens int64 `json:"completionTokens"`
	// CachedPromptTokens are the prompt's tokens the provider read from
	// its prompt cache, at its lower price (OpenAI's
	// prompt_tokens_details.cached_tokens, Anthropic's
	// cache_read_input_tokens); 0 when it reports none.
	CachedPromptTokens int64 `json:"cachedPromptTokens,omitempty"`
	// CacheWriteTokens are the prompt's tokens the provider wrote to its
	// prompt cache, at its higher price (Anthropic's
	// cache_creation_input_tokens).
	CacheWriteTokens int64 `json:"cacheWriteTokens,omitempty"`
	// Batched is the part of this usage whose requests went through a
	// provider's Batch API, at its discount (BatchAPI); it is counted in
	// the fields above too. Nil when none did.
	Batched *Usage `json:"batched,omitempty"`
}

// Add returns the sum of two usages.
func (u Usage) Add(v Usage) Usage {
	sum := Usage{
		PromptTokens:       u.PromptTokens + v.PromptTokens,
		CompletionTokens:   u.CompletionTokens + v.CompletionTokens,
		CachedPromptTokens: u.CachedPromptTokens + v.CachedPromptTokens,
		CacheWriteTokens:   u.CacheWriteTokens + v.CacheWriteTokens,
	}
	if u.Batched != nil || v.Batched != nil {
		b := u.Batched.orZero().Add(v.Batched.orZero())
		sum.Batched = &b
	}
	return sum
}

// AsBatched is u, all of it marked as sent through a provider's Batch API.
func (u Usage) AsBatched() Usage {
	b := u
	b.Batched = nil
	u.Batched = &b
	return u
}

// orZero is *u, or the zero Usage for nil.
func (u *Usage) orZero() Usage {
	if u == nil {
		return Usage{}
	}
	return *u
}

// Total is the prompt and completion tokens together.
func (u Usage) Total() int64 { return u.PromptTokens + u.CompletionTokens }

// Response is a provider's raw answer.
type Response struct {
	// Content is the model's answer as text: the JSON arguments of the forced
	// tool call, or the message content in structured-output mode. It may
	// still hold code fences or prose; the call path parses it.
	Content string `json:"content"`
	// Model is the model that answered, as the endpoint reports it.
	Model string `json:"model"`
	// ID is the endpoint's id of the answer (OpenAI's chatcmpl-…,
	// Anthropic's msg_…); "" when it gives none.
	ID string `json:"id,omitempty"`
	// FinishReasons are why the model stopped, as the endpoint says it,
	// one per choice ("stop", "tool_calls"; Anthropic's "tool_use").
	FinishReasons []string `json:"finishReasons,omitempty"`
	// Usage is the token usage the endpoint reported.
	Usage Usage `json:"usage"`
	// Latency is the wall time of the request, retries included.
	Latency time.Duration `json:"latency"`
	// Replayed is true when the answer came from a recording, not a model.
	// Everything that shows a replayed answer says so.
	Replayed bool `json:"replayed,omitempty"`
}

// ErrNotRecorded is the kind of failure of a provider that answers from a
// recording and has none for a request (package replay's MissingError is
// one: errors.Is(err, ErrNotRecorded)). Such an error names the request's
// step itself, so Fill returns it as it is. Trying again cannot mend it;
// recording the answer against a live model can.
var ErrNotRecorded = errors.New("no recorded answer")

// ErrBadSchema is wrapped by Fill's error when the task's schema is no
// schema the validator compiles (a pattern that is no regular expression,
// a "type" that is no type): no answer can fit it, and trying again cannot
// mend it. Nothing is sent.
var ErrBadSchema = errors.New("the schema is invalid")

// APIError is an error answer of a model endpoint, after the provider's own
// retries gave up.
type APIError struct {
	Provider   string // "openai", "anthropic"
	StatusCode int    // HTTP status; 0 when the request never got an answer
	Message    string // the endpoint's error message, or the transport error
	Retryable  bool   // a later attempt may succeed (429, 5xx, transport)
	Err        error  // the SDK's error, for errors.As
	// TooLarge says the endpoint refused the request for its size: the
	// context window, or a limit of its structured output (a compiled
	// grammar too large, too many states). A smaller request may pass
	// (ErrTooLarge).
	TooLarge bool
}

// Is makes an APIError that is TooLarge an ErrTooLarge.
func (e *APIError) Is(target error) bool { return target == ErrTooLarge && e.TooLarge }

// What a model answers that cannot be taken whole, though a smaller
// request may be: a batch halves a call that fails so (errors.Is).
var (
	// ErrTooLarge: the endpoint refused the request for its size
	// (APIError.TooLarge).
	ErrTooLarge = errors.New("the request is too large for the model")
	// ErrCutOff: the answer was cut off at the output token limit
	// (OpenAI's finish reason "length", Anthropic's stop reason
	// "max_tokens"); the same request would be cut off again.
	ErrCutOff = errors.New("the answer was cut off at the token limit")
	// ErrRefused: the model refused to answer (OpenAI's refusal,
	// Anthropic's stop reason "refusal").
	ErrRefused = errors.New("the model refused to answer")
)

// tooLargeWords are what endpoints say of a request refused for its size.
var tooLargeWords = []string{
	"context_length_exceeded", "maximum context length", "context length", "context window",
	"prompt is too long", "too many tokens", "compiled grammar is too large", "grammar is too large",
	"too many states", "schema is too large", "too large", "too many properties",
}

// TooLargeMessage reports whether an endpoint's error message (of a 400 or
// 413) says the request is too large for the model, as providers word it.
func TooLargeMessage(status int, message string) bool {
	if status != http.StatusBadRequest && status != http.StatusRequestEntityTooLarge {
		return false
	}
	m := strings.ToLower(message)
	for _, w := range tooLargeWords {
		if strings.Contains(m, w) {
			return true
		}
	}
	return status == http.StatusRequestEntityTooLarge
}

func (e *APIError) Error() string {
	if e.StatusCode == 0 {
		return fmt.Sprintf("%s: %s", e.Provider, e.Message)
	}
	return fmt.Sprintf("%s: HTTP %d: %s", e.Provider, e.StatusCode, e.Message)
}

func (e *APIError) Unwrap() error { return e.Err }

// WireName turns a step or chunk name into a name every provider accepts for
// a response format or a tool: bytes outside [A-Za-z0-9_-] become '_', an
// empty name becomes "output", and the result is cut to 64 bytes.
func WireName(name string) string {
	b := make([]byte, 0, len(name))
	for i := 0; i < len(name) && len(b) < 64; i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
			b = append(b, c)
		default:
			b = append(b, '_')
		}
	}
	if len(b) == 0 {
		return "output"
	}
	return string(b)
}

// Connection is how a provider reaches its endpoint: the settings both
// official SDKs (openai-go, anthropic-sdk-go) take, as a provider's Options
// spell them.
type Connection struct {
	BaseURL string
	APIKey  string
	// MaxRetries: 0 means 2, a negative number none.
	MaxRetries int
	Timeout    time.Duration
	HTTPClient *http.Client
}

// SDKOptions turns c into an SDK's request options with that SDK's own
// constructors (option.WithBaseURL, option.WithAPIKey,
// option.WithMaxRetries, option.WithRequestTimeout, option.WithHTTPClient):
// the SDKs come from one generator and differ only in their types. Unset
// settings are left to the SDK's defaults, but for the timeout of an
// attempt: CallTimeout.
func SDKOptions[O, H any](c Connection, baseURL, apiKey func(string) O, retries func(int) O, timeout func(time.Duration) O, client func(H) O) []O {
	n := c.MaxRetries
	switch {
	case n < 0:
		n = 0
	case n == 0:
		n = 2
	}
	out := []O{retries(n)}
	if c.BaseURL != "" {
		out = append(out, baseURL(c.BaseURL))
	}
	if c.APIKey != "" {
		out = append(out, apiKey(c.APIKey))
	}
	if c.Timeout <= 0 {
		c.Timeout = CallTimeout
	}
	out = append(out, timeout(c.Timeout))
	if h, ok := any(c.HTTPClient).(H); ok && c.HTTPClient != nil {
		out = append(out, client(h))
	}
	return out
}

// Apportion splits u into shares in proportion to weights (a step's part
// of one answer, by size): the shares add up to u exactly, remainders going
// to the largest fractions first. With no positive weight the shares are
// equal.
func Apportion(u Usage, weights []int) []Usage {
	out := make([]Usage, len(weights))
	if len(weights) == 0 {
		return out
	}
	w := slices.Clone(weights)
	total := 0
	for i := range w {
		w[i] = max(w[i], 0)
		total += w[i]
	}
	if total == 0 {
		for i := range w {
			w[i] = 1
		}
		total = len(w)
	}
	split := func(n int64) []int64 {
		shares := make([]int64, len(w))
		rest := n
		type frac struct {
			i int
			r int64
		}
		fracs := make([]frac, len(w))
		for i, x := range w {
			shares[i] = n * int64(x) / int64(total)
			rest -= shares[i]
			fracs[i] = frac{i, n * int64(x) % int64(total)}
		}
		slices.SortStableFunc(fracs, func(a, b frac) int { return cmp.Compare(b.r, a.r) })
		for k := 0; rest > 0; k++ {
			shares[fracs[k%len(fracs)].i]++
			rest--
		}
		return shares
	}
	p, c := split(u.PromptTokens), split(u.CompletionTokens)
	cached, written := split(u.CachedPromptTokens), split(u.CacheWriteTokens)
	var batched []Usage
	if u.Batched != nil {
		batched = Apportion(*u.Batched, weights)
	}
	for i := range out {
		out[i] = Usage{PromptTokens: p[i], CompletionTokens: c[i], CachedPromptTokens: cached[i], CacheWriteTokens: written[i]}
		if batched != nil {
			out[i].Batched = &batched[i]
		}
	}
	return out
}
