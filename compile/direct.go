package compile

import "slices"

// AwaitedDirect is a direct server call's program run as a process's, for
// a runtime that runs programs as processes (a batch's group): the model
// fills the instruction as the direct call's model does, the action's step
// keeping the model's value as a blocking step's inputs (its state path
// and "input"), and a SERVER chunk after it runs the action with exactly
// that value, awaited, as the direct call's workflow does — under the
// process's idempotency key for the step — its result kept beside the
// inputs ({"input", "output"}). A program that is no direct call is
// returned as it is; p is not changed.
func (p *Program) AwaitedDirect() *Program {
	if p == nil || p.Direct == nil {
		return p
	}
	d := p.Direct
	out := *p
	out.Direct = nil
	out.Chunks = slices.Clone(p.Chunks)
	ch := &out.Chunks[d.Chunk]
	ch.Steps = slices.Clone(ch.Steps)
	i := slices.IndexFunc(ch.Steps, func(s ProgramStep) bool { return s.Name == d.Step })
	if i < 0 {
		return p
	}
	step := ch.Steps[i]
	action := ProgramStep{Name: step.Name, State: slices.Clip(step.State), Action: d.Action, Blocking: true, Inputs: true}
	filler := step
	filler.State = append(slices.Clone(step.State), "input")
	filler.Action, filler.FireAndForget, filler.Fills = "", false, action.Qualified()
	ch.Steps[i] = filler
	out.Chunks = slices.Insert(out.Chunks, d.Chunk+1, ProgramChunk{Name: "SERVER_" + step.Name, Kind: Server, Steps: []ProgramStep{action}})
	return &out
}
