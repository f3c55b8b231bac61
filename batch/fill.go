package batch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
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
	// Audit asks the item alone too, and keeps that answer when the two
	// differ (Options.Audit).
	Audit bool `json:"audit,omitempty"`
}

// FillOutput is a filled chunk per item: the item's value, its share of
// the calls and its own repair turns, or why it has none.
type FillOutput struct {
	Items []ItemFill `json:"items"`
	// Requests counts the model requests, repairs included; Usage sums
	// them.
	Requests int       `json:"requests"`
	Usage    llm.Usage `json:"usage"`
	// Splits are the calls that could not be answered whole and were
	// halved; Passed is the size of the largest call that was answered.
	Splits []Split `json:"splits,omitempty"`
	Passed int     `json:"passed,omitempty"`
	// Audit is what the audit of the items asked alone too came to, its
	// calls counted apart from Requests and Usage.
	Audit AuditCount `json:"audit,omitzero"`
}

// ItemFill is one item's part of a FillOutput.
type ItemFill struct {
	Output durable.FillOutput `json:"output"`
	Error  string             `json:"error,omitempty"`
	// Unanswered says the item's call went through a provider batch that
	// did not answer it (Activities.Collect): it may be sent again.
	Unanswered bool `json:"unanswered,omitempty"`
	// Disagreed says the item was audited and its answer alone differed
	// from its answer among others: Output is the one alone.
	Disagreed bool `json:"disagreed,omitempty"`
}

// Fill fills one LLM chunk for many items: the items go to p in calls of
// as many as t.Call allows, each one multiplexed request, sent at once (p's
// limiter, if any, paces them); every item's part of an answer is checked
// against the chunk's schema on its own, and a part that breaks it — or
// that echoes another item's tag — is repaired on its own, with a repair
// turn that carries only that item's request, its part and its errors.
// Each item's usage is its share of the call by the size of its part, plus
// its repairs.
//
// A call the model cannot answer whole — refused for its size, cut off at
// the output token limit, refused outright — is halved, down to one item,
// and each half asked again (FillOutput.Splits says so); what fails for one
// item fails that item alone, with the provider's reason. A call that
// fails for a while (429, 5xx, the transport) is tried again a few times,
// alone. Only a call that keeps failing so is Fill's error: then the
// activity is retried, and no item has a value.
func Fill(ctx context.Context, p llm.Provider, t FillInput, opts llm.Options) (*FillOutput, error) {
	out := &FillOutput{Items: make([]ItemFill, len(t.Items))}
	calls, err := plan(t)
	if err != nil {
		for i := range out.Items {
			out.Items[i].Error = err.Error()
		}
		return out, nil
	}
	f := &filling{p: p, t: t, opts: opts, out: out}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for _, c := range calls {
		wg.Go(func() {
			if err := f.run(ctx, c); err != nil {
				cancel(err)
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && err != context.Canceled {
		return nil, err
	}
	return out, ctx.Err()
}

// callAttempts is how often Fill tries one call that fails for a while
// (llm.APIError.Retryable) before the activity fails; the provider's own
// retries, and its limiter's pause after a 429, come on top.
const callAttempts = 3

// filling is one Fill under way: its calls write into out under mu.
type filling struct {
	p    llm.Provider
	t    FillInput
	opts llm.Options
	mu   sync.Mutex
	out  *FillOutput
}

// run asks call c, halving it when it cannot be answered whole.
func (f *filling) run(ctx context.Context, c call) error {
	resp, err := f.complete(ctx, c)
	switch {
	case err == nil:
		if err := absorb(ctx, f.p, f.t, c, resp, f.opts, f.out, &f.mu); err != nil {
			return err
		}
		f.audit(ctx, c)
		return nil
	case !splittable(err):
		return fmt.Errorf("chunk %s, %d items: %w", f.t.Chunk, c.count, err)
	case c.count == 1:
		f.mu.Lock()
		f.out.Items[c.first] = ItemFill{Error: fmt.Sprintf("chunk %s: %v", f.t.Chunk, err)}
		f.mu.Unlock()
		return nil
	}
	reason := splitReason(err)
	halves, err := halve(f.t, c)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.out.Splits = append(f.out.Splits, Split{Chunk: f.t.Chunk, From: c.count, To: halves[0].count, Reason: reason})
	f.mu.Unlock()
	var wg sync.WaitGroup
	errs := make([]error, len(halves))
	for i, h := range halves {
		wg.Go(func() { errs[i] = f.run(ctx, h) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// complete sends c's request, trying again a call that fails for a while.
func (f *filling) complete(ctx context.Context, c call) (*llm.Response, error) {
	for attempt := 1; ; attempt++ {
		resp, err := llm.Complete(ctx, f.p, c.req)
		ae, ok := errors.AsType[*llm.APIError](err)
		if err == nil || !ok || !ae.Retryable || attempt >= callAttempts || ctx.Err() != nil {
			if err == nil {
				f.mu.Lock()
				f.out.Passed = max(f.out.Passed, c.count)
				f.mu.Unlock()
			}
			return resp, err
		}
		t := time.NewTimer(time.Duration(attempt) * time.Second)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
	}
}

// splittable reports whether err says the model could not answer the call
// whole, though it may answer a smaller one.
func splittable(err error) bool {
	return errors.Is(err, llm.ErrTooLarge) || errors.Is(err, llm.ErrCutOff) || errors.Is(err, llm.ErrRefused)
}

// splitReason is why a call was halved, in a few words.
func splitReason(err error) string {
	switch {
	case errors.Is(err, llm.ErrTooLarge):
		return "refused for its size: " + err.Error()
	case errors.Is(err, llm.ErrCutOff):
		return "cut off at the output token limit"
	}
	return "refused by the model"
}

// Split is a call that could not be answered whole and was halved: its
// chunk, its size and the size of its halves, and why.
type Split struct {
	Chunk  string `json:"chunk"`
	From   int    `json:"from"`
	To     int    `json:"to"`
	Reason string `json:"reason"`
}

// mergeSplits adds the splits of a fill (whose largest call answered held
// passed items) to those known: one per chunk, with the largest size
// asked and the smallest that passed.
func mergeSplits(known, splits []Split, passed int) []Split {
	for _, sp := range splits {
		if passed > 0 {
			sp.To = min(sp.To, passed)
		}
		i := slices.IndexFunc(known, func(k Split) bool { return k.Chunk == sp.Chunk })
		if i < 0 {
			known = append(known, sp)
			continue
		}
		known[i].From, known[i].To = max(known[i].From, sp.From), min(known[i].To, sp.To)
	}
	return known
}

// call is one multiplexed model call of a FillInput: the items from first
// on, count of them, and its request.
type call struct {
	first, count int
	steps        []string
	tags         []string // each item's, in order
	req          *llm.Request
}

// plan cuts t's items into calls within t.Call's limits, each with its
// multiplexed request: the same calls every time for the same t.
func plan(t FillInput) ([]call, error) {
	if len(t.Items) == 0 {
		return nil, nil
	}
	batches, err := t.batches()
	if err != nil {
		return nil, fmt.Errorf("chunk %s: %w", t.Chunk, err)
	}
	calls := make([]call, len(batches))
	for n, b := range batches {
		if calls[n], err = newCall(t, b.First, b.Count); err != nil {
			return nil, err
		}
	}
	return calls, nil
}

// newCall is the multiplexed call of t's items first to first+count-1,
// each with its tag (compile.ItemTags).
func newCall(t FillInput, first, count int) (call, error) {
	m, err := compile.Multiplex(t.Schema, count, compile.MultiplexOptions{Inline: t.Call.Inline})
	if err != nil {
		return call{}, fmt.Errorf("chunk %s: %w", t.Chunk, err)
	}
	steps := schema.Properties(t.Schema).Names()
	items := t.Items[first : first+count]
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = it.ID
	}
	tags := compile.ItemTags(ids)
	bt := llm.BatchTask{Name: t.Chunk, System: t.System, Schema: m, Legend: compile.Legend(steps), Items: make([]llm.BatchItem, count)}
	for i, it := range items {
		bt.Items[i] = llm.BatchItem{Tag: tags[i], Prompt: it.Prompt, Context: it.Context}
	}
	return call{first: first, count: count, steps: steps, tags: tags, req: llm.NewBatchRequest(bt)}, nil
}

// halve cuts call c in two calls down the ladder of sizes (Ladder): the
// largest rung below c's size, then the rest.
func halve(t FillInput, c call) ([]call, error) {
	size := Rung(c.count - 1)
	var out []call
	for first := c.first; first < c.first+c.count; first += size {
		h, err := newCall(t, first, min(size, c.first+c.count-first))
		if err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, nil
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
func absorb(ctx context.Context, p llm.Provider, t FillInput, c call, resp *llm.Response, opts llm.Options, out *FillOutput, mu *sync.Mutex) error {
	items, steps := t.Items[c.first:c.first+c.count], c.steps
	mu.Lock()
	out.Requests++
	out.Usage = out.Usage.Add(resp.Usage)
	mu.Unlock()
	answer, parseErr := llm.ParseAnswer(resp.Content)
	if parseErr != nil {
		answer = jsonv.NewObject(0).Value() // each item's part is empty, and repaired alone
	}
	// Each item's part, or what the answer holds of it: a part that lacks
	// a step breaks the chunk's schema below, and is repaired alone.
	dm := compile.Demultiplex(answer, steps, len(items), c.tags)
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
		misplaced := dm[i].Err != nil && strings.Contains(dm[i].Err.Error(), "another item's answer")
		switch {
		case parseErr != nil:
			turn.ParseError = parseErr.Error()
		case misplaced:
			// Not this item's answer: it is asked alone, from nothing.
			turn.ParseError = dm[i].Err.Error()
		default:
			if err := v.Validate(parts[i]); err != nil {
				problems = err.(*schema.ValidationError).Problems
			}
		}
		turn.Problems = problems
		fo.Turns = []llm.Turn{turn}
		if parseErr == nil && !misplaced && problems == nil {
			mu.Lock()
			out.Items[c.first+i] = ItemFill{Output: fo}
			mu.Unlock()
			continue
		}
		// This item alone is asked again, with its own part and errors.
		task := llm.Task{Name: t.Chunk, System: t.System, Prompt: it.Prompt, Context: it.Context, Schema: t.Schema}
		ro := opts
		ro.Instance = it.ID
		var res *llm.Result
		var err error
		if misplaced {
			res, err = llm.Fill(ctx, p, task, ro)
		} else {
			res, err = llm.Repair(ctx, p, task, turn.Answer, parseErr, problems, ro)
		}
		var ie *llm.InvalidAnswerError
		mu.Lock()
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
		mu.Unlock()
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
		return nil, durable.FillError(err)
	}
	out.Requests += sent.Earlier()
	logger.Info("batch call", "group", in.Group, "chunk", in.Chunk, "items", len(in.Items), "requests", out.Requests,
		"prompt_tokens", out.Usage.PromptTokens, "completion_tokens", out.Usage.CompletionTokens, "attempt", activity.GetInfo(ctx).Attempt)
	return out, nil
}
