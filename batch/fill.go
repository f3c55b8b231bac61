package batch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/schema"
)

// CallOptions shape a batch's model calls.
type CallOptions struct {
	// Limits bound one call (items, properties, depth); the zero value is
	// compile's defaults, OpenAI's limits. A group of K items is split
	// into as many calls as the limits need.
	Limits compile.Limits `json:"limits,omitzero"`
	// Inline copies each step's schema into every item's property, for
	// providers that take no "$ref" (compile.MultiplexOptions).
	Inline bool `json:"inline,omitempty"`
	// ProviderBatch sends the calls through the provider's Batch API
	// (llm.BatchAPI) instead of one HTTP request each: at the provider's
	// discount, answered within its window (24 hours, most within the
	// hour). See ProviderBatches.
	ProviderBatch bool `json:"providerBatch,omitempty"`
	// ProviderFallback sends a call that a provider batch did not answer
	// (it failed, expired or was cancelled) as a direct call, instead of
	// in the next provider batch.
	ProviderFallback bool `json:"providerBatchFallback,omitempty"`
	// Sizes are the most items one call of each LLM chunk holds (by
	// chunk name), as the batch's first run cut them (Status.Calls): a
	// later run keeps them. A chunk not named is cut by Limits.
	Sizes map[string]int `json:"sizes,omitempty"`
	// ProviderWindow is DefaultProviderWindow when 0, ProviderPoll
	// DefaultProviderPoll.
	ProviderWindow time.Duration `json:"providerWindow,omitempty"`
	ProviderPoll   time.Duration `json:"providerPoll,omitempty"`
}

// FillInput is one LLM chunk to fill for several items of a group.
type FillInput struct {
	Group       string      `json:"group"` // the group's workflow id
	ProcessName string      `json:"processName"`
	Chunk       string      `json:"chunk"`
	StepContext string      `json:"stepContext,omitempty"`
	System      string      `json:"system,omitempty"`
	Schema      jsonv.Value `json:"schema"` // the chunk's projected schema, for one item
	Items       []FillItem  `json:"items"`
	Call        CallOptions `json:"call,omitzero"`
}

// FillItem is one item of a FillInput: its request and minimal context.
type FillItem struct {
	ID      string      `json:"id"`
	Prompt  string      `json:"prompt,omitempty"`
	Context jsonv.Value `json:"context,omitzero"`
}

// FillOutput is a filled chunk per item: the item's value, its share of
// the calls and its own repair turns, or why it has none.
type FillOutput struct {
	Items []ItemFill `json:"items"`
	// Requests counts the model requests, repairs included; Usage sums
	// them.
	Requests int       `json:"requests"`
	Usage    llm.Usage `json:"usage"`
}

// ItemFill is one item's part of a FillOutput.
type ItemFill struct {
	Output durable.FillOutput `json:"output"`
	Error  string             `json:"error,omitempty"`
	// Unanswered says the item's call went through a provider batch that
	// did not answer it (Activities.Collect): it may be sent again.
	Unanswered bool `json:"unanswered,omitempty"`
}

// Fill fills one LLM chunk for many items: the items go to p in calls of
// as many as t.Call's limits allow, each one multiplexed request; every
// item's part of an answer is checked against the chunk's schema on its
// own, and a part that breaks it is repaired on its own, with a repair
// turn that carries only that item's request, its part and its errors.
// Each item's usage is its share of the call by the size of its part,
// plus its repairs. An error is returned only when a call itself failed
// (the provider's error): then no item has a value.
func Fill(ctx context.Context, p llm.Provider, t FillInput, opts llm.Options) (*FillOutput, error) {
	out := &FillOutput{Items: make([]ItemFill, len(t.Items))}
	calls, err := plan(t)
	if err != nil {
		for i := range out.Items {
			out.Items[i].Error = err.Error()
		}
		return out, nil
	}
	for _, c := range calls {
		resp, err := llm.Complete(ctx, p, c.req)
		if err != nil {
			return nil, fmt.Errorf("chunk %s, %d items: %w", t.Chunk, c.count, err)
		}
		if err := absorb(ctx, p, t, c, resp, opts, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// call is one multiplexed model call of a FillInput: the items from first
// on, count of them, and its request.
type call struct {
	first, count int
	steps        []string
	req          *llm.Request
}

// plan cuts t's items into calls within t.Call's limits, each with its
// multiplexed request: the same calls every time for the same t.
func plan(t FillInput) ([]call, error) {
	if len(t.Items) == 0 {
		return nil, nil
	}
	mopts := compile.MultiplexOptions{Inline: t.Call.Inline}
	batches, err := t.batches()
	if err != nil {
		return nil, fmt.Errorf("chunk %s: %w", t.Chunk, err)
	}
	steps := schema.Properties(t.Schema).Names()
	calls := make([]call, len(batches))
	for n, b := range batches {
		m, err := compile.Multiplex(t.Schema, b.Count, mopts)
		if err != nil {
			return nil, fmt.Errorf("chunk %s: %w", t.Chunk, err)
		}
		bt := llm.BatchTask{Name: t.Chunk, System: t.System, Schema: m, Legend: compile.Legend(steps), Items: make([]llm.BatchItem, b.Count)}
		for i, it := range t.Items[b.First : b.First+b.Count] {
			bt.Items[i] = llm.BatchItem{Prompt: it.Prompt, Context: it.Context}
		}
		calls[n] = call{first: b.First, count: b.Count, steps: steps, req: llm.NewBatchRequest(bt)}
	}
	return calls, nil
}

// batches cuts t's items into calls: at most the chunk's call size
// (CallOptions.Sizes), within the provider's limits.
func (t FillInput) batches() ([]compile.Batch, error) {
	limits := t.Call.Limits
	if k := t.Call.Sizes[t.Chunk]; k > 0 {
		limits.MaxItems = k
	}
	return compile.Batches(t.Schema, len(t.Items), limits, compile.MultiplexOptions{Inline: t.Call.Inline})
}

// absorb takes the answer resp to call c into out: each item's part is
// split out and checked on its own, and a part that breaks the chunk's
// schema is repaired alone through p.
func absorb(ctx context.Context, p llm.Provider, t FillInput, c call, resp *llm.Response, opts llm.Options, out *FillOutput) error {
	items, steps := t.Items[c.first:c.first+c.count], c.steps
	out.Requests++
	out.Usage = out.Usage.Add(resp.Usage)
	answer, parseErr := llm.ParseAnswer(resp.Content)
	if parseErr != nil {
		answer = jsonv.NewObject(0).Value() // each item's part is empty, and repaired alone
	}
	// Each item's part, or what the answer holds of it: a part that lacks
	// a step breaks the chunk's schema below, and is repaired alone.
	dm := compile.Demultiplex(answer, steps, len(items))
	parts := make([]jsonv.Value, len(items))
	weights := make([]int, len(items))
	for i := range items {
		parts[i] = dm[i].Value
		weights[i] = len(jsonv.Marshal(parts[i]))
	}
	shares := llm.Apportion(resp.Usage, weights)
	v, err := schema.Cached(t.Schema)
	if err != nil {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("chunk %s: %v", t.Chunk, err), durable.ErrTypeBadSchema, err)
	}
	for i, it := range items {
		turn := llm.Turn{Answer: string(jsonv.Marshal(parts[i])), Usage: shares[i], LatencyMs: resp.Latency.Milliseconds(), Model: resp.Model}
		fo := durable.FillOutput{Value: parts[i], Usage: shares[i], Model: resp.Model, Requests: 1, Replayed: resp.Replayed}
		var problems []schema.Invalid
		if parseErr != nil {
			turn.ParseError = parseErr.Error()
		} else if err := v.Validate(parts[i]); err != nil {
			problems = err.(*schema.ValidationError).Problems
		}
		turn.Problems = problems
		fo.Turns = []llm.Turn{turn}
		if parseErr == nil && problems == nil {
			out.Items[c.first+i] = ItemFill{Output: fo}
			continue
		}
		// This item alone is asked again, with its own part and errors.
		task := llm.Task{Name: t.Chunk, System: t.System, Prompt: it.Prompt, Context: it.Context, Schema: t.Schema}
		ro := opts
		ro.Instance = it.ID
		res, err := llm.Repair(ctx, p, task, turn.Answer, parseErr, problems, ro)
		var ie *llm.InvalidAnswerError
		switch {
		case errors.As(err, &ie):
			out.Requests += ie.Requests
			out.Usage = out.Usage.Add(ie.Usage)
			out.Items[c.first+i] = ItemFill{Error: err.Error()}
		case err != nil:
			out.Items[c.first+i] = ItemFill{Error: fmt.Sprintf("chunk %s: repair of its part of the batch's answer: %v", t.Chunk, err)}
		default:
			out.Requests += res.Requests
			out.Usage = out.Usage.Add(res.Usage)
			fo.Value, fo.Usage, fo.Model = res.Value, fo.Usage.Add(res.Usage), res.Model
			fo.Split, fo.Thinking, fo.Metrics = true, res.Thinking, res.Metrics // as llm.Repair split it
			fo.Requests += res.Requests
			fo.Turns = append(fo.Turns, res.Turns...)
			out.Items[c.first+i] = ItemFill{Output: fo}
		}
	}
	return nil
}

// Activities are the batch runtime's outside effects: its model calls.
type Activities struct {
	// Provider answers the calls; nil fails them with
	// durable.ErrNoProvider.
	Provider llm.Provider
	// Logger receives one record per call; nil means slog.Default().
	Logger *slog.Logger
	// Metrics records the repairs' tokens and latency; nil means the
	// global OpenTelemetry meter provider's.
	Metrics *llm.Metrics
	// MaxRepairs is llm.Options.MaxRepairs, for each item's repairs.
	MaxRepairs int
}

// logger is a.Logger, or slog.Default().
func (a *Activities) logger() *slog.Logger {
	if a.Logger != nil {
		return a.Logger
	}
	return slog.Default()
}

// Fill is the activity of a group's multiplexed call: Fill on the
// worker's provider. A call the endpoint refuses fails at once; a
// transport error, 429 or 5xx that outlasted the client's retries is
// retried by Temporal.
func (a *Activities) Fill(ctx context.Context, in FillInput) (*FillOutput, error) {
	if a.Provider == nil {
		return nil, durable.FillError(durable.ErrNoProvider)
	}
	logger := a.Logger
	if logger == nil {
		logger = slog.Default()
	}
	sent := durable.CountSent(ctx, a.Provider) // a request an earlier attempt sent is counted too
	defer durable.KeepAliveWith(ctx, sent.Details)()
	out, err := Fill(ctx, sent, in, llm.Options{Logger: logger, Metrics: a.Metrics, Process: in.Group, MaxRepairs: a.MaxRepairs})
	if err != nil {
		return nil, fillFailed(ctx, sent, err)
	}
	out.Requests += sent.Earlier()
	logger.Info("batch call", "group", in.Group, "chunk", in.Chunk, "items", len(in.Items), "requests", out.Requests,
		"prompt_tokens", out.Usage.PromptTokens, "completion_tokens", out.Usage.CompletionTokens, "attempt", activity.GetInfo(ctx).Attempt)
	return out, nil
}
