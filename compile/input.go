package compile

import (
	"fmt"

	"github.com/augceo/vibe/compose"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

// InputSchema is the schema of what the step's action is given, as its
// values arrive: a fire-and-forget step's own value; a blocking step's
// inputs, which the model filled (SPEC §2); a SERVER step's minimal context
// (MinimalContext), each referenced value under its state path. With
// unwrap — for an action that takes its arguments flat, as an MCP tool
// does — it is instead the schema of the one value the step references, or
// of the members of the objects it references, merged in order. Engine
// keywords, thinking fields and metrics are left out: the action never
// sees them.
//
// ok is false when no schema describes the input: the step references
// nothing (its action gets the process's input), a reference names a field
// its step's schema does not declare, or a blocking step gets its
// references' values beside its inputs (withReferences). err says why the
// referenced values cannot be unwrapped into arguments: one is not an
// object, or two give the same argument.
//
// Whoever registers the action compares this schema with the one the
// action declares (schema.Fit) before the process starts.
func (s *Step) InputSchema(unwrap bool) (have jsonv.Value, ok bool, err error) {
	switch {
	case s.FireAndForget:
		return valueSchema(s.Schema), true, nil
	case !s.Inputs.IsNull() && !s.WithReferences:
		return valueSchema(s.Inputs), true, nil // what the model filled for it
	case !s.Inputs.IsNull():
		return jsonv.Value{}, false, nil // inputs and references beside: left to the action
	}
	if len(s.References) == 0 {
		return jsonv.Value{}, false, nil
	}
	subs := make([]jsonv.Value, len(s.References))
	for i, r := range s.References {
		if subs[i], ok = refSchema(r); !ok {
			return jsonv.Value{}, false, nil
		}
	}
	switch {
	case unwrap && len(subs) == 1:
		return subs[0], true, nil
	case unwrap:
		have, err := mergedArguments(s.References, subs)
		return have, err == nil, err
	}
	// The minimal context: each reference's value under its state path.
	root := jsonv.NewObject(3)
	root.Set("type", jsonv.StringValue("object"))
	for i, r := range s.References {
		at := root
		path := r.Path()
		for j, name := range path {
			props := at.Value().Lookup("properties").Object()
			if props == nil {
				props = jsonv.NewObject(1)
				at.Set("properties", props.Value())
				at.Set("required", jsonv.ArrayValue())
			}
			if !props.Has(name) {
				next := subs[i]
				if j < len(path)-1 {
					next = jsonv.ObjectValue(jsonv.Member{Name: "type", Value: jsonv.StringValue("object")})
				}
				props.Set(name, next)
				req := at.Value().Lookup("required").Array()
				at.Set("required", jsonv.ArrayValue(append(req, jsonv.StringValue(name))...))
			}
			v, _ := props.Get(name)
			if at = v.Object(); at == nil {
				break
			}
		}
	}
	return root.Value(), true, nil
}

// mergedArguments is the schema of the unwrapped arguments of several
// references: the properties of the referenced object schemas subs, in
// order, required where they are.
func mergedArguments(refs []Ref, subs []jsonv.Value) (jsonv.Value, error) {
	props := jsonv.NewObject(8)
	var required []jsonv.Value
	from := map[string]string{}
	for i, sub := range subs {
		ps := schema.Properties(sub)
		if ps == nil {
			return jsonv.Value{}, fmt.Errorf("%s is not an object schema with properties, whose members would be arguments", refs[i])
		}
		for name, p := range ps.All() {
			if other, dup := from[name]; dup {
				return jsonv.Value{}, fmt.Errorf("%s and %s both give the argument %q", other, refs[i], name)
			}
			from[name] = refs[i].String()
			props.Set(name, p)
		}
		for _, r := range schema.Required(sub) {
			required = append(required, jsonv.StringValue(r))
		}
	}
	return jsonv.ObjectValue(
		jsonv.Member{Name: "type", Value: jsonv.StringValue("object")},
		jsonv.Member{Name: "properties", Value: props.Value()},
		jsonv.Member{Name: "required", Value: jsonv.ArrayValue(required...)},
	), nil
}

// refSchema is the schema of a reference's value in process state.
func refSchema(r Ref) (jsonv.Value, bool) {
	s := r.Step.Schema
	for _, f := range r.Field {
		sub, ok := schema.Properties(s).Get(f)
		if !ok {
			return jsonv.Value{}, false
		}
		s = sub
	}
	return valueSchema(s), true
}

// valueSchema is a step's schema as its value is kept in state: no engine
// keyword, no thinking field or metric.
func valueSchema(s jsonv.Value) jsonv.Value {
	return compose.OutputSchema(Project(s, ProjectOptions{}).Schema)
}
