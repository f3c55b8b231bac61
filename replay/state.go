package replay

import (
	"fmt"

	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/compose"
	"github.com/augceo/vibe/jsonv"
)

// The process state as a replay keeps it: what the process's own
// interpreter keeps (package process), less what only a run shows.

// pick is the minimal context of refs in state.
func pick(state jsonv.Value, refs []compile.Path) (jsonv.Value, error) {
	ps := make([]jsonv.Pointer, len(refs))
	for i, r := range refs {
		ps[i] = r.Pointer()
	}
	return jsonv.Pick(state, ps...)
}

// keepChunk stores each step's part of a chunk's value in state.
func keepChunk(state jsonv.Value, ch *compile.ProgramChunk, value jsonv.Value) error {
	out := compose.Split(value).Output
	if out.Object() == nil {
		return fmt.Errorf("chunk %s: the value is %s, not an object of its steps", ch.Name, out.Kind())
	}
	for i := range ch.Steps {
		s := &ch.Steps[i]
		v, ok := out.Get(s.Name)
		if !ok {
			return fmt.Errorf("chunk %s: the value has no step %q", ch.Name, s.Name)
		}
		if _, err := jsonv.SetAll(state, s.State.Pointer(), v); err != nil {
			return fmt.Errorf("step %s: the process state has no place for its result: %w", s.Qualified(), err)
		}
	}
	return nil
}
