package batch

import (
	"context"
	"io"

	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
)

// Estimate is what a batch would ask of the model, counted before any
// call (Client.Estimate).
type Estimate struct {
	// Items counts the input's items (lines that are no item left out),
	// Groups the groups they make.
	Items  int `json:"items"`
	Groups int `json:"groups"`
	// Sizes are each LLM chunk's K, and why; Group the items of a group.
	Sizes []ChunkSize `json:"sizes,omitempty"`
	Group int         `json:"group"`
	// Chunks are the process's LLM chunks in program order, each with the
	// requests its multiplexed calls make and their prompt tokens. The
	// first chunk's are exact but for the tokens' count; a later chunk's
	// context holds what earlier steps answer, which no estimate knows:
	// its tokens leave that out (Partial).
	Chunks []ChunkEstimate `json:"chunks"`
	// Requests and PromptTokens total the chunks'.
	Requests     int   `json:"requests"`
	PromptTokens int64 `json:"promptTokens"`
}

// ChunkEstimate is one LLM chunk's part of an Estimate.
type ChunkEstimate struct {
	Chunk        string `json:"chunk"`
	Requests     int    `json:"requests"`
	PromptTokens int64  `json:"promptTokens"`
	Partial      bool   `json:"partial,omitempty"`
}

// Estimate reads in as Run would (same groups, same limits) and builds the
// multiplexed requests of each LLM chunk of the process opts name, without
// sending any: their count, and their prompt tokens estimated at 4 bytes
// of the request's text a token (EstimateTokens). Chunks with a loop are
// asked per item, and counted so.
func (c *Client) Estimate(ctx context.Context, in io.Reader, opts Options) (*Estimate, error) {
	start, err := c.prepare(ctx, opts)
	if err != nil {
		return nil, err
	}
	if opts.File == "" {
		opts.File = "input"
	}
	calls := c.limiterCalls(opts)
	sizes := c.sizes(opts, start, calls)
	size := groupOf(opts, sizes, calls)
	opts.Call.Sizes = callSizes(sizes)
	est := &Estimate{Sizes: sizes, Group: size}
	var llmChunks []int
	for i, ch := range start.Program.Chunks {
		if ch.Kind == compile.LLM {
			llmChunks = append(llmChunks, i)
			est.Chunks = append(est.Chunks, ChunkEstimate{Chunk: ch.Name, Partial: len(llmChunks) > 1})
		}
	}
	lr := newLineReader(in, opts.File)
	var group []Item
	flush := func() {
		if len(group) == 0 {
			return
		}
		est.Groups++
		for k, idx := range llmChunks {
			ch := &start.Program.Chunks[idx]
			t := FillInput{Chunk: ch.Name, StepContext: ch.StepContext(), System: start.System, Schema: ch.Schema, Call: opts.Call}
			for _, it := range group {
				prompt := it.Prompt
				if prompt == "" {
					prompt = start.Prompt
				}
				t.Items = append(t.Items, FillItem{Prompt: prompt, Context: knownContext(it.Input, ch.References)})
			}
			if ch.Loop != nil { // one call per item, as the group asks it
				for _, it := range t.Items {
					req := llm.NewRequest(llm.Task{Name: ch.Name, System: t.System, Prompt: it.Prompt, Context: it.Context, Schema: ch.Schema})
					est.Chunks[k].Requests++
					est.Chunks[k].PromptTokens += EstimateTokens(req)
				}
				continue
			}
			calls, err := plan(t)
			if err != nil {
				continue
			}
			for _, call := range calls {
				est.Chunks[k].Requests++
				est.Chunks[k].PromptTokens += EstimateTokens(call.req)
			}
		}
		group = group[:0]
	}
	err = lr.valid(func(it Item) {
		est.Items++
		group = append(group, it)
		if len(group) == size {
			flush()
		}
	})
	if err != nil {
		return nil, err
	}
	flush()
	for _, ch := range est.Chunks {
		est.Requests += ch.Requests
		est.PromptTokens += ch.PromptTokens
	}
	return est, nil
}

// knownContext is the part of a chunk's context known before the process
// runs: what its references read of the item's input.
func knownContext(input jsonv.Value, refs []compile.Path) jsonv.Value {
	state := jsonv.NewObject(1)
	if !input.IsNull() {
		state.Set("input", input)
	}
	var ps []jsonv.Pointer
	for _, r := range refs {
		p := r.Pointer()
		if _, err := state.Value().At(p); err == nil {
			ps = append(ps, p)
		}
	}
	v, err := jsonv.Pick(state.Value(), ps...)
	if err != nil {
		return jsonv.NewObject(0).Value()
	}
	return v
}

// EstimateTokens estimates a request's prompt tokens at 4 bytes of its
// text (system, messages, schema) a token, plus a few for each message's
// framing: a rule of thumb for English text and JSON with common
// tokenizers, not any provider's count.
func EstimateTokens(req *llm.Request) int64 {
	n := len(req.System) + len(req.Schema) + len(req.Name)
	for _, m := range req.Messages {
		n += len(m.Content) + 16
	}
	return int64(n / 4)
}
