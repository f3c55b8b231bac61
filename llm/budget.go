package llm

import (
	"fmt"
	"strings"

	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/jsonv"
)

// BudgetOptions shape a Budget.
type BudgetOptions struct {
	// Model is the model as the provider names it ("gpt-4o-mini"); ""
	// for none: tokens estimated, no limits known.
	Model string
	// Models are the models' limits; nil means DefaultModels.
	Models *Models
	// K is the items of a multiplexed call (a batch's group); 0 or 1 is
	// one process's call of each chunk.
	K int
	// Limits and Inline cut and lay out a multiplexed call as a batch
	// does (compile.Batches, compile.MultiplexOptions).
	Limits compile.Limits
	// System is the system text; "" means DefaultSystem. Prompt is each
	// request's prompt: the pipeline's, or an item's.
	System, Prompt string
	// Strict counts OpenAI's strict form, whose notes go in the system
	// text (the openai provider's Strict); Inline the form without
	// "$ref" (InlineSchemas).
	Strict, Inline bool
	// Sizes are what recorded answers show of the values (compile.Sizes);
	// nil means the schema's bounds and the defaults.
	Sizes *compile.Sizes
}

// Budget is what each LLM chunk of a process sends and may receive, in
// tokens, against a model's limits: known at compile time.
type Budget struct {
	Model string `json:"model,omitempty"`
	// Tokenizer names how tokens were counted: a tiktoken encoding
	// (Exact), or an estimate.
	Tokenizer string `json:"tokenizer"`
	Exact     bool   `json:"exact"`
	// Window and MaxOutput are the model's context window and output
	// limit; 0 when not known.
	Window    int           `json:"window,omitempty"`
	MaxOutput int           `json:"maxOutput,omitempty"`
	Chunks    []ChunkBudget `json:"chunks"`
}

// ChunkBudget is one LLM chunk's part of a Budget: one call of it.
type ChunkBudget struct {
	Chunk string `json:"chunk"`
	// Items are the items one call holds: 1 for a process, else K as the
	// provider's limits cut it.
	Items int `json:"items"`
	// The prompt's tokens by part: the system text, the schema as sent,
	// the user message's own text (prompt, framing, legend) and the
	// largest context the chunk's references can bring, every item's
	// (always an estimate: earlier answers are not known).
	System  int `json:"system"`
	Schema  int `json:"schema"`
	Text    int `json:"text"`
	Context int `json:"context"`
	// Prompt is their sum.
	Prompt int `json:"prompt"`
	// Output estimates the answer's tokens: Items × one item's (from the
	// schema's bounds, recorded answers or the defaults; always an
	// estimate).
	Output int `json:"output"`
	// Cap is what the model's output limit allows a multiplexed call of
	// the chunk: its MaxK is the most items whose answers fit.
	Cap compile.OutputCap `json:"cap"`
	// Problem says why the call cannot fit the model, and what to do; ""
	// when it fits or no limit is known.
	Problem string `json:"problem,omitempty"`
}

// NewBudget counts what each LLM chunk of prog sends and may receive. A
// chunk that cannot fit the model has its Problem; Err gathers them.
func NewBudget(prog *compile.Program, opts BudgetOptions) (*Budget, error) {
	models := opts.Models
	if models == nil {
		models = DefaultModels()
	}
	lim := models.Limits(opts.Model)
	tok := TokenizerFor(opts.Model, models)
	b := &Budget{Model: opts.Model, Tokenizer: tok.Name(), Exact: tok.Exact(), Window: lim.Context, MaxOutput: lim.Output}
	for i, pc := range prog.Chunks {
		if pc.Kind != compile.LLM {
			continue
		}
		cb, err := chunkBudget(prog, &prog.Chunks[i], opts, tok)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", pc.Name, err)
		}
		cb.Cap = prog.OutputCap(pc.Name, lim.Output, opts.Sizes)
		cb.Problem = problem(cb, b, opts.K > 1)
		b.Chunks = append(b.Chunks, cb)
	}
	return b, nil
}

// chunkBudget builds the request one call of chunk sends, with and without
// the contexts, and counts its parts.
func chunkBudget(prog *compile.Program, pc *compile.ProgramChunk, opts BudgetOptions, tok Tokenizer) (ChunkBudget, error) {
	cb := ChunkBudget{Chunk: pc.Name, Items: 1}
	sample, _ := prog.SampleContext(pc, opts.Sizes)
	empty := jsonv.NewObject(0).Value()
	s := pc.Schema
	if opts.K > 1 {
		bs, err := compile.Batches(s, opts.K, opts.Limits, compile.MultiplexOptions{Inline: opts.Inline})
		if err != nil {
			return cb, err
		}
		cb.Items = bs[0].Count
		if s, err = compile.Multiplex(s, cb.Items, compile.MultiplexOptions{Inline: opts.Inline}); err != nil {
			return cb, err
		}
	}
	system := opts.System
	if system == "" {
		system = DefaultSystem
	}
	if opts.Inline {
		s = compile.Inline(s)
	}
	if opts.Strict {
		proj := compile.Project(s, compile.ProjectOptions{Strict: true})
		s = proj.Schema
		if notes := compile.NotesText(proj.Notes); notes != "" {
			system = strings.TrimSpace(system + "\n\n" + notes)
		}
	}
	// A loop's later attempts show the model its previous answer: the
	// largest context is that too.
	var previous jsonv.Value
	if pc.Loop != nil {
		previous = compile.SampleAnswer(pc.Schema, opts.Sizes)
	}
	request := func(ctx jsonv.Value, full bool) *Request {
		if opts.K <= 1 {
			t := Task{Name: pc.Name, System: system, Prompt: opts.Prompt, Context: ctx, Schema: s}
			if full && pc.Loop != nil {
				t.Previous, t.Attempt, t.MaxAttempts = previous, pc.Loop.Max, pc.Loop.Max
			}
			return NewRequest(t)
		}
		bt := BatchTask{Name: pc.Name, System: system, Schema: s, Legend: compile.Legend(stepNames(pc)), Items: make([]BatchItem, cb.Items)}
		for i := range bt.Items {
			bt.Items[i] = BatchItem{Prompt: opts.Prompt, Context: ctx}
		}
		return NewBatchRequest(bt)
	}
	bare, full := request(empty, false), request(sample, true)
	cb.System = tok.Count(bare.System)
	cb.Schema = tok.Count(string(bare.Schema))
	cb.Text = tok.Count(bare.Messages[0].Content)
	cb.Context = compile.Tokens(len(full.Messages[0].Content) - len(bare.Messages[0].Content))
	cb.Prompt = cb.System + cb.Schema + cb.Text + cb.Context
	per, _ := compile.AnswerTokens(pc.Schema, opts.Sizes)
	cb.Output = cb.Items * per
	return cb, nil
}

func stepNames(pc *compile.ProgramChunk) []string {
	names := make([]string, len(pc.Steps))
	for i, s := range pc.Steps {
		names[i] = s.Name
	}
	return names
}

// problem says why cb cannot fit the model of b, and what to do; "" when
// it fits or nothing is known of the model.
func problem(cb ChunkBudget, b *Budget, multiplexed bool) string {
	model := b.Model
	switch {
	case b.MaxOutput > 0 && cb.Output > b.MaxOutput && multiplexed && cb.Items > 1:
		return fmt.Sprintf("its answer for %d items, about %d tokens, is over %s's output limit of %d: lower K to at most %d (the answers of that many fit)",
			cb.Items, cb.Output, model, b.MaxOutput, cb.Cap.MaxK())
	case b.MaxOutput > 0 && cb.Output > b.MaxOutput:
		return fmt.Sprintf("its answer, about %d tokens, is over %s's output limit of %d: split the chunk (fewer steps in one call, or a maxLength on its long strings)",
			cb.Output, model, b.MaxOutput)
	case b.Window > 0 && cb.Prompt+cb.Output > b.Window && multiplexed && cb.Items > 1:
		return fmt.Sprintf("%d prompt and about %d answer tokens for %d items are over %s's context window of %d: lower K",
			cb.Prompt, cb.Output, cb.Items, model, b.Window)
	case b.Window > 0 && cb.Prompt+cb.Output > b.Window:
		return fmt.Sprintf("%d prompt and about %d answer tokens are over %s's context window of %d: split the chunk, or narrow its steps' references so that less context goes with it",
			cb.Prompt, cb.Output, model, b.Window)
	}
	return ""
}

// BudgetError is a budget with chunks that cannot fit their model: a
// compile-time refusal.
type BudgetError struct {
	Model  string
	Chunks []ChunkBudget // those with a Problem
}

func (e *BudgetError) Error() string {
	lines := make([]string, len(e.Chunks))
	for i, c := range e.Chunks {
		lines[i] = fmt.Sprintf("chunk %s cannot fit %s: %s", c.Chunk, e.Model, c.Problem)
	}
	return strings.Join(lines, "\n")
}

// Err is a *BudgetError naming the chunks that cannot fit, or nil.
func (b *Budget) Err() error {
	var bad []ChunkBudget
	for _, c := range b.Chunks {
		if c.Problem != "" {
			bad = append(bad, c)
		}
	}
	if bad == nil {
		return nil
	}
	return &BudgetError{Model: b.Model, Chunks: bad}
}
