package compile

import "github.com/augceo/vibe/jsonv"

// TakesInput reports whether a step of the program is given the process's
// input: a SERVER step that references nothing (and fills no inputs a
// model filled for it) takes it whole. Nothing else is: a model's chunk is
// sent its steps' references and the prompt, a person's its references.
func (p *Program) TakesInput() bool {
	for _, ch := range p.Chunks {
		if ch.Kind != Server {
			continue
		}
		for _, s := range ch.Steps {
			if !s.Inputs && len(s.References) == 0 {
				return true
			}
		}
	}
	return false
}

// UnreadInput names what of a process's input no step of the program reads:
// every member of an object input (an input of another kind: "", the input
// itself) when no step takes the input; none when one takes it whole
// (TakesInput), or when there is no input.
func (p *Program) UnreadInput(input jsonv.Value) []string {
	if input.IsNull() || p.TakesInput() {
		return nil
	}
	if o := input.Object(); o != nil {
		return o.Names()
	}
	return []string{""}
}
