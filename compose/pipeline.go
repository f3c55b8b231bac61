package compose

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

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
func Pipeline(expr string, opts Options) (jsonv.Value, error) {
	root, err := ParsePipeline(expr)
	if err != nil {
		return jsonv.Value{}, err
	}
	l := &lowering{opts: opts, src: expr, byKey: make(map[string]*step)}
	l.lower(root)
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
	return out.Value(), nil
}

type step struct {
	prop   string // step<i>_<snake name>
	schema jsonv.Value
}

type lowering struct {
	opts   Options
	steps  []*step
	byKey  map[string]*step // by the call's canonical text
	prompt string
	errs   schema.ErrorList
	src    string // the expression, to locate errors
}

// lower adds the steps of e, arguments first, and returns e's step (nil
// for the prompt).
func (l *lowering) lower(e Expr) *step {
	switch e := e.(type) {
	case *Prompt:
		if e.Text != "" {
			if l.prompt != "" && l.prompt != e.Text {
				l.errorAt(e.Offset, "the pipeline has two different prompts: %q and %q", l.prompt, e.Text)
			}
			l.prompt = e.Text
		}
		return nil
	case *Call:
		key := e.String()
		if s, ok := l.byKey[key]; ok {
			return s
		}
		var refs []string
		for _, a := range e.Args {
			if s := l.lower(a.Value); s != nil && !slices.Contains(refs, s.prop) {
				refs = append(refs, s.prop)
			}
		}
		s := &step{prop: fmt.Sprintf("step%d_%s", len(l.steps)+1, SnakeName(e.Name))}
		s.schema = l.instruction(e, refs)
		l.steps = append(l.steps, s)
		l.byKey[key] = s
		return s
	}
	return nil
}

func (l *lowering) errorAt(off int, format string, args ...any) {
	l.errs = append(l.errs, locate(l.src, off, fmt.Sprintf(format, args...)))
}

// instruction returns the flattened schema of the instruction c names, with
// references to refs unless it declares its own.
func (l *lowering) instruction(c *Call, refs []string) jsonv.Value {
	doc, err := FindInstruction(l.opts.Registry, c.Name)
	if err != nil {
		var malformed *schema.Error
		if errors.As(err, &malformed) {
			l.errs = append(l.errs, malformed)
			err = fmt.Errorf("instruction %s cannot be used: %s is malformed", c.Name, malformed.File)
		}
		l.errs = append(l.errs, locate(l.src, c.Offset, err.Error()))
		return jsonv.NewObject(0).Value()
	}
	flat, err := FlattenURI(doc.URI.String(), l.opts)
	if err != nil {
		l.errs.Append(doc.File, err)
		return jsonv.NewObject(0).Value()
	}
	obj := flat.Object()
	if obj == nil {
		l.errs.Add(doc.File, "", "instruction %s is not a schema object", c.Name)
		return jsonv.NewObject(0).Value()
	}
	if !obj.Has("references") && len(refs) > 0 {
		at := 0
		if names := obj.Names(); len(names) > 0 && names[0] == "title" {
			at = 1
		}
		obj.Insert(at, "references", schema.StringArray(refs))
	}
	return flat
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
func Suggest(name string, known []string, n int) []string {
	type cand struct {
		s string
		d int
	}
	var cs []cand
	lname := strings.ToLower(name)
	limit := max(2, len([]rune(name))/3)
	if len([]rune(name)) <= 3 {
		limit = 1 // a short name is near everything
	}
	for _, k := range known {
		d := distance(lname, strings.ToLower(k))
		if d <= limit || strings.Contains(strings.ToLower(k), lname) {
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

// distance is the Levenshtein distance between a and b, in runes.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
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
