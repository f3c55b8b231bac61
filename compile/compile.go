package compile

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/augceo/vibe/compose"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/schema"
)

// Options configures Compile. The zero value compiles without a registry and
// without knowing the registered actions, within the default bounds.
type Options struct {
	// Registry resolves "$ref"s and pipeline instruction names.
	Registry *registry.Registry
	// Actions are the names of the registered server actions. With nil, no
	// step is fire-and-forget and blocking steps are not checked for an
	// action; with a list (even empty), a blocking SERVER step that matches
	// no action is an error.
	Actions []string
	// MaxSteps bounds a process's steps (and a pipeline's); 0 means
	// compose.MaxSteps.
	MaxSteps int
	// MaxInlined bounds the values composing the process inlines; 0 means
	// compose.MaxInlined.
	MaxInlined int
	// Budget bounds the time one compilation may take; 0 means
	// DefaultBudget.
	Budget time.Duration
}

// DefaultBudget is the time one compilation may take: 5 s. Composing and
// compiling the longest pipeline allowed (compose.MaxSteps) takes a few
// hundredths of a second, so a compilation that runs this long is one that
// should not run at all — and a server that compiles what a request sends
// must not let one request hold a core for minutes.
const DefaultBudget = 5 * time.Second

// ErrBudget is wrapped by the error of a compilation that ran out of its
// time budget (Options.Budget), along with context.DeadlineExceeded.
var ErrBudget = errors.New("the compile time budget ran out")

func (o Options) composeOptions() compose.Options {
	return compose.Options{Registry: o.Registry, MaxSteps: o.MaxSteps, MaxInlined: o.MaxInlined}
}

func (o Options) maxSteps() int { return cmp.Or(max(o.MaxSteps, 0), compose.MaxSteps) }

// withBudget is ctx bounded by the compile budget; its cause says the
// budget ran out.
func (o Options) withBudget(ctx context.Context) (context.Context, context.CancelFunc) {
	budget, cause := cmp.Or(max(o.Budget, 0), DefaultBudget), defaultBudgetRanOut
	if budget != DefaultBudget {
		cause = budgetRanOut(budget)
	}
	return context.WithTimeoutCause(ctx, budget, cause)
}

func budgetRanOut(budget time.Duration) error {
	return fmt.Errorf("%w (%s): %w", ErrBudget, budget, context.DeadlineExceeded)
}

// defaultBudgetRanOut is made once: most compilations have the default
// budget, and nearly all of them finish within it.
var defaultBudgetRanOut = budgetRanOut(DefaultBudget)

// CompilePipeline composes a pipeline expression (compose.Pipeline) and
// compiles it, within one time budget (Options.Budget) for both.
func CompilePipeline(ctx context.Context, expr string, opts Options) (*Process, error) {
	ctx, cancel := opts.withBudget(ctx)
	defer cancel()
	doc, err := compose.Pipeline(ctx, expr, opts.composeOptions())
	if err != nil {
		return nil, err
	}
	return compile(ctx, compose.PipelineFile, doc, opts)
}

// Compile compiles a process schema; file names it in errors. The document
// is flattened first (compose.Flatten). Every problem is reported, as a
// schema.ErrorList naming the file and JSON path of each.
//
// A process has at most Options.MaxSteps steps. Compiling stops when ctx
// ends, or when it has taken its time budget (Options.Budget): the error
// then wraps the context's cause — context.Canceled, or ErrBudget and
// context.DeadlineExceeded.
func Compile(ctx context.Context, file string, doc jsonv.Value, opts Options) (*Process, error) {
	ctx, cancel := opts.withBudget(ctx)
	defer cancel()
	return compile(ctx, file, doc, opts)
}

func compile(ctx context.Context, file string, doc jsonv.Value, opts Options) (*Process, error) {
	flat, err := compose.Flatten(ctx, file, doc, opts.composeOptions())
	if err != nil {
		return nil, err
	}
	c := &compiler{ctx: ctx, file: file, doc: flat, opts: opts}
	for _, pass := range []func(){c.checkRequired, c.collectSteps, c.resolveReferences, c.partition} {
		if pass(); c.stopped() {
			return nil, stopped(ctx, file)
		}
		if c.over {
			break // what else is wrong can wait until the process has a sensible size
		}
	}
	if err := c.errs.Err(); err != nil {
		return nil, err
	}
	p := &Process{Chunks: c.chunks, Prompt: flat.Lookup("prompt").Str()}
	p.Direct = directCall(p)
	p.Document = emit(flat, p)
	return p, nil
}

// stopped is the error of a compilation of file that ctx ended.
func stopped(ctx context.Context, file string) error {
	return fmt.Errorf("compiling %s stopped: %w", file, context.Cause(ctx))
}

type compiler struct {
	ctx    context.Context
	file   string
	doc    jsonv.Value
	opts   Options
	errs   schema.ErrorList
	steps  []*Step
	groups []group // top-level properties in order: a context or a plain step
	chunks []*Chunk

	byName  map[string][]*Step // steps by name, in execution order
	context map[string]bool    // the names of the contexts
	counted int                // the steps of the document, those past the bound included
	over    bool               // the document has too many steps: compile no further
	visits  int                // work done, to look at ctx now and then
	done    bool               // ctx ended
}

// checkEvery is how many steps (or schemas) the compiler handles between
// two looks at its context: often enough to stop within a millisecond,
// rarely enough to cost nothing.
const checkEvery = 64

// alive counts a unit of work and reports whether to go on: false once the
// context has ended.
func (c *compiler) alive() bool {
	if !c.done {
		if c.visits++; c.visits%checkEvery == 0 && c.ctx.Err() != nil {
			c.done = true
		}
	}
	return !c.done
}

func (c *compiler) stopped() bool { return c.done || c.ctx.Err() != nil }

// group is one top-level property: a context with its steps, or a plain
// step.
type group struct {
	context string      // "" for a plain step
	kind    Kind        // the context's kind
	schema  jsonv.Value // the context's schema; null for a plain step
	members []Member    // its steps and its own thinking fields, in order
}

func (c *compiler) errorf(p jsonv.Pointer, format string, args ...any) {
	c.errs.Add(c.file, p, format, args...)
}

// checkRequired reports every "required" entry that names no property, in
// every schema of the document.
func (c *compiler) checkRequired() {
	schema.Walk(c.doc, func(p jsonv.Pointer, s jsonv.Value) error {
		if !c.alive() {
			return errStop
		}
		req, ok := s.Get("required")
		props := schema.Properties(s)
		if !ok || props == nil {
			return nil
		}
		if req.Kind() != jsonv.KindArray {
			c.errorf(p.Append("required"), "required must be an array of property names, not %s", show(req))
			return nil
		}
		for i, r := range req.Array() {
			at := p.Append("required").AppendIndex(i)
			if r.Kind() != jsonv.KindString {
				c.errorf(at, "required must list property names, not %s", show(r))
				continue
			}
			if !props.Has(r.Str()) {
				msg := fmt.Sprintf("required names %q, which is not a property here (properties: %s)", r.Str(), strings.Join(props.Names(), ", "))
				if s := compose.Suggest(r.Str(), props.Names(), 1); len(s) > 0 {
					msg = fmt.Sprintf("required names %q, which is not a property here; did you mean %q?", r.Str(), s[0])
				}
				c.errorf(at, "%s", msg)
			}
		}
		return nil
	})
}

// errStop ends a walk the context ended.
var errStop = errors.New("stop")

// directCall recognises a process that reduced to one LLM chunk ending in
// its only fire-and-forget step.
func directCall(p *Process) *DirectCall {
	if len(p.Chunks) != 1 || p.Chunks[0].Kind != LLM {
		return nil
	}
	ch := p.Chunks[0]
	last := ch.Steps[len(ch.Steps)-1]
	if !last.FireAndForget {
		return nil
	}
	for _, s := range ch.Steps[:len(ch.Steps)-1] {
		if s.FireAndForget {
			return nil
		}
	}
	return &DirectCall{Action: last.Action, Step: last, Chunk: ch}
}

// show prints a value in an error message, cut short when long.
func show(v jsonv.Value) string {
	s := string(jsonv.Marshal(v))
	if r := []rune(s); len(r) > 60 {
		s = string(r[:57]) + "…"
	}
	return s
}
