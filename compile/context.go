package compile

import (
	"fmt"

	"github.com/augceo/vibe/jsonv"
)

// MinimalContext builds the context a step is sent: from the process state,
// just the values its references name, each at its own path — for
// "step4_find_user.output", {"step4_find_user": {"output": {…}}}, nothing
// else (seed 000). A reference whose value is not in the state yet is an
// error naming it.
func MinimalContext(state jsonv.Value, refs []Ref) (jsonv.Value, error) {
	out := jsonv.NewObject(len(refs))
	for _, r := range refs {
		path := r.Path()
		v, err := state.At(jsonv.PointerTo(path...))
		if err != nil {
			return jsonv.Value{}, fmt.Errorf("reference %s: no value in the process state: %w", r, err)
		}
		// A copy: the state is not ours to change.
		if _, err := jsonv.SetAll(out.Value(), jsonv.PointerTo(path...), v.Clone()); err != nil {
			return jsonv.Value{}, fmt.Errorf("reference %s: %w", r, err)
		}
	}
	return out.Value(), nil
}
