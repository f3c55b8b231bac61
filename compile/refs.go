package compile

import (
	"fmt"
	"strings"

	"github.com/augceo/vibe/compose"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

// resolveReferences resolves every step's "references": "context.step.field…",
// "step.field…", or a bare step name (a sibling first, then any step of that
// name). A reference must name an earlier step.
func (c *compiler) resolveReferences() {
	for _, st := range c.steps {
		if !c.alive() {
			return
		}
		refs, ok := st.Schema.Get("references")
		if !ok {
			continue
		}
		at := st.Path.Append("references")
		if refs.Kind() != jsonv.KindArray {
			c.errorf(at, "step %q: references must be an array of step paths, not %s", st.Name, show(refs))
			continue
		}
		for i, r := range refs.Array() {
			rat := at.AppendIndex(i)
			if r.Kind() != jsonv.KindString || r.Str() == "" {
				c.errorf(rat, "step %q: a reference must be a step path such as \"llmContext1.identifyParticipants\" or \"step4_find_user.output\", not %s", st.Name, show(r))
				continue
			}
			ref, msg := c.resolve(st, r.Str())
			if msg != "" {
				c.errorf(rat, "step %q references %q, %s", st.Name, r.Str(), msg)
				continue
			}
			switch {
			case ref.Step == st:
				c.errorf(rat, "step %q references %q, which is the step itself", st.Name, r.Str())
			case ref.Step.index > st.index:
				msg := fmt.Sprintf("step %q references %q, which runs later (step %d of the process, after this step %d)", st.Name, r.Str(), ref.Step.index+1, st.index+1)
				if c.reaches(ref.Step, st) {
					msg += fmt.Sprintf("; and %s references back: a reference cycle", ref.Step.QualifiedName())
				}
				c.errorf(rat, "%s", msg)
			default:
				st.References = append(st.References, ref)
			}
		}
	}
}

// resolve finds what a reference names, or says why it names nothing.
func (c *compiler) resolve(from *Step, ref string) (Ref, string) {
	parts := strings.Split(ref, ".")
	var candidates []*Step
	var field []string
	if c.context[parts[0]] && len(parts) > 1 {
		ctx := parts[0]
		for _, s := range c.byName[parts[1]] {
			if s.Context == ctx {
				candidates = append(candidates, s)
			}
		}
		if len(candidates) == 0 {
			msg := fmt.Sprintf("but context %s has no step %q", ctx, parts[1])
			return Ref{}, msg + c.suggest(from, ref, 2)
		}
		field = parts[2:]
	} else {
		name := parts[0]
		for _, s := range c.byName[name] {
			if s.Context == from.Context {
				candidates = []*Step{s}
				break
			}
			candidates = append(candidates, s)
		}
		if len(candidates) == 0 {
			return Ref{}, "which names no step" + c.suggest(from, ref, 1)
		}
		if len(candidates) > 1 {
			qs := make([]string, len(candidates))
			for i, s := range candidates {
				qs[i] = s.QualifiedName()
			}
			return Ref{}, fmt.Sprintf("which is ambiguous: it names %s; qualify it with its context", strings.Join(qs, " and "))
		}
		field = parts[1:]
	}
	target := candidates[0]
	// Check the fields against the step's schema where it lists properties.
	s := target.Schema
	for i, f := range field {
		props := schema.Properties(s)
		if props == nil {
			break
		}
		next, ok := props.Get(f)
		if !ok {
			msg := fmt.Sprintf("but step %s has no field %q", strings.Join(append(target.StatePath(), field[:i]...), "."), f)
			if sug := compose.Suggest(f, props.Names(), 1); len(sug) > 0 {
				msg += fmt.Sprintf("; did you mean %q?", sug[0])
			} else {
				msg += fmt.Sprintf(" (fields: %s)", strings.Join(props.Names(), ", "))
			}
			return Ref{}, msg
		}
		s = next
	}
	return Ref{Step: target, Field: field}, ""
}

// suggest proposes the name of a step before from that ref may have meant:
// for "context.step…", a step of that context with a near name, or else a
// step of exactly that name in another context; for "step…", a step with a
// near name.
func (c *compiler) suggest(from *Step, ref string, n int) string {
	parts := strings.Split(ref, ".")
	earlier := c.steps[:from.index]
	var names []string
	if n == 2 {
		for _, s := range earlier {
			if s.Context == parts[0] {
				names = append(names, s.Name)
			}
		}
		if sug := compose.Suggest(parts[1], names, 1); len(sug) > 0 {
			return fmt.Sprintf("; did you mean %q?", strings.Join(append([]string{parts[0], sug[0]}, parts[2:]...), "."))
		}
		for _, s := range earlier {
			if s.Name == parts[1] {
				return fmt.Sprintf("; did you mean %q?", strings.Join(append(s.StatePath(), parts[2:]...), "."))
			}
		}
		return ""
	}
	for _, s := range earlier {
		names = append(names, s.Name)
	}
	if sug := compose.Suggest(parts[0], names, 1); len(sug) > 0 {
		return fmt.Sprintf("; did you mean %q?", strings.Join(append([]string{sug[0]}, parts[1:]...), "."))
	}
	return ""
}

// reaches reports whether step a references b, directly or through other
// steps (looking at references as written, resolved or not yet).
func (c *compiler) reaches(a, b *Step) bool {
	seen := map[*Step]bool{}
	var visit func(s *Step) bool
	visit = func(s *Step) bool {
		if s == b {
			return true
		}
		if seen[s] {
			return false
		}
		seen[s] = true
		for _, r := range schema.Strings(s.Schema.Lookup("references")) {
			if t, msg := c.resolve(s, r); msg == "" && visit(t.Step) {
				return true
			}
		}
		return false
	}
	return visit(a)
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
