package compose

import (
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

// Field is a member split off a filled value.
type Field struct {
	Path  jsonv.Pointer `json:"path"` // where it was in the filled value
	Name  string        `json:"name"` // its member name, with the "_" or "$"
	Value jsonv.Value   `json:"value"`
}

// Parts is a filled value split by the `_` / `$` convention (SPEC §2).
type Parts struct {
	// Output is the value without its thinking fields and metrics, at any
	// depth: what the step produced.
	Output jsonv.Value
	// Thinking are the "_" members, in document order: kept in the trace
	// and the process state, not passed on as output.
	Thinking []Field
	// Metrics are the "$" members, in document order: recorded as metrics.
	Metrics []Field
}

// Split splits a filled value into output, thinking fields and metrics.
// The wire names of calls and delegation (_tool, _instance, _outputPath,
// _delegate, _scopes, _output) are output, not thinking. v is not changed.
func Split(v jsonv.Value) Parts {
	var p Parts
	p.Output = p.split("", v)
	return p
}

// SplitAt is Split(v) for a value whose thinking fields and metrics a
// Split of it has already found: it takes them out of a copy of v without
// deciding again what is thinking. A runtime carries Split's fields beside
// the value (not the output, which would be the value a second time) and
// gets the output back with SplitAt. v is not changed.
func SplitAt(v jsonv.Value, thinking, metrics []Field) Parts {
	out := v.Clone()
	for _, fields := range [][]Field{thinking, metrics} {
		for _, f := range fields {
			if parent, err := out.At(f.Path.Parent()); err == nil && parent.Object() != nil {
				parent.Object().Delete(f.Name)
			}
		}
	}
	return Parts{Output: out, Thinking: thinking, Metrics: metrics}
}

func (p *Parts) split(at jsonv.Pointer, v jsonv.Value) jsonv.Value {
	switch v.Kind() {
	case jsonv.KindObject:
		out := jsonv.NewObject(v.Len())
		for name, m := range v.Members() {
			where := at.Append(name)
			switch {
			case schema.IsThinking(name):
				p.Thinking = append(p.Thinking, Field{Path: where, Name: name, Value: m})
			case schema.IsMetric(name):
				p.Metrics = append(p.Metrics, Field{Path: where, Name: name, Value: m})
			default:
				out.Set(name, p.split(where, m))
			}
		}
		return out.Value()
	case jsonv.KindArray:
		out := make([]jsonv.Value, v.Len())
		for i, e := range v.Array() {
			out[i] = p.split(at.AppendIndex(i), e)
		}
		return jsonv.ArrayValue(out...)
	}
	return v
}

// OutputSchema is schema s as Split's Output sees the values it admits: its
// thinking fields and metrics, which the model fills and Split removes,
// neither listed nor required, at any depth. s is not changed.
func OutputSchema(s jsonv.Value) jsonv.Value {
	switch s.Kind() {
	case jsonv.KindArray:
		out := make([]jsonv.Value, s.Len())
		for i, e := range s.Array() {
			out[i] = OutputSchema(e)
		}
		return jsonv.ArrayValue(out...)
	case jsonv.KindObject:
	default:
		return s
	}
	out := jsonv.NewObject(s.Len())
	for name, v := range s.Members() {
		switch name {
		case "properties":
			props := jsonv.NewObject(v.Len())
			for p, ps := range v.Members() {
				if !schema.IsThinking(p) && !schema.IsMetric(p) {
					props.Set(p, OutputSchema(ps))
				}
			}
			out.Set(name, props.Value())
		case "required":
			var keep []jsonv.Value
			for _, r := range v.Array() {
				if !schema.IsThinking(r.Str()) && !schema.IsMetric(r.Str()) {
					keep = append(keep, r)
				}
			}
			out.Set(name, jsonv.ArrayValue(keep...))
		default:
			out.Set(name, OutputSchema(v))
		}
	}
	return out.Value()
}
