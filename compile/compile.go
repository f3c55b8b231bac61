package compile

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
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
	var sources compose.Sources
	copts := opts.composeOptions()
	copts.Sources = &sources
	doc, err := compose.Pipeline(ctx, expr, copts)
	if err != nil {
		return nil, err
	}
	return compile(ctx, compose.PipelineFile, doc, opts, sources)
}

// Compile compiles a process schema; file names it in errors. The document
// is flattened first (compose.Flatten). Every problem is reported, as a
// schema.ErrorList naming the file and JSON path of each: where the value
// is in the file it comes from — an instruction a "$ref" names, a pipeline
// step's — when it is there as the flattened document has it
// (compose.Sources).
//
// A process has at most Options.MaxSteps steps. Compiling stops when ctx
// ends, or when it has taken its time budget (Options.Budget): the error
// then wraps the context's cause — context.Canceled, or ErrBudget and
// context.DeadlineExceeded.
func Compile(ctx context.Context, file string, doc jsonv.Value, opts Options) (*Process, error) {
	ctx, cancel := opts.withBudget(ctx)
	defer cancel()
	return compileAll(ctx, file, doc, opts)
}

// Instruction flattens an instruction (compose.Flatten) and checks it as
// Compile checks a process's steps before anything is sent to a model:
// every "required" names a property, and the schema is one the validator
// takes. Its problems are reported as Compile reports them, each at the
// file it comes from.
func Instruction(ctx context.Context, file string, doc jsonv.Value, opts Options) (jsonv.Value, error) {
	ctx, cancel := opts.withBudget(ctx)
	defer cancel()
	var sources compose.Sources
	copts := opts.composeOptions()
	copts.Sources = &sources
	flat, err := compose.Flatten(ctx, file, doc, copts)
	if err != nil {
		return jsonv.Value{}, err
	}
	c := &compiler{ctx: ctx, file: file, doc: flat, opts: opts}
	for _, pass := range []func(){c.checkRequired, c.checkSchema} {
		if pass(); c.stopped() {
			return jsonv.Value{}, stopped(ctx, file)
		}
	}
	if err := c.errs.Err(); err != nil {
		return jsonv.Value{}, sources.LocateAll(flat, err)
	}
	return flat, nil
}

// compile compiles doc, whose parts come from sources (a pipeline's
// instructions) besides those its flattening finds.
func compile(ctx context.Context, file string, doc jsonv.Value, opts Options, sources compose.Sources) (*Process, error) {
	copts := opts.composeOptions()
	copts.Sources = &sources
	flat, err := compose.Flatten(ctx, file, doc, copts)
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
	if !c.over {
		if c.checkSchema(); c.stopped() {
			return nil, stopped(ctx, file)
		}
	}
	if err := c.errs.Err(); err != nil {
		return nil, sources.LocateAll(flat, err)
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

// checkSchema compiles the flattened document as a draft 2020-12 schema,
// as the engine compiles the schemas it cuts from it when the process runs
// (a chunk's, a step's output, a person's answer): a pattern that is no
// regular expression, a "type" that is no type, a "minimum" that is no
// number would otherwise fail the process later, at its first check. Each
// problem is reported where it is, once — the first the validator gives:
// a "type" of "strng" breaks both alternatives of the metaschema's, a type
// name and an array of them, and the first says what was meant — but for
// one at a place the compiler has reported already, which says it better.
//
// Each step's schema is compiled on its own, and what is left of the
// document without them — its contexts, thinking fields and keywords —
// after; each distinct schema once (validSchemas): a pipeline repeats its
// instructions, and a server starts the same process again and again.
func (c *compiler) checkSchema() {
	var found []*schema.Error
	// The steps (true) and the objects on the way to them (false).
	way := make(map[jsonv.Pointer]bool, 2*len(c.steps))
	for _, st := range c.steps {
		if !c.alive() {
			return
		}
		way[st.Path] = true
		for p := st.Path.Parent(); ; p = p.Parent() {
			if _, ok := way[p]; ok {
				break
			}
			if way[p] = false; p == "" {
				break
			}
		}
		for _, e := range checkStep(st.Schema) {
			found = append(found, &schema.Error{File: c.file, Path: st.Path + e.Path, Message: e.Message, Err: e.Err})
		}
	}
	for _, e := range checkCached(withoutSteps(c.doc, "", way)) {
		found = append(found, &schema.Error{File: c.file, Path: e.Path, Message: e.Message, Err: e.Err})
	}
	reported := make(map[jsonv.Pointer]bool, len(c.errs)+len(found))
	for _, e := range c.errs {
		reported[e.Path] = true
	}
	for _, e := range found {
		if !reported[e.Path] {
			c.errs = append(c.errs, e)
			reported[e.Path] = true
		}
	}
}

// validSchemas are schemas the validator compiled, by their JSON: steps'
// (without "references") and what is left of documents without them. It
// is emptied when full, which bounds it without bookkeeping.
var validSchemas struct {
	sync.Mutex
	m map[string]bool
}

const maxValidSchemas = 4096

// checkStep compiles a step's schema and returns its problems, located
// within it. "references" is no keyword of JSON Schema, and no two steps of
// a pipeline share theirs: it is left out, so that the steps of one
// instruction share one compilation.
func checkStep(s jsonv.Value) []*schema.Error {
	if o := s.Object(); o != nil && o.Has("references") {
		bare := jsonv.NewObject(o.Len())
		for _, m := range o.Members() {
			if m.Name != "references" {
				bare.Set(m.Name, m.Value)
			}
		}
		s = bare.Value()
	}
	return checkCached(s)
}

// checkCached compiles s, once while it is in validSchemas, and returns
// its problems, located within it.
func checkCached(s jsonv.Value) []*schema.Error {
	key := string(jsonv.Marshal(s))
	validSchemas.Lock()
	ok := validSchemas.m[key]
	validSchemas.Unlock()
	if ok {
		return nil
	}
	if _, err := schema.NewValidator("", s, schema.ValidatorOptions{}); err != nil {
		return schema.Errors(err, "")
	}
	validSchemas.Lock()
	if validSchemas.m == nil || len(validSchemas.m) >= maxValidSchemas {
		validSchemas.m = make(map[string]bool)
	}
	validSchemas.m[key] = true
	validSchemas.Unlock()
	return nil
}

// withoutSteps is v, at in the document, without the steps' schemas (way:
// the steps, true, and the objects on the way to them, false): whether a
// schema is valid is a matter of each keyword's value, so what is left is
// checked as well without them. Only the objects on the way are copied.
func withoutSteps(v jsonv.Value, at jsonv.Pointer, way map[jsonv.Pointer]bool) jsonv.Value {
	o := v.Object()
	if onWay, ok := way[at]; !ok || onWay || o == nil {
		return v
	}
	out := jsonv.NewObject(o.Len())
	for _, m := range o.Members() {
		if p := at.Append(m.Name); !way[p] {
			out.Set(m.Name, withoutSteps(m.Value, p, way))
		}
	}
	return out.Value()
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
