package llm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/augceo/vibe/compose"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Options configures Fill. The zero value allows two repair turns, logs to
// slog.Default and records metrics with the global OpenTelemetry meter
// provider.
type Options struct {
	// MaxRepairs is how many times an invalid answer is sent back with its
	// validation errors; 0 means 2, a negative number none.
	MaxRepairs int
	// Logger receives one record per filled task; nil means slog.Default().
	Logger *slog.Logger
	// Metrics records token, latency and "$" metrics; nil means the global
	// OpenTelemetry meter provider's.
	Metrics *Metrics
	// Process and Instance tag the log record and the metrics.
	Process, Instance string
	// Check, when set, is asked about every answer that fits the schema:
	// what only the engine can check (a state path that names nothing, a
	// plan that does not validate). Its problems go back to the model as a
	// repair turn, like the schema's, within the same bound.
	Check func(answer jsonv.Value) []schema.Invalid
	// StepOf names the step a "$" metric belongs to, from its path in the
	// answer (a chunk's answer holds several steps); nil means the task's
	// name.
	StepOf func(path jsonv.Pointer) string
}

// Result is a filled task.
type Result struct {
	// Value is the whole valid answer, thinking fields and metrics included.
	Value jsonv.Value
	// Output, Thinking and Metrics are Value split by the `_` / `$`
	// convention (compose.Split), once, here: a caller that keeps the
	// answer keeps these rather than splitting Value again.
	Output   jsonv.Value
	Thinking []compose.Field
	Metrics  []compose.Field
	// Usage sums every request's tokens, repairs included.
	Usage Usage
	// Model is the model that gave the last answer.
	Model string
	// Latency sums every request's latency.
	Latency time.Duration
	// Requests counts the requests sent: 1, or more after repairs.
	Requests int
	// Replayed is true when the answers came from a recording.
	Replayed bool
	// Turns are the requests sent, in order: the first and each repair,
	// with what came back and what was wrong with it.
	Turns []Turn
}

// Turn is one request of a fill and its answer.
type Turn struct {
	// Answer is the model's answer as it wrote it.
	Answer string `json:"answer"`
	// Problems are what was wrong with it, by path — the schema's, or the
	// engine's Check — and ParseError says why it was not JSON; both empty
	// for the answer that was taken.
	Problems   []schema.Invalid `json:"problems,omitempty"`
	ParseError string           `json:"parseError,omitempty"`
	Usage      Usage            `json:"usage"`
	LatencyMs  int64            `json:"latencyMs"`
	Model      string           `json:"model,omitempty"`
}

// InvalidAnswerError is the error of a task whose answers kept breaking its
// schema after every repair turn.
type InvalidAnswerError struct {
	Step     string
	Requests int
	// Problems are the last answer's validation errors, by instance path.
	Problems []schema.Invalid
	// ParseErr is set instead when the last answer was not JSON.
	ParseErr error
	// Content is the last answer as the model wrote it.
	Content string
	// Usage is what the failed requests cost.
	Usage Usage
	// Turns are the requests and answers, each with its problems.
	Turns []Turn
}

func (e *InvalidAnswerError) Error() string {
	if e.ParseErr != nil {
		return fmt.Sprintf("step %s: the model's answer is not JSON after %d requests: %v", e.Step, e.Requests, e.ParseErr)
	}
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return fmt.Sprintf("step %s: the model's answer breaks the schema after %d requests: %s", e.Step, e.Requests, strings.Join(lines, "; "))
}

// Fill asks p to fill t: it sends the prompt, parses the answer tolerantly,
// validates it against t.Schema, sends the validation errors back and asks
// again while the answer is invalid (up to MaxRepairs times), splits off
// thinking fields and metrics, and accounts tokens and latency. Provider
// errors (after the provider's own retries) are returned as they are.
func Fill(ctx context.Context, p Provider, t Task, opts Options) (*Result, error) {
	return fill(ctx, p, t, NewRequest(t), 0, opts)
}

// Repair asks p again for t after an answer that was wrong, as a repair
// turn: t's request, the answer as the model wrote it (answer), and what
// was wrong with it — problems by path, or parseErr when it was not JSON.
// It then goes on as Fill does. The answer counts as the first of the
// requests opts.MaxRepairs bounds: this is how one item of a multiplexed
// call is repaired on its own, with only its request and its errors.
func Repair(ctx context.Context, p Provider, t Task, answer string, parseErr error, problems []schema.Invalid, opts Options) (*Result, error) {
	req := NewRequest(t)
	req.Messages = append(req.Messages, Message{Role: RoleAssistant, Content: answer},
		Message{Role: RoleUser, Content: repairMessage(parseErr, problems, false)})
	return fill(ctx, p, t, req, 1, opts)
}

// fill sends req and what repairs it needs; spent requests were made for t
// before req.
func fill(ctx context.Context, p Provider, t Task, req *Request, spent int, opts Options) (*Result, error) {
	v, err := schema.Cached(t.Schema)
	if err != nil {
		return nil, fmt.Errorf("step %s: %w: %w", t.Name, ErrBadSchema, err)
	}
	repairs := opts.MaxRepairs
	if repairs == 0 {
		repairs = 2
	}
	res := &Result{}
	for {
		resp, err := Complete(ctx, p, req)
		if err != nil {
			if errors.Is(err, ErrNotRecorded) {
				return nil, err // a recording's error names the step itself
			}
			return nil, fmt.Errorf("step %s: %w", t.Name, err)
		}
		res.Requests++
		res.Usage = res.Usage.Add(resp.Usage)
		res.Latency += resp.Latency
		res.Model = resp.Model
		res.Replayed = resp.Replayed

		answer, parseErr := ParseAnswer(resp.Content)
		var problems []schema.Invalid
		checked := false
		if parseErr == nil {
			if err := v.Validate(answer); err != nil {
				problems = err.(*schema.ValidationError).Problems
			} else if opts.Check != nil {
				problems, checked = opts.Check(answer), true
			}
		}
		turn := Turn{Answer: resp.Content, Problems: problems, Usage: resp.Usage, LatencyMs: resp.Latency.Milliseconds(), Model: resp.Model}
		if parseErr != nil {
			turn.ParseError = parseErr.Error()
		}
		res.Turns = append(res.Turns, turn)
		if parseErr == nil && problems == nil {
			res.Value = answer
			parts := compose.Split(answer)
			res.Output, res.Thinking, res.Metrics = parts.Output, parts.Thinking, parts.Metrics
			account(ctx, t.Name, res, false, opts)
			return res, nil
		}
		if spent+res.Requests > repairs {
			ie := &InvalidAnswerError{Step: t.Name, Requests: res.Requests, Problems: problems, ParseErr: parseErr, Content: resp.Content, Usage: res.Usage, Turns: res.Turns}
			account(ctx, t.Name, res, true, opts)
			return nil, ie
		}
		// A repair turn: the model sees what it answered and what is wrong.
		req = &Request{Name: req.Name, System: req.System, Schema: req.Schema,
			Messages: append(req.Messages[:len(req.Messages):len(req.Messages)],
				Message{Role: RoleAssistant, Content: resp.Content},
				Message{Role: RoleUser, Content: repairMessage(parseErr, problems, checked)})}
	}
}

// Describer is what a Provider may say of itself, for traces: the GenAI
// provider ("openai", "anthropic": gen_ai.provider.name) and the model it
// asks for.
type Describer interface {
	System() string
	Model() string
}

// Endpointer is a Provider that says where it sends its requests: its
// base URL, whose host and port are the model-call span's server.address
// and server.port. Complete finds it through wrappers (Wrapper).
type Endpointer interface {
	Endpoint() string
}

var tracer = otel.Tracer("github.com/augceo/vibe/llm")

// Complete sends one request inside a span named for the GenAI semantic
// conventions ("chat MODEL"): gen_ai.operation.name, gen_ai.provider.name
// (and gen_ai.system, its older name, for backends that read that),
// gen_ai.request.model, server.address and server.port, and from the
// answer gen_ai.response.model, gen_ai.response.id,
// gen_ai.response.finish_reasons and the token usage; a failure sets
// error.type. It records the conventions' metrics
// gen_ai.client.operation.duration and gen_ai.client.token.usage — not for
// a replayed answer, which no model was asked for. A provider that names
// no model (a recording) has its span named for the model that answered.
// The global tracer and meter providers are no-ops until a program
// installs them. It neither parses nor validates the answer: Fill does,
// and a batch's call, which checks each item's part on its own.
func Complete(ctx context.Context, p Provider, req *Request) (*Response, error) {
	system, model := "", ""
	if d, ok := p.(Describer); ok {
		system, model = d.System(), d.Model()
	}
	attrs := []attribute.KeyValue{attribute.String("gen_ai.operation.name", "chat"),
		attribute.String("gen_ai.provider.name", system), attribute.String("gen_ai.system", system)}
	if model != "" {
		attrs = append(attrs, attribute.String("gen_ai.request.model", model))
	}
	attrs = append(attrs, serverAttributes(p)...)
	ctx, span := tracer.Start(ctx, strings.TrimSpace("chat "+model), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(append(attrs, attribute.String("vibe.step", req.Name))...))
	defer span.End()
	start := time.Now()
	resp, err := p.Complete(ctx, req)
	if err == nil {
		err = checkAnswer(resp) // before a repair turn sends it back, or the engine keeps it
	}
	if err != nil {
		et := errorType(err)
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		span.SetAttributes(attribute.String("error.type", et))
		if m := defaultMetrics(); m != nil {
			m.operation.Record(ctx, time.Since(start).Seconds(), metric.WithAttributes(append(attrs, attribute.String("error.type", et))...))
		}
		return nil, err
	}
	if model == "" && resp.Model != "" {
		// A recording names no model of its own: each answer says which
		// model gave it.
		span.SetName("chat " + resp.Model)
		span.SetAttributes(attribute.String("gen_ai.request.model", resp.Model))
		attrs = append(attrs, attribute.String("gen_ai.request.model", resp.Model))
	}
	span.SetAttributes(attribute.String("gen_ai.response.model", resp.Model),
		attribute.Int64("gen_ai.usage.input_tokens", resp.Usage.PromptTokens),
		attribute.Int64("gen_ai.usage.output_tokens", resp.Usage.CompletionTokens),
		attribute.Int64("gen_ai.usage.cache_read.input_tokens", resp.Usage.CachedPromptTokens),
		attribute.Int64("gen_ai.usage.cache_creation.input_tokens", resp.Usage.CacheWriteTokens),
		attribute.Bool("vibe.replayed", resp.Replayed))
	if resp.ID != "" {
		span.SetAttributes(attribute.String("gen_ai.response.id", resp.ID))
	}
	if len(resp.FinishReasons) > 0 {
		span.SetAttributes(attribute.StringSlice("gen_ai.response.finish_reasons", resp.FinishReasons))
	}
	if m := defaultMetrics(); m != nil && !resp.Replayed {
		attrs = append(attrs, attribute.String("gen_ai.response.model", resp.Model))
		m.operation.Record(ctx, time.Since(start).Seconds(), metric.WithAttributes(attrs...))
		m.usage.Record(ctx, resp.Usage.PromptTokens, metric.WithAttributes(append(attrs, attribute.String("gen_ai.token.type", "input"))...))
		m.usage.Record(ctx, resp.Usage.CompletionTokens, metric.WithAttributes(append(attrs, attribute.String("gen_ai.token.type", "output"))...))
	}
	return resp, nil
}

// serverAttributes are server.address and server.port of the endpoint p
// (or a provider it wraps) sends to; none when none says.
func serverAttributes(p Provider) []attribute.KeyValue {
	for p != nil {
		if e, ok := p.(Endpointer); ok {
			u, err := url.Parse(e.Endpoint())
			if err != nil || u.Hostname() == "" {
				return nil
			}
			port := u.Port()
			if port == "" {
				port = map[string]string{"https": "443", "http": "80"}[u.Scheme]
			}
			out := []attribute.KeyValue{attribute.String("server.address", u.Hostname())}
			if n, err := strconv.Atoi(port); err == nil {
				out = append(out, attribute.Int("server.port", n))
			}
			return out
		}
		w, ok := p.(Wrapper)
		if !ok {
			break
		}
		p = w.Unwrap()
	}
	return nil
}

// errorType is a failed call's error.type: the HTTP status of an
// endpoint's error answer, "timeout" or "canceled" for a context that
// ended, "not_recorded" for a recording without the answer, else the Go
// type of the error ("*net.OpError"), as the conventions ask.
func errorType(err error) string {
	var api *APIError
	switch {
	case errors.As(err, &api) && api.StatusCode != 0:
		return strconv.Itoa(api.StatusCode)
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, ErrNotRecorded):
		return "not_recorded"
	case errors.As(err, &api) && api.Err != nil:
		return fmt.Sprintf("%T", api.Err)
	}
	return fmt.Sprintf("%T", err)
}
