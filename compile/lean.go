package compile

import (
	"slices"
	"strings"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

// ForModel returns a projected LLM chunk (Project) as a model is best sent
// it: without what carries no meaning for a model — a "title" that only
// repeats its property's instruction name (`"title": "PlanStep"` on
// step3_plan_step), a "$comment", which is for a schema's authors — and
// with every repeated subschema sent once (Share). What a model reads to
// know a value's meaning — a title that says more than the name, every
// description, examples, enums — stays. The schema admits exactly the
// values s admits. s is not changed.
func ForModel(s jsonv.Value) jsonv.Value {
	return Share(lean(s))
}

// lean drops the redundant titles and the "$comment"s of s.
func lean(s jsonv.Value) jsonv.Value {
	var drop func(p jsonv.Pointer, s jsonv.Value) (jsonv.Value, bool)
	drop = func(p jsonv.Pointer, s jsonv.Value) (jsonv.Value, bool) {
		name := ""
		if p.Parent() == "/properties" {
			name = p.Last()
		}
		o := s.Object()
		if o == nil {
			return s, true
		}
		out := o
		clone := func() {
			if out == o {
				out = shallow(o)
			}
		}
		if o.Has("$comment") {
			clone()
			out.Delete("$comment")
		}
		if t, ok := o.Get("title"); ok && name != "" && sameName(t.Str(), name) {
			clone()
			out.Delete("title")
		}
		return mapChildren(out.Value(), drop), true
	}
	v, _ := drop("", s)
	return v
}

// sameName says whether a title only repeats the instruction name a
// property was made from: "IdentifyParticipants" for
// step1_identify_participants, "identifyParticipants" or
// "fetchAvailability_Activity" for themselves — letters and digits
// compared without case, with a pipeline's "stepN_" and the "_Activity"
// and "_User" suffixes left out.
func sameName(title, key string) bool {
	norm := func(s string) string {
		var b strings.Builder
		for _, r := range strings.ToLower(s) {
			if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127 {
				b.WriteRune(r)
			}
		}
		return b.String()
	}
	base := key
	if rest, ok := strings.CutPrefix(base, "step"); ok {
		if i := strings.IndexByte(rest, '_'); i > 0 && strings.Trim(rest[:i], "0123456789") == "" {
			base = rest[i+1:]
		}
	}
	for _, suffix := range []string{"_Activity", "_User"} {
		base = strings.TrimSuffix(base, suffix)
		title = strings.TrimSuffix(title, suffix)
	}
	t := norm(title)
	return t != "" && (t == norm(base) || t == norm(key))
}

// Inline returns s with every local reference to its "$defs" replaced by
// the definition, and "$defs" left out once nothing refers to it: the
// form for providers that take no "$ref" (and what Gemini makes of a
// shared schema itself). A reference's own keywords (a title, a
// description) are kept, before the definition's. A definition that
// refers to itself stays a reference. s is not changed.
func Inline(s jsonv.Value) jsonv.Value {
	if s.Lookup("$defs").Len() == 0 {
		return s
	}
	d := newDefs(s)
	if len(d.names) == 0 {
		return s
	}
	left := false
	var expand func(stack []string) func(jsonv.Pointer, jsonv.Value) (jsonv.Value, bool)
	expand = func(stack []string) func(jsonv.Pointer, jsonv.Value) (jsonv.Value, bool) {
		var f func(jsonv.Pointer, jsonv.Value) (jsonv.Value, bool)
		f = func(_ jsonv.Pointer, sub jsonv.Value) (jsonv.Value, bool) {
			n := defName(sub.Lookup("$ref").Str())
			body, ok := d.defs[n]
			if n == "" || !ok {
				return mapChildren(sub, f), true
			}
			if slices.Contains(stack, n) {
				left = true
				return sub, true
			}
			return merged(sub, mapChildren(body, expand(append(stack[:len(stack):len(stack)], n)))), true
		}
		return f
	}
	d.body = mapChildren(d.body, expand(nil))
	if !left {
		d.names = nil
	}
	return d.value()
}

// merged is a reference's place with the definition it names: the
// place's own keywords but "$ref", then the definition's it does not have.
func merged(place, def jsonv.Value) jsonv.Value {
	out := jsonv.NewObject(place.Len() + def.Len())
	for name, v := range place.Members() {
		if name != "$ref" {
			out.Set(name, v)
		}
	}
	for name, v := range def.Members() {
		if !out.Has(name) {
			out.Set(name, v)
		}
	}
	return out.Value()
}

// prune leaves out the definitions no reference names, from the body or
// from a definition that is itself named.
func (d *defs) prune() {
	used := map[string]bool{}
	var mark func(s jsonv.Value)
	mark = func(s jsonv.Value) {
		schema.Walk(s, func(_ jsonv.Pointer, n jsonv.Value) error {
			if name := defName(n.Lookup("$ref").Str()); name != "" && !used[name] {
				used[name] = true
				if v, ok := d.defs[name]; ok {
					mark(v)
				}
			}
			return nil
		})
	}
	mark(d.body)
	d.names = slices.DeleteFunc(d.names, func(n string) bool {
		if !used[n] {
			delete(d.defs, n)
		}
		return !used[n]
	})
}

// Note is what a schema says of one of its parts — a title, a
// description — moved into the prompt's text because the provider takes
// no keyword beside "$ref" there (OpenAI's strict mode).
type Note struct {
	// Where names the part: its properties' names joined by "." (a
	// step's name), or its definition, "#/$defs/a".
	Where string
	// Text is its title and description, as the schema had them.
	Text string
}

// NotesText is the prompt's text of notes: one line each, after a line
// that says what they are; "" for none.
func NotesText(notes []Note) string {
	if len(notes) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("What these parts of the schema are:")
	for _, n := range notes {
		b.WriteString("\n- " + n.Where + ": " + n.Text)
	}
	return b.String()
}

// hasSiblings says whether some "$ref" of s has keywords beside it.
func hasSiblings(s jsonv.Value) bool {
	found := false
	schema.Walk(s, func(_ jsonv.Pointer, n jsonv.Value) error {
		if n.Object().Has("$ref") && n.Len() > 1 {
			found = true
			return jsonv.SkipChildren
		}
		return nil
	})
	return found
}

// withoutSiblings makes s fit a provider that takes no keyword beside
// "$ref", in whichever of two ways makes the shorter request, measured on
// the strict form: each such reference's title and description moved
// into the prompt's text (Notes), or each such reference replaced by its
// definition with them, as if it had never been shared. Either way every
// description still reaches the model.
func withoutSiblings(s jsonv.Value) (jsonv.Value, []Note) {
	if !hasSiblings(s) {
		return s, nil
	}
	moved, notes := moveAnnotations(s)
	inlined := inlineSiblings(s)
	if len(jsonv.Marshal(strictify(moved.Clone())))+len(NotesText(notes)) <= len(jsonv.Marshal(strictify(inlined.Clone()))) {
		return moved, notes
	}
	return inlined, nil
}

// moveAnnotations moves the annotations beside every "$ref" of s into
// notes; references left bare to a definition that is only a reference
// are made direct.
func moveAnnotations(s jsonv.Value) (jsonv.Value, []Note) {
	var notes []Note
	var move func(where string, v jsonv.Value) jsonv.Value
	move = func(where string, v jsonv.Value) jsonv.Value {
		if v.Object().Has("$ref") && v.Len() > 1 {
			var text []string
			for _, m := range annotationsOf(v) {
				if m.Value.Kind() == jsonv.KindString {
					text = append(text, strings.TrimSpace(m.Value.Str()))
				} else {
					text = append(text, m.Name+": "+string(jsonv.Marshal(m.Value)))
				}
			}
			if len(text) > 0 {
				notes = append(notes, Note{Where: where, Text: strings.Join(text, " — ")})
			}
			out := jsonv.NewObject(v.Len())
			for name, x := range v.Members() {
				if !slices.Contains(annotations, name) {
					out.Set(name, x)
				}
			}
			v = out.Value()
		}
		return mapWhere(where, v, move)
	}
	d := newDefs(s)
	for _, n := range d.names {
		d.defs[n] = move(d.referrers(n), d.defs[n])
	}
	d.body = mapWhere("", d.body, move)
	// A definition left a bare reference goes, and what referred to it
	// refers on, unless a note names it.
	if !slices.ContainsFunc(notes, func(n Note) bool { return strings.HasPrefix(n.Where, "#/$defs/") }) {
		d.collapse()
	}
	d.prune()
	return d.value(), notes
}

// referrers names, for a note, the properties of the root that refer to
// definition n, as a model sees them: "a<i>" for a multiplexed call's
// a1 … aN (its legend's words), else their names; the reference itself
// when no property of the root refers to it.
func (d *defs) referrers(n string) string {
	var names []string
	for name, v := range d.body.Lookup("properties").Members() {
		if v.Lookup("$ref").Str() == refTo(n) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return refTo(n)
	}
	prefix := strings.TrimRight(names[0], "0123456789")
	for _, name := range names {
		if rest, ok := strings.CutPrefix(name, prefix); !ok || rest == "" || strings.Trim(rest, "0123456789") != "" {
			return strings.Join(names, ", ")
		}
	}
	if prefix != names[0] {
		return prefix + "<i>"
	}
	return strings.Join(names, ", ")
}

// mapWhere is mapChildren with each subschema's place: its properties'
// names joined by ".", "[]" for an array's items.
func mapWhere(where string, s jsonv.Value, f func(where string, s jsonv.Value) jsonv.Value) jsonv.Value {
	return mapChildren(s, func(p jsonv.Pointer, sub jsonv.Value) (jsonv.Value, bool) {
		w := where
		switch {
		case p.Parent() == "/properties":
			w = strings.TrimPrefix(where+"."+p.Last(), ".")
		case p == "/items":
			w = where + "[]"
		}
		return f(w, sub), true
	})
}

// inlineSiblings replaces every "$ref" of s that has keywords beside it
// with its definition and them; definitions left unused are dropped.
func inlineSiblings(s jsonv.Value) jsonv.Value {
	d := newDefs(s)
	var fix func(jsonv.Pointer, jsonv.Value) (jsonv.Value, bool)
	fix = func(_ jsonv.Pointer, v jsonv.Value) (jsonv.Value, bool) {
		if n := defName(v.Lookup("$ref").Str()); n != "" && v.Len() > 1 {
			if body, ok := d.defs[n]; ok {
				v = merged(v, body)
			}
		}
		return mapChildren(v, fix), true
	}
	d.body = mapChildren(d.body, fix)
	for _, n := range d.names {
		d.defs[n], _ = fix("", d.defs[n])
	}
	d.prune()
	return d.value()
}
