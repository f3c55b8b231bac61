package compile

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/augceo/vibe/compose"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/schema"
)

// Kind is where a step or a chunk runs.
type Kind string

// The kinds of steps and chunks (SPEC §1 "Context").
const (
	LLM    Kind = "LLM"    // one structured model call
	Server Kind = "SERVER" // registered server actions, blocking
	User   Kind = "USER"   // a person's answer
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

// Step is one step of a process.
type Step struct {
	Name    string // the property name
	Context string // the context it sits in; "" for a plain step
	Kind    Kind
	// Action is the registered action a SERVER or fire-and-forget step
	// runs, when Options.Actions named it; see MatchAction.
	Action string
	// FireAndForget marks an LLM step whose value is also handed to Action
	// after its chunk, without waiting.
	FireAndForget bool
	// References are the earlier results the step needs.
	References []Ref
	// Schema is the step's schema as the document has it (flattened).
	Schema jsonv.Value
	// Path is where the step is in the document.
	Path jsonv.Pointer
	// Inputs is a blocking step's input (SPEC §2): its properties other
	// than "output", which the model fills in the LLM chunk before it;
	// null for a step with none (its action gets its references' values).
	Inputs jsonv.Value
	// WithReferences: the step's action gets its references' values beside
	// its inputs (the engine keyword "withReferences").
	WithReferences bool
	// Fills is the blocking step whose Inputs this LLM step asks the model
	// for; the step's value is that step's input.
	Fills *Step

	index int // position in execution order
}

// StatePath is where the step's result lives in process state; an input
// step's value is its blocking step's "input".
func (s *Step) StatePath() []string {
	if s.Fills != nil {
		return append(s.Fills.StatePath(), "input")
	}
	if s.Context == "" {
		return []string{s.Name}
	}
	return []string{s.Context, s.Name}
}

// QualifiedName is the step's name with its context: "llmContext1.identifyParticipants".
func (s *Step) QualifiedName() string { return strings.Join(s.StatePath(), ".") }

// Ref is a resolved reference: a step and a path of fields inside its
// result.
type Ref struct {
	Step  *Step
	Field []string
}

// Path is the reference's path in process state.
func (r Ref) Path() []string { return append(r.Step.StatePath(), r.Field...) }

// String is the canonical form: "context.step.field…".
func (r Ref) String() string { return strings.Join(r.Path(), ".") }

// Chunk is a maximal run of steps of one kind: one model call, one run of
// server actions, or one wait for a person.
type Chunk struct {
	// Name is the definition's name in "$defs": LLM_<chunk>, SERVER_<chunk>
	// or USER_<chunk>.
	Name    string
	Kind    Kind
	Context string // the context its steps sit in; "" for plain steps
	Steps   []*Step
	// Members are the chunk's properties in order: its steps, and the "_"
	// and "$" members that are no steps — a mixin's _considerations, a
	// loop's _loopDone — which the model fills and the engine keeps as the
	// chunk's thinking and metrics.
	Members []Member
	// Loop, when set, repeats the chunk (a Loop_Mixin): SPEC §4.2.
	Loop *Loop
	// References are the results from outside the chunk its steps need, in
	// order of first use.
	References []Ref
}

// Member is one property of a chunk: a step, or (Step nil) a thinking
// field or metric of the chunk itself.
type Member struct {
	Name   string
	Schema jsonv.Value
	Step   *Step
}

// Loop is a chunk's loop: the engine asks again, showing the model its
// previous attempt, until the value at Done is true or Max attempts were
// made.
type Loop struct {
	Max  int           `json:"max"`
	Done jsonv.Pointer `json:"done"` // in the chunk's value: "/_loopDone"
}

// Process is a compiled process.
type Process struct {
	// Document is the compiled document: the input plus "$defs" with one
	// definition per chunk, and "entryPoint" or "directCall".
	Document jsonv.Value
	// Chunks in execution order.
	Chunks []*Chunk
	// Direct is set when the process reduced to a direct server call.
	Direct *DirectCall
	// Prompt is a pipeline's quoted prompt, or "".
	Prompt string
}

// Steps returns every step in execution order.
func (p *Process) Steps() []*Step {
	var steps []*Step
	for _, c := range p.Chunks {
		steps = append(steps, c.Steps...)
	}
	return steps
}

// Step returns the step of a qualified name ("llmContext1.fetchAvailability"
// or a plain step's name), or nil.
func (p *Process) Step(qualified string) *Step {
	for _, c := range p.Chunks {
		for _, s := range c.Steps {
			if s.QualifiedName() == qualified {
				return s
			}
		}
	}
	return nil
}

// Chunk returns the chunk of that name, or nil.
func (p *Process) Chunk(name string) *Chunk {
	for _, c := range p.Chunks {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// DirectCall is a pipeline that reduced to one LLM chunk whose last step is
// a fire-and-forget action: no process, one model call, then the action.
type DirectCall struct {
	Action string
	Step   *Step  // the last step: its value is the action's input
	Chunk  *Chunk // the instruction the model fills
}

// contextName matches the names of contexts: llmContext1, serverContext2,
// userContext, LLM_Context, …
var contextName = regexp.MustCompile(`(?i)^(llm|server|user)_?context`)

// ContextKind returns the kind of a top-level property name that names a
// context, and ok == false for a plain step.
func ContextKind(name string) (k Kind, ok bool) {
	m := contextName.FindStringSubmatch(name)
	if m == nil {
		return "", false
	}
	switch strings.ToLower(m[1]) {
	case "llm":
		return LLM, true
	case "server":
		return Server, true
	}
	return User, true
}

// MatchAction returns the action of actions that step name runs: the one
// of the same name, or for a pipeline step "step<N>_<snake>" the one whose
// compose.SnakeName is <snake>.
func MatchAction(step string, actions []string) (string, bool) {
	if slices.Contains(actions, step) {
		return step, true
	}
	rest, ok := cutStepPrefix(step)
	if !ok {
		return "", false
	}
	for _, a := range actions {
		if compose.SnakeName(a) == rest {
			return a, true
		}
	}
	return "", false
}

// cutStepPrefix removes "step<N>_" from a pipeline step name.
func cutStepPrefix(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, "step")
	if !ok {
		return "", false
	}
	i := 0
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	if i == 0 || i >= len(rest) || rest[i] != '_' {
		return "", false
	}
	return rest[i+1:], true
}

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

// collectSteps reads the contexts and steps, and classifies each step.
func (c *compiler) collectSteps() {
	c.byName, c.context = make(map[string][]*Step), make(map[string]bool)
	props := schema.Properties(c.doc)
	if props.Len() == 0 {
		c.errorf("", "a process needs properties: its contexts (llmContext1, serverContext1, userContext, …) or its steps")
		return
	}
	for _, m := range props.Members() {
		at := jsonv.PointerTo("properties", m.Name)
		if kind, ok := ContextKind(m.Name); ok {
			if !c.readable("context", m.Name, "/properties") {
				continue
			}
			steps := schema.Properties(m.Value)
			if m.Value.Object() == nil || steps.Len() == 0 {
				c.errorf(at, "context %q has no steps: a context is an object schema whose properties are its steps", m.Name)
				continue
			}
			c.context[m.Name] = true
			g := group{context: m.Name, kind: kind, schema: m.Value}
			for _, s := range steps.Members() {
				sat := at.Append("properties").Append(s.Name)
				if !c.readable("step", s.Name, at.Append("properties")) {
					continue
				}
				if thought(s.Name) {
					g.members = append(g.members, Member{Name: s.Name, Schema: s.Value})
					continue
				}
				if !c.room() {
					continue
				}
				if st := c.step(s.Name, m.Name, kind, s.Value, sat); st != nil {
					g.members = append(g.members, Member{Name: s.Name, Schema: s.Value, Step: st})
				}
			}
			if !slices.ContainsFunc(g.members, func(x Member) bool { return x.Step != nil }) && len(g.members) > 0 {
				c.errorf(at, "context %q has no steps, only thinking fields (%s)", m.Name, memberNames(g.members))
				continue
			}
			c.groups = append(c.groups, g)
			continue
		}
		if !c.readable("step", m.Name, "/properties") {
			continue
		}
		if thought(m.Name) {
			// The process's own thinking field: it joins the chunk around it.
			c.groups = append(c.groups, group{members: []Member{{Name: m.Name, Schema: m.Value}}})
			continue
		}
		if !c.room() {
			continue
		}
		if st := c.step(m.Name, "", "", m.Value, at); st != nil {
			c.groups = append(c.groups, group{members: []Member{{Name: m.Name, Schema: m.Value, Step: st}}})
		}
	}
	if c.counted > c.opts.maxSteps() {
		c.over = true
		c.errorf("/properties", "the process is too large: it has %d steps, over the limit of %d for one process", c.counted, c.opts.maxSteps())
	}
}

// readable reports whether a context or step name reads as it is written
// (schema.CheckName), and reports it at the properties holding it when
// not. The path stops above the name: an error line never prints it raw.
func (c *compiler) readable(what, name string, props jsonv.Pointer) bool {
	if err := schema.CheckName(name); err != nil {
		c.errorf(props, "%s name %q %v: a %s's name must read as it is written", what, name, err, what)
		return false
	}
	return true
}

// room reports whether one more step is within the bound; past it, steps
// are counted but not classified, so that a huge process costs little
// before it is refused.
func (c *compiler) room() bool {
	if c.counted++; c.counted > c.opts.maxSteps() {
		return false
	}
	return c.alive()
}

// step classifies one step (SPEC §5, in order).
func (c *compiler) step(name, ctx string, ctxKind Kind, s jsonv.Value, at jsonv.Pointer) *Step {
	if s.Object() == nil {
		c.errorf(at, "step %q must be an object schema, not %s", name, show(s))
		return nil
	}
	st := &Step{Name: name, Context: ctx, Schema: s, Path: at, index: len(c.steps)}
	output, hasOutput := schema.Properties(s).Get("output")
	switch {
	case hasOutput || strings.HasSuffix(name, "_Activity"):
		st.Kind = Server
		if hasOutput && !nullable(output) {
			c.errorf(at.Append("properties").Append("output"), "blocking step %q: its output must be nullable, since a model filling the pipeline sets it to null (write \"type\": [\"object\", \"null\"])", name)
		}
		if hasOutput {
			st.Inputs = inputsOf(s)
		}
		st.WithReferences = s.Lookup("withReferences").Bool()
	case strings.HasSuffix(name, "_User") || ctxKind == User:
		st.Kind = User
	case ctxKind == Server:
		st.Kind = Server
	default:
		st.Kind = LLM
		if a, ok := MatchAction(name, c.opts.Actions); ok {
			st.FireAndForget, st.Action = true, a
		}
	}
	if st.Kind == Server && c.opts.Actions != nil {
		if a, ok := MatchAction(name, c.opts.Actions); ok {
			st.Action = a
		} else {
			c.errorf(at, "blocking step %q runs on the server, but no registered action matches it (registered: %s)", name, listOrNone(c.opts.Actions))
		}
	}
	c.steps = append(c.steps, st)
	c.byName[name] = append(c.byName[name], st)
	return st
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// nullable reports whether a schema admits null.
func nullable(s jsonv.Value) bool {
	switch s.Kind() {
	case jsonv.KindBool:
		return s.Bool()
	case jsonv.KindObject:
	default:
		return false
	}
	if t, ok := s.Get("type"); ok {
		switch t.Kind() {
		case jsonv.KindString:
			return t.Str() == "null"
		case jsonv.KindArray:
			return slices.Contains(schema.Strings(t), "null")
		}
		return false
	}
	if e, ok := s.Get("enum"); ok {
		return slices.ContainsFunc(e.Array(), jsonv.Value.IsNull)
	}
	if k, ok := s.Get("const"); ok {
		return k.IsNull()
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		if alts, ok := s.Get(kw); ok {
			return slices.ContainsFunc(alts.Array(), nullable)
		}
	}
	return true // unconstrained
}

// thought reports whether a context's or process's member is a thinking
// field or a metric rather than a step (SPEC §2: "_" and "$" at any level).
func thought(name string) bool { return schema.IsThinking(name) || schema.IsMetric(name) }

func memberNames(ms []Member) string {
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = m.Name
	}
	return strings.Join(names, ", ")
}

// inputsOf is a blocking step's input schema: its properties other than
// "output", with their required names; null when it has none.
func inputsOf(s jsonv.Value) jsonv.Value {
	props := jsonv.NewObject(0)
	for name, p := range schema.Properties(s).All() {
		if name != "output" {
			props.Set(name, p)
		}
	}
	if props.Len() == 0 {
		return jsonv.NullValue()
	}
	var req []string
	for _, r := range schema.Required(s) {
		if r != "output" {
			req = append(req, r)
		}
	}
	return jsonv.ObjectValue(
		jsonv.Member{Name: "type", Value: jsonv.StringValue("object")},
		jsonv.Member{Name: "properties", Value: props.Value()},
		jsonv.Member{Name: "required", Value: schema.StringArray(req)})
}

// partition forms chunks: maximal runs of one kind inside a context, or
// among consecutive plain steps. A thinking field joins the run of the
// step before it (the run after it when it comes first).
func (c *compiler) partition() {
	used := map[string]int{}
	var pending []Member // thinking fields of the process waiting for a chunk
	add := func(kind Kind, ctx string, ctxSchema jsonv.Value, members []Member, base string) {
		name := string(kind) + "_" + base
		if used[name]++; used[name] > 1 {
			name = fmt.Sprintf("%s_%d", name, used[name])
		}
		if len(pending) > 0 && kind != Server {
			// The process's own thinking fields before this chunk.
			members = append(pending, members...)
			pending = nil
		}
		ch := &Chunk{Name: name, Kind: kind, Context: ctx, Members: members}
		for _, m := range members {
			if m.Step != nil {
				ch.Steps = append(ch.Steps, m.Step)
			}
		}
		if len(ch.Steps) == 0 {
			return // thinking fields alone: reported by collectSteps
		}
		c.refs(ch)
		c.loop(ch, ctxSchema)
		c.chunks = append(c.chunks, ch)
	}
	// runs splits members into maximal runs of one kind; a thinking field
	// takes the kind of the step before it, or of the first step.
	runs := func(members []Member) [][]Member {
		var out [][]Member
		kind, prev := runKind(members), Kind("")
		for i, m := range members {
			if m.Step != nil {
				kind = m.Step.Kind
			}
			if i == 0 || kind != prev {
				out = append(out, nil)
			}
			out[len(out)-1] = append(out[len(out)-1], m)
			prev = kind
		}
		return out
	}
	var plain []Member
	flush := func() {
		for _, r := range runs(plain) {
			if k := runKind(r); k != "" {
				add(k, "", jsonv.NullValue(), r, firstStep(r).Name)
			} else {
				pending = append(pending, r...)
			}
		}
		plain = nil
	}
	for _, g := range c.groups {
		if g.context == "" {
			plain = append(plain, g.members...)
			continue
		}
		flush()
		rs := runs(g.members)
		for i, r := range rs {
			base := g.context
			if len(rs) > 1 {
				base = fmt.Sprintf("%s_%d", g.context, i+1)
			}
			add(runKind(r), g.context, g.schema, r, base)
		}
	}
	flush()
	if len(pending) > 0 {
		// Thinking fields after the last step join the last model's chunk.
		for i := len(c.chunks) - 1; i >= 0; i-- {
			if c.chunks[i].Kind != Server {
				c.chunks[i].Members = append(c.chunks[i].Members, pending...)
				pending = nil
				break
			}
		}
		if pending != nil {
			c.errorf("/properties", "thinking fields %s have no model's or person's chunk to go in: the process has none", memberNames(pending))
		}
	}
	for _, ch := range c.chunks {
		if ch.Kind != Server {
			continue
		}
		for _, m := range ch.Members {
			if m.Step == nil {
				c.errorf(ch.Steps[0].Path.Parent(), "%s is a thinking field among server steps (%s): only a model or a person fills one", m.Name, ch.Name)
			}
		}
	}
	c.fillInputs()
}

// runKind is the kind of a run's steps.
func runKind(r []Member) Kind {
	if s := firstStep(r); s != nil {
		return s.Kind
	}
	return ""
}

func firstStep(r []Member) *Step {
	for _, m := range r {
		if m.Step != nil {
			return m.Step
		}
	}
	return nil
}

// refs sets a chunk's references: those of its steps that lie outside it,
// in order of first use.
func (c *compiler) refs(ch *Chunk) {
	inside := make(map[*Step]bool, len(ch.Steps))
	for _, s := range ch.Steps {
		inside[s] = true
	}
	seen := map[string]bool{}
	for _, r := range ch.References {
		seen[r.String()] = true
	}
	for _, s := range ch.Steps {
		for _, r := range s.References {
			if !inside[r.Step] && !seen[r.String()] {
				seen[r.String()] = true
				ch.References = append(ch.References, r)
			}
		}
	}
}

// loop sets a chunk's loop: its context's (a Loop_Mixin around the
// context), or else its first step's (around one step). Only a model's
// chunk loops.
func (c *compiler) loop(ch *Chunk, ctxSchema jsonv.Value) {
	read := func(l jsonv.Value, at jsonv.Pointer) *Loop {
		if l.IsNull() {
			return nil
		}
		n, _ := l.Lookup("max").Int()
		return &Loop{Max: int(max(n, 1)), Done: at.Append(l.Lookup("done").Str())}
	}
	lp := read(ctxSchema.Lookup("loop"), "")
	for _, s := range ch.Steps {
		if lp == nil {
			lp = read(s.Schema.Lookup("loop"), jsonv.PointerTo(s.Name))
		}
	}
	if lp != nil && ch.Kind != LLM {
		c.errorf(ch.Steps[0].Path, "%s loops, but only a model's chunk repeats: a loop mixin belongs around LLM steps", ch.Name)
		return
	}
	ch.Loop = lp
}

// fillInputs gives every blocking step with inputs (SPEC §2) a step that
// asks the model for them: in the LLM chunk just before it, or else in a
// chunk made for that — also between two server steps when the second's
// inputs come after the first (its chunk is split there).
func (c *compiler) fillInputs() {
	var out []*Chunk
	for _, ch := range c.chunks {
		if ch.Kind != Server {
			out = append(out, ch)
			continue
		}
		part := &Chunk{Name: ch.Name, Kind: Server, Context: ch.Context}
		for _, s := range ch.Steps {
			if !s.Inputs.IsNull() {
				if len(part.Steps) > 0 {
					// The server steps before it run first.
					c.refs(part)
					out = append(out, part)
					part = &Chunk{Name: ch.Name + "_" + s.Name, Kind: Server, Context: ch.Context}
				}
				var into *Chunk
				if n := len(out); n > 0 && out[n-1].Kind == LLM {
					into = out[n-1]
				} else {
					into = &Chunk{Name: "LLM_" + s.Name + "_input", Kind: LLM, Context: s.Context}
					out = append(out, into)
				}
				if slices.ContainsFunc(into.Members, func(m Member) bool { return m.Name == s.Name }) {
					c.errorf(s.Path, "blocking step %q: chunk %s, which asks the model for its inputs, has a member of that name already", s.Name, into.Name)
				} else {
					f := &Step{Name: s.Name, Context: s.Context, Kind: LLM, Fills: s, Schema: fillerSchema(s), Path: s.Path, References: s.References, index: s.index}
					into.Steps = append(into.Steps, f)
					into.Members = append(into.Members, Member{Name: s.Name, Schema: f.Schema, Step: f})
					c.refs(into)
				}
			}
			part.Steps = append(part.Steps, s)
			part.Members = append(part.Members, Member{Name: s.Name, Schema: s.Schema, Step: s})
		}
		c.refs(part)
		out = append(out, part)
	}
	c.chunks = out
}

// fillerSchema is what the model fills for a blocking step: the step's
// inputs and its "output" as null, left for the server.
func fillerSchema(s *Step) jsonv.Value {
	out := jsonv.NewObject(6)
	for _, kw := range []string{"title", "description"} {
		if v, ok := s.Schema.Get(kw); ok {
			out.Set(kw, v)
		}
	}
	out.Set("type", jsonv.StringValue("object"))
	props := schema.Properties(s.Inputs).Clone()
	props.Set("output", jsonv.ObjectValue(
		jsonv.Member{Name: "type", Value: jsonv.StringValue("null")},
		jsonv.Member{Name: "description", Value: jsonv.StringValue("Filled by the server once the step runs: leave it null.")}))
	out.Set("properties", props.Value())
	out.Set("required", schema.StringArray(append(schema.Required(s.Inputs), "output")))
	return out.Value()
}

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
