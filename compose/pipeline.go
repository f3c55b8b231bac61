package compose

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/schema"
)

// InstructionsFolder is where instruction names resolve in the registry:
// the name N is aug:instructions/N.
const InstructionsFolder = "instructions"

// Pipeline parses a pipeline expression (see ParsePipeline) and composes it
// into one schema: one property per step, step1_<snake_name>, step2_…, in
// execution order, each the flattened instruction with a "references" list
// naming the steps its arguments come from — unless the instruction declares
// its own. A call written twice with the same arguments is one step. A
// quoted prompt is kept under the engine keyword "prompt".
//
// A pipeline has at most opts.MaxSteps instruction calls (MaxSteps by
// default), and its steps' instructions hold at most opts.MaxInlined values
// together. When ctx ends first, the error wraps its cause.
func Pipeline(ctx context.Context, expr string, opts Options) (jsonv.Value, error) {
	root, err := parsePipeline(expr, opts.maxSteps())
	if err != nil {
		return jsonv.Value{}, err
	}
	l := &lowering{ctx: ctx, opts: opts, src: expr, byKey: make(map[string]*step), byBinding: make(map[*Binding]*step), instructions: make(map[string]*instruction)}
	l.lower(root)
	if l.cancelled {
		return jsonv.Value{}, ended(ctx, PipelineFile)
	}
	if len(l.steps) == 0 && len(l.errs) == 0 {
		l.errs = append(l.errs, locate(expr, root.Pos(), "a pipeline needs at least one instruction after its prompt"))
	}
	if err := l.errs.Err(); err != nil {
		return jsonv.Value{}, err
	}
	out := jsonv.NewObject(5)
	out.Set("$schema", jsonv.StringValue("https://json-schema.org/draft/2020-12/schema"))
	if l.prompt != "" {
		out.Set("prompt", jsonv.StringValue(l.prompt))
	}
	out.Set("type", jsonv.StringValue("object"))
	props := jsonv.NewObject(len(l.steps))
	names := make([]string, len(l.steps))
	for i, s := range l.steps {
		props.Set(s.prop, s.schema)
		names[i] = s.prop
	}
	out.Set("properties", props.Value())
	out.Set("required", schema.StringArray(names))
	if opts.Sources != nil {
		*opts.Sources = append(*opts.Sources, l.sources...)
	}
	return out.Value(), nil
}

type step struct {
	prop   string // step<i>_<snake name>
	schema jsonv.Value
}

// instruction is an instruction a pipeline calls, found and flattened once
// however many steps call it.
type instruction struct {
	flat    jsonv.Value // nil (the zero Value) when it cannot be used
	size    int         // the values in flat
	err     error       // why it was not found, reported at every call
	sources Sources     // where flat comes from, when Options.Sources asks
}

type lowering struct {
	ctx          context.Context
	opts         Options
	steps        []*step
	byKey        map[string]*step   // by the call's canonical key (see key)
	byBinding    map[*Binding]*step // a program's bindings, each lowered once
	instructions map[string]*instruction
	size         int // the values of the steps' instructions, together
	prompt       string
	errs         schema.ErrorList
	sources      Sources // of the steps, when Options.Sources asks
	src          string  // the expression, to locate errors
	cancelled    bool    // ctx ended: lower no more
	full         bool    // the steps grew too large: lower no more
}

// lower adds the steps of e, arguments first, and returns e's step (nil
// for the prompt).
func (l *lowering) lower(e Expr) *step {
	if l.cancelled || l.full {
		return nil
	}
	switch e := e.(type) {
	case *Program:
		// Bindings in the order written: each is a step in that order.
		for _, b := range e.Bindings {
			l.byBinding[b] = l.lower(b.Value)
		}
		if e.Final != nil {
			return l.lower(e.Final)
		}
		return l.byBinding[e.Bindings[len(e.Bindings)-1]]
	case *Ref:
		if s, ok := l.byBinding[e.Binding]; ok {
			return s
		}
		return l.lower(e.Binding.Value)
	case *Prompt:
		if e.Text != "" {
			if l.prompt != "" && l.prompt != e.Text {
				l.errorAt(e.Offset, "the pipeline has two different prompts: %q and %q", l.prompt, e.Text)
			}
			l.prompt = e.Text
		}
		return nil
	case *Call:
		args := make([]*step, len(e.Args))
		for i, a := range e.Args {
			args[i] = l.lower(a.Value)
		}
		if l.cancelled || l.full {
			return nil
		}
		key := key(e, args)
		if s, ok := l.byKey[key]; ok {
			return s
		}
		if l.ctx.Err() != nil {
			l.cancelled = true
			return nil
		}
		var refs []string
		for _, s := range args {
			if s != nil && !slices.Contains(refs, s.prop) {
				refs = append(refs, s.prop)
			}
		}
		s := &step{prop: fmt.Sprintf("step%d_%s", len(l.steps)+1, SnakeName(e.Name))}
		s.schema = l.instruction(e, refs)
		if l.opts.Sources != nil {
			at := jsonv.Pointer("").Append("properties").Append(s.prop)
			l.sources = append(l.sources, l.find(e.Name).sources.at(at)...)
		}
		l.steps = append(l.steps, s)
		l.byKey[key] = s
		return s
	}
	return nil
}

// key is a call's canonical form, given the steps its arguments lowered
// to: two calls of one instruction on the same arguments are one step.
// Arguments are named by their step, not spelled out, so that the key of
// each call of a long chain is short and making them all costs linear time.
func key(c *Call, args []*step) string {
	var b strings.Builder
	b.WriteString(c.Name)
	for i, a := range c.Args {
		b.WriteByte(0)
		b.WriteString(a.Name)
		b.WriteByte(0)
		v := a.Value
		for r, ok := v.(*Ref); ok; r, ok = v.(*Ref) {
			v = r.Binding.Value
		}
		switch v := v.(type) {
		case *Prompt:
			b.WriteString(v.String()) // "prompt", or the quoted text
		default:
			b.WriteString(args[i].prop)
		}
	}
	return b.String()
}

func (l *lowering) errorAt(off int, format string, args ...any) {
	l.errs = append(l.errs, locate(l.src, off, fmt.Sprintf(format, args...)))
}

// instruction returns the flattened schema of the instruction c names, with
// references to refs unless it declares its own.
func (l *lowering) instruction(c *Call, refs []string) jsonv.Value {
	in := l.find(c.Name)
	if in.err != nil {
		l.errs = append(l.errs, locate(l.src, c.Offset, in.err.Error()))
	}
	if in.flat.Object() == nil {
		return jsonv.NewObject(0).Value()
	}
	if l.size += in.size; l.size > l.opts.maxInlined() {
		l.errorAt(c.Offset, "the pipeline is too large: its steps' instructions hold more than %d values together", l.opts.maxInlined())
		l.full = true
		return jsonv.NewObject(0).Value()
	}
	flat := in.flat.Clone()
	obj := flat.Object()
	if !obj.Has("references") && len(refs) > 0 {
		at := 0
		if names := obj.Names(); len(names) > 0 && names[0] == "title" {
			at = 1
		}
		obj.Insert(at, "references", schema.StringArray(refs))
	}
	return flat
}

// find finds and flattens the instruction name once. The problems of its
// files are reported at its first call; that it cannot be found, at every
// call.
func (l *lowering) find(name string) *instruction {
	if in, ok := l.instructions[name]; ok {
		return in
	}
	in := &instruction{}
	l.instructions[name] = in
	doc, err := FindInstruction(l.opts.Registry, name)
	if err != nil {
		var malformed *schema.Error
		if errors.As(err, &malformed) {
			l.errs = append(l.errs, malformed)
			err = fmt.Errorf("instruction %s cannot be used: %s is malformed", name, malformed.File)
		}
		in.err = err
		return in
	}
	opts := l.opts
	if opts.Sources != nil {
		opts.Sources = &in.sources
	}
	flat, err := FlattenURI(l.ctx, doc.URI.String(), opts)
	if err != nil {
		if l.ctx.Err() != nil {
			l.cancelled = true
			return in
		}
		l.errs.Append(doc.File, err)
		return in
	}
	in.flat, in.size = flat, count(flat)
	return in
}

// FindInstruction returns the registry document of the instruction name:
// aug:instructions/<name>, or else the one instruction whose name differs
// only in case (IdentifyParticipants finds identifyParticipants). An unknown
// name is an error that suggests the closest known names.
func FindInstruction(r *registry.Registry, name string) (*registry.Document, error) {
	if r == nil {
		return nil, fmt.Errorf("cannot resolve instruction %q: %w", name, registry.ErrNoRegistry)
	}
	uri := registry.Scheme + ":" + InstructionsFolder + "/" + name
	doc, err := r.Document(uri)
	if err == nil || !errors.Is(err, registry.ErrNotFound) {
		return doc, err
	}
	known := r.Names(InstructionsFolder)
	var fold []string
	for _, k := range known {
		if strings.EqualFold(k, name) {
			fold = append(fold, k)
		}
	}
	if len(fold) == 1 {
		return r.Document(registry.Scheme + ":" + InstructionsFolder + "/" + fold[0])
	}
	msg := fmt.Sprintf("unknown instruction %q: no %s in the registry", name, uri)
	if s := Suggest(name, known, 3); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, ", ") + "?"
	} else if len(known) == 0 {
		msg += " (it has no instructions at all)"
	}
	return nil, errors.New(msg)
}

// Suggest returns up to n of known closest to name by edit distance
// (ignoring case), nearest first, leaving out those too far to be a typo.
// It costs time in proportion to len(known): names whose length alone puts
// them too far are skipped, and a distance stops being counted once it is
// too far.
func Suggest(name string, known []string, n int) []string {
	type cand struct {
		s string
		d int
	}
	var cs []cand
	lname := []rune(strings.ToLower(name))
	limit := max(2, len(lname)/3)
	if len(lname) <= 3 {
		limit = 1 // a short name is near everything
	}
	for _, k := range known {
		lk := strings.ToLower(k)
		if strings.Contains(lk, string(lname)) {
			cs = append(cs, cand{k, distance(lname, []rune(lk), math.MaxInt)})
			continue
		}
		if abs(utf8.RuneCountInString(lk)-len(lname)) > limit {
			continue
		}
		if d := distance(lname, []rune(lk), limit); d <= limit {
			cs = append(cs, cand{k, d})
		}
	}
	slices.SortStableFunc(cs, func(a, b cand) int { return a.d - b.d })
	var out []string
	for _, c := range cs[:min(n, len(cs))] {
		out = append(out, c.s)
	}
	return out
}

func abs(x int) int { return max(x, -x) }

// distance is the Levenshtein distance between a and b, or some value over
// bound once it is sure to be over bound.
func distance(a, b []rune, bound int) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		least := i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			least = min(least, cur[j])
		}
		if least > bound {
			return least // every later row is at least this
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Suffixes that classify a step (SPEC §5) keep their case in step names, so
// that FetchAvailability_Activity becomes fetch_availability_Activity and
// stays a server step, while NotifyUser becomes notify_user and does not
// become a person's step.
var classSuffixes = []string{"_Activity", "_User"}

// SnakeName turns an instruction name into the snake_case used in step
// names: IdentifyParticipants → identify_participants, HTTPRequest →
// http_request; a folder prefix (billing/Report) is dropped, and the class
// suffixes _Activity and _User are kept as written.
func SnakeName(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	suffix := ""
	for _, s := range classSuffixes {
		if strings.HasSuffix(name, s) && len(name) > len(s) {
			name, suffix = strings.TrimSuffix(name, s), s
		}
	}
	rs := []rune(name)
	var b strings.Builder
	for i, r := range rs {
		if unicode.IsUpper(r) && i > 0 {
			prev := rs[i-1]
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
				b.WriteByte('_')
			}
		}
		b.WriteRune(unicode.ToLower(r))
	}
	s := b.String()
	for strings.Contains(s, "__") {
		s = strings.ReplaceAll(s, "__", "_")
	}
	return strings.Trim(s, "_") + suffix
}
