package durable

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/compose"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/replay/record"
	"github.com/augceo/vibe/schema"
)

// Activities are the outside effects every Vibe workflow has: model calls
// and server actions. Register them on a worker with Register.
type Activities struct {
	// Provider answers the LLM chunks.
	Provider llm.Provider
	// Actions are the registered server actions.
	Actions *action.Registry
	// Logger receives the per-call records; nil means slog.Default().
	Logger *slog.Logger
	// Metrics records tokens, latency and "$" metrics; nil means the global
	// OpenTelemetry meter provider's.
	Metrics *llm.Metrics
	// MaxRepairs is llm.Options.MaxRepairs.
	MaxRepairs int
	// Records keeps what a replay needs of each process and batch item
	// that ends (KeepName); nil keeps nothing.
	Records *record.Store
}

// ErrNoProvider is the error of a model call on a worker that has no model
// provider (Activities.Provider is nil).
var ErrNoProvider = errors.New("no model provider configured on this worker")

// FillInput is what the LLM activity needs: the chunk's projected schema,
// the prompt, and the minimal context of the chunk's references.
type FillInput struct {
	Process string      `json:"process"` // the workflow id, for logs and metrics
	Chunk   string      `json:"chunk"`
	System  string      `json:"system,omitempty"`
	Prompt  string      `json:"prompt,omitempty"`
	Context jsonv.Value `json:"context"`
	Schema  jsonv.Value `json:"schema"`
	// Tags of the call's metrics and spans: the process's name, the context
	// its steps sit in (a "$" metric of member m is step StepContext.m),
	// and the instance (a Vessel call's, a batch item's) it is for.
	ProcessName string `json:"processName,omitempty"`
	StepContext string `json:"stepContext,omitempty"`
	Instance    string `json:"instance,omitempty"`
	// Previous is a loop's previous attempt at the chunk, shown to the
	// model; Attempt and MaxAttempts say where the loop is.
	Previous    jsonv.Value `json:"previous,omitzero"`
	Attempt     int         `json:"attempt,omitempty"`
	MaxAttempts int         `json:"maxAttempts,omitempty"`
	// Queue is the task queue the call is scheduled on (ModelQueue of the
	// process's model, Start.ModelQueue); "" is the workflow's own.
	Queue string `json:"queue,omitempty"`
}

// FillOutput is a filled LLM chunk.
type FillOutput struct {
	Value    jsonv.Value `json:"value"` // the whole valid answer
	Usage    llm.Usage   `json:"usage"`
	Model    string      `json:"model"`
	Requests int         `json:"requests"`
	Replayed bool        `json:"replayed,omitempty"`
	// Turns are the requests sent and their answers, repairs included.
	Turns []llm.Turn `json:"turns,omitempty"`
	// Split says that llm.Fill split Value by the `_` / `$` convention,
	// and Thinking and Metrics are the fields it found: Parts gives Value
	// split without splitting it again. The output is not carried, being
	// Value a second time in the workflow's history.
	Split    bool            `json:"split,omitempty"`
	Thinking []compose.Field `json:"thinking,omitempty"`
	Metrics  []compose.Field `json:"metrics,omitempty"`
}

// Parts is the answer split by the `_` / `$` convention: as llm.Fill split
// it in the activity (compose.SplitAt of the fields it found), or, for an
// output that carries no split (a batch's item, whose part of a
// multiplexed answer no one split; an output recorded before the split
// was carried), split now.
func (o FillOutput) Parts() compose.Parts {
	if !o.Split {
		return compose.Split(o.Value)
	}
	return compose.SplitAt(o.Value, o.Thinking, o.Metrics)
}

// Fill answers an LLM chunk. An answer that keeps breaking the schema after
// the repair turns, or a request the endpoint refuses, fails at once; a
// transport error, 429 or 5xx that outlasted the client's own retries is
// retried by Temporal.
func (a *Activities) Fill(ctx context.Context, in FillInput) (FillOutput, error) {
	return a.FillChecked(ctx, in, nil)
}

var tracer = otel.Tracer("github.com/augceo/vibe/durable")

// FillChecked is Fill with check as llm.Options.Check: what only the
// engine can check about an answer goes back to the model as a repair
// turn. The Vessel runtime's decision uses it.
func (a *Activities) FillChecked(ctx context.Context, in FillInput, check func(jsonv.Value) []schema.Invalid) (FillOutput, error) {
	if a.Provider == nil {
		return FillOutput{}, FillError(ErrNoProvider)
	}
	logger := a.Logger
	if logger == nil {
		logger = slog.Default()
	}
	info := activity.GetInfo(ctx)
	sent := CountSent(ctx, a.Provider) // a request an earlier attempt sent is counted too
	defer KeepAliveWith(ctx, sent.Details)()
	ctx, span := tracer.Start(ctx, "chunk "+in.Chunk, trace.WithAttributes(attribute.String("vibe.chunk", in.Chunk),
		attribute.String("vibe.process", in.ProcessName), attribute.String("vibe.process.id", in.Process), attribute.String("vibe.instance", in.Instance)))
	defer span.End()
	stepOf := func(p jsonv.Pointer) string {
		for tok := range p.Tokens() {
			if in.StepContext == "" {
				return tok
			}
			return in.StepContext + "." + tok
		}
		return in.Chunk
	}
	res, err := llm.Fill(ctx, sent, llm.Task{
		Name: in.Chunk, System: in.System, Prompt: in.Prompt, Context: in.Context, Schema: in.Schema,
		Previous: in.Previous, Attempt: in.Attempt, MaxAttempts: in.MaxAttempts,
	}, llm.Options{Logger: logger.With("attempt", info.Attempt), Metrics: a.Metrics, Process: in.Process, Instance: in.Instance,
		MaxRepairs: a.MaxRepairs, Check: check, StepOf: stepOf})
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		return FillOutput{}, FillError(err)
	}
	// The chunk's totals under vibe.* names: gen_ai.usage.* belong to the
	// model-call spans below it ("chat MODEL"), and a backend that sums
	// them over spans would count a chunk's tokens twice.
	span.SetAttributes(attribute.Int64("vibe.usage.input_tokens", res.Usage.PromptTokens), attribute.Int64("vibe.usage.output_tokens", res.Usage.CompletionTokens),
		attribute.Int("vibe.requests", res.Requests))
	out := FillOutput{Value: res.Value, Usage: res.Usage, Model: res.Model, Requests: res.Requests + sent.Earlier(), Replayed: res.Replayed, Turns: res.Turns,
		Split: true, Thinking: res.Thinking, Metrics: res.Metrics}
	if err := tooLargeResult("chunk "+in.Chunk+": the model's answer with its turns", out); err != nil {
		return FillOutput{}, err
	}
	return out, nil
}

// FillError is the error an activity that fills LLM chunks fails with,
// for an error of llm.Fill (or ErrNoProvider): what trying again cannot
// mend is non-retryable, of the type that says what it is — no provider
// (ErrTypeNoProvider), no recorded answer (ErrTypeNotRecorded), a schema
// the validator refuses (ErrTypeBadSchema), an answer
// that kept breaking its schema (ErrTypeInvalidAnswer, with the turns in
// its details, so that the process shows what the model answered and what
// was wrong with it, by path), a request the endpoint or the model refuses
// (ErrTypeModelRefused), an answer cut off at the token limit
// (ErrTypeCutOff: the same request would be cut off again), one past the
// size limit (ErrTypeTooLarge) or with negative usage
// (ErrTypeMalformedAnswer), an endpoint that refuses every request (401,
// 403, 404: ErrTypeEndpointRefused) or was down past the worker's
// patience (ErrTypeEndpointDown) — these two are the endpoint's failures,
// not the step's. Anything else — a transport error, 429 or 5xx that
// outlasted the client's own retries — is returned as it is, for Temporal
// to retry.
func FillError(err error) error {
	var ie *llm.InvalidAnswerError
	var ae *llm.APIError
	switch {
	case errors.Is(err, ErrNoProvider):
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeNoProvider, err)
	case errors.Is(err, llm.ErrNotRecorded):
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeNotRecorded, err)
	case errors.Is(err, llm.ErrBadSchema):
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeBadSchema, err)
	case errors.As(err, &ie):
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeInvalidAnswer, err,
			FillOutput{Usage: ie.Usage, Requests: ie.Requests, Turns: ie.Turns})
	case errors.As(err, new(*llm.AnswerTooLargeError)):
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeTooLarge, err)
	case errors.As(err, &ae) && llm.Classify(err) == llm.FaultRefused:
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeEndpointRefused, err)
	case errors.As(err, &ae) && !ae.Retryable, errors.Is(err, llm.ErrRefused):
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeModelRefused, err)
	case errors.Is(err, llm.ErrCutOff):
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeCutOff, err)
	case errors.Is(err, llm.ErrMalformedAnswer):
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeMalformedAnswer, err)
	}
	var ee *llm.EndpointError
	if errors.As(err, &ee) {
		// Not the step's failure: a rerun of a batch runs it again.
		if ee.Refused {
			return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeEndpointRefused, err)
		}
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeEndpointDown, err)
	}
	return err
}

// Systemic says whether err, a step's failure, is not the step's own but
// its worker's or its model endpoint's, by its type: ErrTypeNoProvider,
// ErrTypeEndpointRefused (waiting does not mend these) or
// ErrTypeEndpointDown; "" for a failure that is the step's. The same step
// asked again once that is mended may pass.
func Systemic(err error) string {
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) {
		return ""
	}
	switch t := ae.Type(); t {
	case ErrTypeNoProvider, ErrTypeEndpointRefused, ErrTypeEndpointDown:
		return t
	}
	return ""
}

// ActionInput is what a server action activity needs.
type ActionInput struct {
	Process string      `json:"process"`
	Step    string      `json:"step"`   // the qualified step name
	Action  string      `json:"action"` // the registered action
	Input   jsonv.Value `json:"input"`
	// Output is the schema the result must fit; null for none.
	Output jsonv.Value `json:"output"`
	// Key is the call's idempotency key (IdempotencyKey); the workflow
	// derives it from its id and the step.
	Key string `json:"key,omitempty"`
	// Arguments point at the values in Input that the step references, in
	// order: an action that takes its arguments unwrapped (Action.Unwrap)
	// gets their members instead of Input (Unwrapped).
	Arguments []jsonv.Pointer `json:"arguments,omitempty"`
	// Queue is the task queue the call is scheduled on (ActionQueue of
	// the action it resolves to), so that only a worker that has the
	// action takes it; "" schedules it on the workflow's own task queue,
	// as calls were before they were routed.
	Queue string `json:"queue,omitempty"`
}

// Action runs a step's server action and validates its result.
func (a *Activities) Action(ctx context.Context, in ActionInput) (jsonv.Value, error) {
	defer KeepAlive(ctx)()
	return a.action(ctx, in)
}

// action is Action without its heartbeats.
func (a *Activities) action(ctx context.Context, in ActionInput) (jsonv.Value, error) {
	act, ok := a.Actions.Resolve(in.Action)
	if !ok {
		return jsonv.Value{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("step %s: no action %q is registered on this worker (registered: %v)", in.Step, in.Action, a.Actions.Names()), ErrTypeNoAction, nil)
	}
	input := in.Input
	if act.Unwrap && len(in.Arguments) > 0 {
		v, err := action.Unwrapped(in.Input, in.Arguments)
		if err != nil {
			return jsonv.Value{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("step %s: %v", in.Step, err), ErrTypeBadInput, err)
		}
		input = v
	}
	ctx, span := tracer.Start(ctx, "action "+act.Name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("vibe.step", in.Step), attribute.String("vibe.process.id", in.Process), attribute.String("vibe.idempotency_key", in.Key)))
	out, err := act.Run(action.WithIdempotencyKey(ctx, in.Key), input)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
	if err != nil {
		return jsonv.Value{}, err
	}
	if err := tooLargeResult(fmt.Sprintf("step %s: action %s's result", in.Step, act.Name), []any{out}); err != nil {
		return jsonv.Value{}, err
	}
	if !in.Output.IsNull() {
		problems, err := schema.Check(in.Output, out)
		if err != nil {
			return jsonv.Value{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("step %s: its output schema is invalid: %v", in.Step, err), ErrTypeBadSchema, err)
		}
		if problems != nil {
			err := &schema.ValidationError{Problems: problems}
			return jsonv.Value{}, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("step %s: action %s returned a result that breaks the step's output schema: %v", in.Step, act.Name, err), ErrTypeBadOutput, err)
		}
	}
	return out, nil
}

// ActionsInput is many processes' calls of actions, run at once by
// Activities.RunActions, at most Concurrency at a time (0: all).
type ActionsInput struct {
	Calls       []ActionInput `json:"calls"`
	Concurrency int           `json:"concurrency,omitempty"`
}

// ActionResult is what one call of Activities.Actions came to: its output,
// or its error with whether trying it again may help.
type ActionResult struct {
	Output jsonv.Value `json:"output,omitzero"`
	Error  string      `json:"error,omitempty"`
	// Type is the error's type (ErrType*, action.ErrTypeNonRetryable) when
	// it is not to be retried.
	Type         string `json:"type,omitempty"`
	NonRetryable bool   `json:"nonRetryable,omitempty"`
}

// RunActions runs calls of actions as Action does each — with its own
// idempotency key and output check — and returns a result per call: a
// failed call is its result, not the activity's failure, so that the
// caller retries it alone and never runs a sibling's again. The results of
// the calls done so far go with every heartbeat, and an attempt after a
// crash runs only the calls the last one had not finished.
func (a *Activities) RunActions(ctx context.Context, in ActionsInput) ([]ActionResult, error) {
	res := make([]ActionResult, len(in.Calls))
	finished := make([]bool, len(in.Calls))
	if activity.HasHeartbeatDetails(ctx) {
		var prev actionsDone
		if activity.GetHeartbeatDetails(ctx, &prev) == nil && len(prev.Results) == len(res) && len(prev.Finished) == len(res) {
			copy(res, prev.Results)
			copy(finished, prev.Finished)
		}
	}
	var mu sync.Mutex
	// What is done goes with every heartbeat while the calls run, copied:
	// the SDK sends details after RecordHeartbeat returns.
	defer KeepAliveWith(ctx, func() any {
		mu.Lock()
		defer mu.Unlock()
		return actionsDone{Results: slices.Clone(res), Finished: slices.Clone(finished)}
	})()
	conc := in.Concurrency
	if conc <= 0 || conc > len(in.Calls) {
		conc = len(in.Calls)
	}
	sem := make(chan struct{}, max(conc, 1))
	var wg sync.WaitGroup
	for k, call := range in.Calls {
		if finished[k] {
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			out, err := a.action(ctx, call) // heartbeats are RunActions's own, with the results
			r := ActionResult{Output: out}
			if err != nil {
				r = ActionResult{Error: ErrorText(err)}
				var ae *temporal.ApplicationError
				if errors.As(err, &ae) && ae.NonRetryable() {
					r.NonRetryable, r.Type, r.Error = true, ae.Type(), ae.Message()
				}
			}
			mu.Lock()
			res[k], finished[k] = r, true
			mu.Unlock()
		}()
	}
	wg.Wait()
	return res, ctx.Err()
}

// actionsDone is what RunActions's heartbeats carry: the calls finished
// and their results, for an attempt after a crash to take up.
type actionsDone struct {
	Results  []ActionResult `json:"results"`
	Finished []bool         `json:"finished"`
}

// CheckInput is a value and the schema it must fit.
type CheckInput struct {
	Schema jsonv.Value `json:"schema"`
	Value  jsonv.Value `json:"value"`
}

// CheckValue is the local activity that validates a value — a person's
// answer, a call's parameters once its references hold values, a
// delegate's result — against a schema, so that no workflow runs the
// validator itself. It returns the problems by path, none when the value
// fits.
func CheckValue(_ context.Context, in CheckInput) ([]schema.Invalid, error) {
	problems, err := schema.Check(in.Schema, in.Value)
	if err != nil {
		// The schema itself is wrong: checking again cannot mend it.
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("the schema to check against is invalid: %v", err), ErrTypeBadSchema, err)
	}
	return problems, nil
}
