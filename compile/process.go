package compile

import (
	"slices"
	"strings"

	"github.com/augceo/vibe/jsonv"
)

// Kind is where a step or a chunk runs.
type Kind string

// The kinds of steps and chunks (SPEC §1 "Context").
const (
	LLM    Kind = "LLM"    // one structured model call
	Server Kind = "SERVER" // registered server actions, blocking
	User   Kind = "USER"   // a person's answer
)

// Step is one step of a process.
type Step struct {
	Name    string // the property name
	Context string // the context it sits in; "" for a plain step
	Kind    Kind
	// Action is the registered action a SERVER or fire-and-forget step
	// runs, when Options.Actions named it; see MatchAction.
	Action string
	// FireAndForget marks an LLM step whose value is also handed to Action
	// after its chunk, without waiting.
	FireAndForget bool
	// References are the earlier results the step needs.
	References []Ref
	// Schema is the step's schema as the document has it (flattened).
	Schema jsonv.Value
	// Path is where the step is in the document.
	Path jsonv.Pointer
	// Inputs is a blocking step's input (SPEC §2): its properties other
	// than "output", which the model fills in the LLM chunk before it;
	// null for a step with none (its action gets its references' values).
	Inputs jsonv.Value
	// WithReferences: the step's action gets its references' values beside
	// its inputs (the engine keyword "withReferences").
	WithReferences bool
	// Fills is the blocking step whose Inputs this LLM step asks the model
	// for; the step's value is that step's input.
	Fills *Step

	index int // position in execution order
}

// StatePath is where the step's result lives in process state; an input
// step's value is its blocking step's "input".
func (s *Step) StatePath() []string {
	if s.Fills != nil {
		return append(s.Fills.StatePath(), "input")
	}
	if s.Context == "" {
		return []string{s.Name}
	}
	return []string{s.Context, s.Name}
}

// QualifiedName is the step's name with its context: "llmContext1.identifyParticipants".
func (s *Step) QualifiedName() string { return strings.Join(s.StatePath(), ".") }

// Ref is a resolved reference: a step and a path of fields inside its
// result.
type Ref struct {
	Step  *Step
	Field []string
}

// Path is the reference's path in process state.
func (r Ref) Path() []string { return append(r.Step.StatePath(), r.Field...) }

// String is the canonical form: "context.step.field…".
func (r Ref) String() string { return strings.Join(r.Path(), ".") }

// Chunk is a maximal run of steps of one kind: one model call, one run of
// server actions, or one wait for a person.
type Chunk struct {
	// Name is the definition's name in "$defs": LLM_<chunk>, SERVER_<chunk>
	// or USER_<chunk>.
	Name    string
	Kind    Kind
	Context string // the context its steps sit in; "" for plain steps
	Steps   []*Step
	// Members are the chunk's properties in order: its steps, and the "_"
	// and "$" members that are no steps — a mixin's _considerations, a
	// loop's _loopDone — which the model fills and the engine keeps as the
	// chunk's thinking and metrics.
	Members []Member
	// Loop, when set, repeats the chunk (a Loop_Mixin): SPEC §4.2.
	Loop *Loop
	// References are the results from outside the chunk its steps need, in
	// order of first use.
	References []Ref
}

// Member is one property of a chunk: a step, or (Step nil) a thinking
// field or metric of the chunk itself.
type Member struct {
	Name   string
	Schema jsonv.Value
	Step   *Step
}

// Loop is a chunk's loop: the engine asks again, showing the model its
// previous attempt, until the value at Done is true or Max attempts were
// made.
type Loop struct {
	Max  int           `json:"max"`
	Done jsonv.Pointer `json:"done"` // in the chunk's value: "/_loopDone"
}

// Process is a compiled process.
type Process struct {
	// Document is the compiled document: the input plus "$defs" with one
	// definition per chunk, and "entryPoint" or "directCall".
	Document jsonv.Value
	// Chunks in execution order.
	Chunks []*Chunk
	// Direct is set when the process reduced to a direct server call.
	Direct *DirectCall
	// Prompt is a pipeline's quoted prompt, or "".
	Prompt string
}

// Steps returns every step in execution order.
func (p *Process) Steps() []*Step {
	var steps []*Step
	for _, c := range p.Chunks {
		steps = append(steps, c.Steps...)
	}
	return steps
}

// PipelineName is a short name for a compiled pipeline, made of its
// steps' instruction names in kebab case: "triage-ticket+draft-reply". A
// pipeline of more than three steps is named by its first and last
// ("identify-participants+…+draft-invitation"). It is "" for a process
// whose steps are not a pipeline's (step<N>_<name>).
func (p *Process) PipelineName() string {
	var names []string
	for _, s := range p.Steps() {
		// A blocking step whose input a model fills is in two chunks.
		if rest, ok := cutStepPrefix(s.Name); ok && !slices.Contains(names, rest) {
			names = append(names, rest)
		}
	}
	for i, n := range names {
		names[i] = strings.ToLower(strings.ReplaceAll(n, "_", "-"))
	}
	if len(names) > 3 {
		names = []string{names[0], "…", names[len(names)-1]}
	}
	return strings.Join(names, "+")
}

// Step returns the step of a qualified name ("llmContext1.fetchAvailability"
// or a plain step's name), or nil.
func (p *Process) Step(qualified string) *Step {
	for _, c := range p.Chunks {
		for _, s := range c.Steps {
			if s.QualifiedName() == qualified {
				return s
			}
		}
	}
	return nil
}

// Chunk returns the chunk of that name, or nil.
func (p *Process) Chunk(name string) *Chunk {
	for _, c := range p.Chunks {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// DirectCall is a pipeline that reduced to one LLM chunk whose last step is
// a fire-and-forget action: no process, one model call, then the action.
type DirectCall struct {
	Action string
	Step   *Step  // the last step: its value is the action's input
	Chunk  *Chunk // the instruction the model fills
}
