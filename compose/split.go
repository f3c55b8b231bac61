package compose

import (
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

// Field is a member split off a filled value.
type Field struct {
	Path  jsonv.Pointer // where it was in the filled value
	Name  string        // its member name, with the "_" or "$"
	Value jsonv.Value
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
