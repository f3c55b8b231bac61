package process

import (
	"context"
	"fmt"

	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/compose"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

// checkInputs checks each step that runs an action declaring its input
// schema (Action.InputSchema: an MCP tool's) against it, before the
// process starts: one located error per mismatch, naming the step, all of
// them. A step whose input is the process's own (a SERVER step that
// references nothing) is left to the action, since no schema describes it.
func checkInputs(ctx context.Context, acts *action.Registry, file string, p *compile.Process) error {
	if acts == nil {
		return nil
	}
	var errs schema.ErrorList
	for _, s := range p.Steps() {
		if s.Kind != compile.Server && !s.FireAndForget {
			continue
		}
		name := s.Action
		if name == "" {
			name = s.Name
		}
		act, ok := acts.Resolve(name)
		if !ok || act.InputSchema == nil {
			continue
		}
		have, ok, err := stepInput(s, act.Unwrap)
		if err != nil {
			errs.Add(file, s.Path, "step %s: its input cannot be the arguments of action %s: %v", s.QualifiedName(), act.Name, err)
			continue
		}
		if !ok {
			continue
		}
		want, err := act.InputSchema(ctx)
		if err != nil {
			errs.Add(file, s.Path, "step %s: cannot check its input against action %s: %v", s.QualifiedName(), act.Name, err)
			continue
		}
		for _, pr := range schema.Fit(have, want) {
			errs.Add(file, s.Path, "step %s: its input does not fit the input schema of action %s: %s: %s", s.QualifiedName(), act.Name, pointerText(pr.Path), pr.Message)
		}
	}
	return errs.Err()
}

func pointerText(p jsonv.Pointer) string {
	if p == "" {
		return "/"
	}
	return string(p)
}

// stepInput is the schema of what a step's action is given: a
// fire-and-forget step's own value; a blocking step's inputs, which the
// model filled (SPEC §2); a SERVER step's minimal context — or,
// for an action that takes its arguments unwrapped, the value it references
// or the members of those it references (Unwrapped). ok is false when no
// schema describes it; err says why the references cannot be arguments.
func stepInput(s *compile.Step, unwrap bool) (have jsonv.Value, ok bool, err error) {
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

// mergedArguments is the schema of Unwrapped's merge: the properties of
// the referenced object schemas, in order, required where they are.
func mergedArguments(refs []compile.Ref, subs []jsonv.Value) (jsonv.Value, error) {
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
func refSchema(r compile.Ref) (jsonv.Value, bool) {
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
	return compose.OutputSchema(compile.Project(s, compile.ProjectOptions{}).Schema)
}
