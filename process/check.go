package process

import (
	"context"

	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/compile"
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
		have, ok, err := s.InputSchema(act.Unwrap)
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
