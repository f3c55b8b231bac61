package process

import (
	"context"

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
func checkInputs(ctx context.Context, acts *Actions, file string, p *compile.Process) error {
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
		have, ok := stepInput(s, act.Unwrap)
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
// fire-and-forget step's own value; a SERVER step's minimal context — or,
// for an action that takes its arguments unwrapped, its one reference's
// value. ok is false when no schema describes it.
func stepInput(s *compile.Step, unwrap bool) (jsonv.Value, bool) {
	if s.FireAndForget {
		return valueSchema(s.Schema), true
	}
	if !s.Inputs.IsNull() && !s.WithReferences {
		return valueSchema(s.Inputs), true // what the model filled for it
	}
	if !s.Inputs.IsNull() {
		return jsonv.Value{}, false // inputs and references beside: left to the action
	}
	switch {
	case len(s.References) == 0:
		return jsonv.Value{}, false
	case unwrap && len(s.References) == 1:
		return refSchema(s.References[0])
	}
	// The minimal context: each reference's value under its state path.
	root := jsonv.NewObject(3)
	root.Set("type", jsonv.StringValue("object"))
	for _, r := range s.References {
		sub, ok := refSchema(r)
		if !ok {
			return jsonv.Value{}, false
		}
		at := root
		path := r.Path()
		for i, name := range path {
			props := at.Value().Lookup("properties").Object()
			if props == nil {
				props = jsonv.NewObject(1)
				at.Set("properties", props.Value())
				at.Set("required", jsonv.ArrayValue())
			}
			if !props.Has(name) {
				next := sub
				if i < len(path)-1 {
					next = jsonv.ObjectValue(jsonv.Member{Name: "type", Value: jsonv.StringValue("object")})
				}
				props.Set(name, next)
				req := at.Value().Lookup("required").Array()
				at.Set("required", jsonv.ArrayValue(append(req, jsonv.StringValue(name))...))
			}
			v, _ := props.Get(name)
			at = v.Object()
			if at == nil {
				break
			}
		}
	}
	return root.Value(), true
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
