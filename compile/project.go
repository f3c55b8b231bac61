package compile

import (
	"slices"
	"strings"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

// ProjectOptions configures Project.
type ProjectOptions struct {
	// Strict makes the projection fit OpenAI's strict structured outputs:
	// every property required, "additionalProperties": false on every
	// object, and each property that was optional made nullable (its type
	// becomes ["T", "null"]). Restore undoes that on the answer. Strict
	// mode takes no keyword beside "$ref" either: a shared subschema's
	// place that has its own title or description (Share) has them moved
	// into Notes, for the prompt's text, or is sent whole — whichever is
	// shorter.
	Strict bool
}

// Projection is a schema as a model is sent it.
type Projection struct {
	// Schema is what goes on the wire.
	Schema jsonv.Value
	// Notes are the titles and descriptions that Strict moved out of the
	// schema: a provider sends them in the prompt's text (NotesText).
	Notes  []Note
	loose  jsonv.Value // the projection before the strict changes
	strict bool
}

// Project returns the schema s as sent to a model: without "references" or
// any other engine keyword (schema.EngineKeywords), with "_" thinking fields
// and "$" metrics kept — the model fills them. s is not changed.
func Project(s jsonv.Value, opts ProjectOptions) *Projection {
	loose := s.Clone()
	schema.Walk(loose, func(_ jsonv.Pointer, n jsonv.Value) error {
		if o := n.Object(); o != nil {
			for _, kw := range schema.EngineKeywords {
				o.Delete(kw)
			}
		}
		return nil
	})
	p := &Projection{Schema: loose, loose: loose, strict: opts.Strict}
	if opts.Strict {
		s, notes := withoutSiblings(loose)
		p.Schema, p.Notes = strictify(s.Clone()), notes
	}
	return p
}

// strictify applies the strict-mode rules to every object schema of s.
func strictify(s jsonv.Value) jsonv.Value {
	schema.Walk(s, func(_ jsonv.Pointer, n jsonv.Value) error {
		o := n.Object()
		props := schema.Properties(n)
		if o == nil || props == nil {
			return nil
		}
		required := schema.Required(n)
		for _, m := range props.Members() {
			if !slices.Contains(required, m.Name) && !nullable(m.Value) {
				props.Set(m.Name, orNull(m.Value))
			}
		}
		o.Set("required", schema.StringArray(props.Names()))
		o.Set("additionalProperties", jsonv.BoolValue(false))
		return nil
	})
	return s
}

// orNull makes a property schema admit null: ["T", "null"] where the type
// allows it, else anyOf with {"type": "null"}.
func orNull(s jsonv.Value) jsonv.Value {
	o := s.Object()
	if o == nil {
		return s
	}
	_, hasConst := o.Get("const")
	_, hasRef := o.Get("$ref")
	t, hasType := o.Get("type")
	if hasType && !hasConst && !hasRef {
		out := o.Clone()
		switch t.Kind() {
		case jsonv.KindString:
			out.Set("type", schema.StringArray([]string{t.Str(), "null"}))
		case jsonv.KindArray:
			out.Set("type", schema.StringArray(append(schema.Strings(t), "null")))
		}
		if e, ok := out.Get("enum"); ok {
			out.Set("enum", jsonv.ArrayValue(append(slices.Clone(e.Array()), jsonv.NullValue())...))
		}
		return out.Value()
	}
	return jsonv.ObjectValue(jsonv.Member{Name: "anyOf", Value: jsonv.ArrayValue(s, jsonv.ObjectValue(
		jsonv.Member{Name: "type", Value: jsonv.StringValue("null")}))})
}

// Restore undoes the strict changes on a model's answer: a property that
// was optional, came back null, and did not admit null before is removed.
// Without Strict it returns v. v is not changed.
func (p *Projection) Restore(v jsonv.Value) jsonv.Value {
	if !p.strict {
		return v
	}
	return restore(p.loose, p.loose, v)
}

func restore(root, s, v jsonv.Value) jsonv.Value {
	s = deref(root, s)
	switch v.Kind() {
	case jsonv.KindObject:
		props := schema.Properties(s)
		required := schema.Required(s)
		out := jsonv.NewObject(v.Len())
		for name, m := range v.Members() {
			ps, known := props.Get(name)
			if known && m.IsNull() && !slices.Contains(required, name) && !nullable(deref(root, ps)) {
				continue
			}
			if known {
				m = restore(root, ps, m)
			}
			out.Set(name, m)
		}
		return out.Value()
	case jsonv.KindArray:
		items, ok := s.Get("items")
		if !ok {
			return v
		}
		out := make([]jsonv.Value, v.Len())
		for i, e := range v.Array() {
			out[i] = restore(root, items, e)
		}
		return jsonv.ArrayValue(out...)
	}
	return v
}

// deref follows a local "$ref" ("#/$defs/…") inside root.
func deref(root, s jsonv.Value) jsonv.Value {
	for range 8 { // bounded: compiled schemas have no ref chains longer than this
		r := s.Lookup("$ref").Str()
		if !strings.HasPrefix(r, "#/") {
			return s
		}
		t, err := root.At(jsonv.Pointer(r[1:]))
		if err != nil {
			return s
		}
		s = t
	}
	return s
}
