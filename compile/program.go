package compile

import (
	"fmt"
	"strings"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

// Program is a compiled process in the form the runtime runs it: every
// chunk's schema already projected for whoever fills it, every reference a
// path in process state, every action named. It is made once, when the
// process is launched, and travels as JSON in the workflow's input, so the
// workflow itself neither decodes, projects nor resolves anything — and a
// change to the compiler never changes what a running process does when
// its history is replayed.
type Program struct {
	// Document is the compiled document (Process.Document), kept for
	// people and pictures; the runtime does not read it.
	Document jsonv.Value `json:"document"`
	// Prompt is a pipeline's quoted prompt, or "".
	Prompt string `json:"prompt,omitempty"`
	// Chunks in execution order.
	Chunks []ProgramChunk `json:"chunks"`
	// Direct is set when the process reduced to a direct server call.
	Direct *ProgramDirect `json:"direct,omitempty"`
}

// ProgramChunk is one chunk as the runtime runs it.
type ProgramChunk struct {
	// Name is the chunk's definition in "$defs": LLM_…, SERVER_…, USER_….
	Name string `json:"name"`
	Kind Kind   `json:"kind"`
	// Schema is what fills the chunk is given: the projected chunk for a
	// model (LLM), with what carries no meaning for a model left out and
	// repeated subschemas shared (ForModel), or for a person (USER); null
	// for a SERVER chunk.
	Schema jsonv.Value `json:"schema,omitzero"`
	// References are the state paths of the values from outside the chunk
	// its steps need, in order of first use: its minimal context.
	References []Path        `json:"references,omitempty"`
	Steps      []ProgramStep `json:"steps"`
	// Loop, when set, repeats an LLM chunk until the model marks it done.
	Loop *Loop `json:"loop,omitempty"`
}

// ProgramStep is one step as the runtime runs it.
type ProgramStep struct {
	// Name is the step's property name.
	Name string `json:"name"`
	// State is where its result goes in process state (Step.StatePath).
	State Path `json:"state"`
	// Action is the registered action a SERVER or fire-and-forget step
	// runs; "" when the compiler was not told the actions, in which case
	// the worker matches the step's name (MatchAction).
	Action        string `json:"action,omitempty"`
	FireAndForget bool   `json:"fireAndForget,omitempty"`
	// Blocking marks a SERVER step with a top-level "output" property: its
	// state holds {"input", "output"}.
	Blocking bool `json:"blocking,omitempty"`
	// References are the state paths of the values it needs.
	References []Path `json:"references,omitempty"`
	// Output is the schema a SERVER step's result must fit: its "output"
	// property, or its own schema, projected.
	Output jsonv.Value `json:"output,omitzero"`
	// Inputs: the action of this blocking step gets the inputs a model
	// filled (at State + "input"), and WithReferences its references'
	// values beside them.
	Inputs         bool `json:"inputs,omitempty"`
	WithReferences bool `json:"withReferences,omitempty"`
	// Fills names the blocking step whose inputs this LLM step is.
	Fills string `json:"fills,omitempty"`
}

// Path is a path in process state: ["llmContext1", "identifyParticipants",
// "emails"].
type Path []string

// Pointer is the path as a JSON Pointer into the state.
func (p Path) Pointer() jsonv.Pointer { return jsonv.PointerTo(p...) }

// String is the dotted form, "llmContext1.identifyParticipants.emails".
func (p Path) String() string { return strings.Join(p, ".") }

// Qualified is the step's name with its context, as errors and the process
// view name it: "llmContext1.identifyParticipants".
func (s *ProgramStep) Qualified() string { return s.State.String() }

// ActionInput is a server step's input in state, the process's state (as
// the process's interpreter keeps it): for a blocking step with inputs,
// what the model filled (and, with WithReferences, its references' values
// beside); else the minimal context of its references, or the process's
// input when it has none.
func (s *ProgramStep) ActionInput(state jsonv.Value) (jsonv.Value, error) {
	if s.Inputs {
		filled, err := state.At(append(s.State, "input").Pointer())
		if err != nil {
			return jsonv.Value{}, fmt.Errorf("step %s: the model filled no inputs for it: %w", s.Qualified(), err)
		}
		in := filled.Clone()
		in.Object().Delete("output")
		if s.WithReferences {
			refs, err := pickPaths(state, s.References)
			if err != nil {
				return jsonv.Value{}, fmt.Errorf("step %s: %w", s.Qualified(), err)
			}
			for name, v := range refs.Members() {
				in.Object().Set(name, v)
			}
		}
		return in, nil
	}
	if len(s.References) == 0 {
		if in, ok := state.Get("input"); ok {
			return in, nil
		}
		return jsonv.NewObject(0).Value(), nil
	}
	v, err := pickPaths(state, s.References)
	if err != nil {
		return jsonv.Value{}, fmt.Errorf("step %s: %w", s.Qualified(), err)
	}
	return v, nil
}

// pickPaths is the minimal context of paths in state.
func pickPaths(state jsonv.Value, paths []Path) (jsonv.Value, error) {
	ps := make([]jsonv.Pointer, len(paths))
	for i, p := range paths {
		ps[i] = p.Pointer()
	}
	return jsonv.Pick(state, ps...)
}

// ProgramDirect is a direct server call: the model fills Chunk, then Action
// runs with Step's value.
type ProgramDirect struct {
	Action string `json:"action"`
	Step   string `json:"step"`
	Chunk  int    `json:"chunk"` // index in Program.Chunks
}

// Program prepares p for the runtime.
func (p *Process) Program() *Program {
	defs := p.Document.Lookup("$defs")
	prog := &Program{Document: p.Document, Prompt: p.Prompt, Chunks: make([]ProgramChunk, len(p.Chunks))}
	for i, ch := range p.Chunks {
		pc := ProgramChunk{Name: ch.Name, Kind: ch.Kind, References: paths(ch.References), Steps: make([]ProgramStep, len(ch.Steps)), Loop: ch.Loop}
		switch ch.Kind {
		case LLM:
			pc.Schema = ForModel(Project(defs.Lookup(ch.Name), ProjectOptions{}).Schema)
		case User:
			pc.Schema = Project(defs.Lookup(ch.Name), ProjectOptions{}).Schema
		}
		for j, s := range ch.Steps {
			ps := ProgramStep{Name: s.Name, State: s.StatePath(), Action: s.Action, FireAndForget: s.FireAndForget, References: paths(s.References),
				Inputs: !s.Inputs.IsNull(), WithReferences: s.WithReferences}
			if s.Fills != nil {
				ps.Fills = s.Fills.QualifiedName()
			}
			if ch.Kind == Server {
				out, blocking := schema.Properties(s.Schema).Get("output")
				if !blocking {
					out = s.Schema
				}
				ps.Blocking = blocking
				ps.Output = Project(out, ProjectOptions{}).Schema
			}
			pc.Steps[j] = ps
		}
		prog.Chunks[i] = pc
		if p.Direct != nil && p.Direct.Chunk == ch {
			prog.Direct = &ProgramDirect{Action: p.Direct.Action, Step: p.Direct.Step.Name, Chunk: i}
		}
	}
	return prog
}

func paths(refs []Ref) []Path {
	if len(refs) == 0 {
		return nil
	}
	out := make([]Path, len(refs))
	for i, r := range refs {
		out[i] = r.Path()
	}
	return out
}

// Step returns the chunk's step of that name, or nil.
func (c *ProgramChunk) Step(name string) *ProgramStep {
	for i := range c.Steps {
		if c.Steps[i].Name == name {
			return &c.Steps[i]
		}
	}
	return nil
}

// StepContext is the context the chunk's steps sit in ("llmContext1"), or
// "" for plain steps.
func (c *ProgramChunk) StepContext() string {
	if len(c.Steps) > 0 && len(c.Steps[0].State) > 1 {
		return c.Steps[0].State[0]
	}
	return ""
}
