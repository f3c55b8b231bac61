package process

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/compose"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
)

// Status is a process's status: a durable.Status, which a Vessel's request
// has too.
type Status = durable.Status

// The statuses of a process.
const (
	Running   = durable.Running
	Waiting   = durable.Waiting // for a person's answer
	Completed = durable.Completed
	Failed    = durable.Failed
)

// ListOptions says which page of processes Client.List returns.
type ListOptions = durable.ListOptions

// View is what a process shows: its status, what it waits for, its state.
type View struct {
	Status Status `json:"status"`
	// Chunk is the chunk running or waited on; "" when finished.
	Chunk string `json:"chunk,omitempty"`
	// Done lists the finished chunks in order.
	Done []string `json:"done"`
	// Waiting is set while the process waits for a person.
	Waiting *Pending `json:"waiting"`
	// State holds every step's output: state[context][step], or state[step]
	// for a plain step; the process's input under "input".
	State jsonv.Value `json:"state"`
	// Thinking holds the "_" fields of each step and chunk, by qualified name.
	Thinking jsonv.Value `json:"thinking"`
	// Metrics holds the "$" fields of each step, by qualified name.
	Metrics jsonv.Value `json:"metrics"`
	// Usage totals the process's model calls; Steps has them by chunk and
	// StepUsage by step (each step's share of the call that filled it, by
	// the size of its part of the answer: the shares add up to the call).
	Usage     llm.Usage            `json:"usage"`
	Steps     map[string]llm.Usage `json:"chunkUsage,omitempty"`
	StepUsage []StepUsage          `json:"stepUsage,omitempty"`
	// Calls are the process's model calls in order: what each was sent and
	// what came back, repair turns included.
	Calls []ModelCall `json:"calls,omitempty"`
	// Replayed is true when any model answer came from a recording.
	Replayed bool `json:"replayed,omitempty"`
	// Actions has the status of each fire-and-forget action by step
	// (qualified name): "started", "completed" or "failed: …". The
	// workflow follows them only while it runs; Client.Get brings them up
	// to date, and Info.ActionRuns has their attempts and last error.
	Actions map[string]string `json:"actions,omitempty"`
	// Timings are when each chunk, and each blocking action of a SERVER
	// chunk, started and ended, by the workflow's clock, in the order they
	// started. A process recorded before timings were kept has none.
	Timings []Timing `json:"timings,omitempty"`
	// Answers are the people's answers taken, one per USER chunk answered:
	// who sent each (as the surface that took it says: a console session,
	// an API client) and when the process took it.
	Answers []Answered `json:"answers,omitempty"`
	// Error says why the process failed; null while it has not.
	Error *string `json:"error"`
}

// Timing is when a chunk, or a SERVER step's action (Step set, its
// qualified name), ran. End is nil while it runs; a USER chunk's span is
// its wait for a person.
type Timing struct {
	Chunk string     `json:"chunk"`
	Step  string     `json:"step,omitempty"`
	Start time.Time  `json:"start"`
	End   *time.Time `json:"end,omitempty"`
}

// Answered is a person's answer to a USER chunk, for the audit: the
// answer itself is the chunk's part of the state.
type Answered struct {
	Chunk string `json:"chunk"`
	// By is who sent it, as the surface that took it knows them: "" when
	// it did not say.
	By string    `json:"by,omitempty"`
	At time.Time `json:"at"`
}

// started records that chunk (and step, when set) starts at now; the
// returned index is its timing's, for ended.
func (v *View) started(chunk, step string, now time.Time) int {
	v.Timings = append(v.Timings, Timing{Chunk: chunk, Step: step, Start: now})
	return len(v.Timings) - 1
}

// ended records that timing i ended at now.
func (v *View) ended(i int, now time.Time) {
	if i >= 0 && i < len(v.Timings) {
		v.Timings[i].End = &now
	}
}

// StepUsage is a step's share of the model calls that filled it.
type StepUsage struct {
	Step string `json:"step"` // qualified name
	llm.Usage
}

// ModelCall is one filled chunk: what the model was sent — the system
// text, the person's request, the minimal context; the schema is the
// chunk's in the process's program — and every turn's answer, usage and
// latency.
type ModelCall struct {
	Chunk    string      `json:"chunk"`
	System   string      `json:"system,omitempty"`
	Prompt   string      `json:"prompt,omitempty"`
	Context  jsonv.Value `json:"context"`
	Turns    []llm.Turn  `json:"turns"`
	Usage    llm.Usage   `json:"usage"`
	Model    string      `json:"model,omitempty"`
	Replayed bool        `json:"replayed,omitempty"`
}

// Pending describes a USER chunk waiting for its answer.
type Pending struct {
	Chunk   string      `json:"chunk"`
	Schema  jsonv.Value `json:"schema"`
	Context jsonv.Value `json:"context"`
}

// newView is the view of a process that has just started.
func newView(in durable.Start) View {
	v := View{Status: Running, Done: []string{}, State: jsonv.NewObject(4).Value(),
		Thinking: jsonv.NewObject(4).Value(), Metrics: jsonv.NewObject(4).Value(), Steps: map[string]llm.Usage{}}
	if !in.Input.IsNull() {
		v.State.Object().Set("input", in.Input)
	}
	return v
}

// keep stores a step's value, split: its output in state, its thinking
// fields and metrics beside, under the step's qualified name. It returns
// the output.
func (v *View) keep(s *compile.ProgramStep, parts compose.Parts) (jsonv.Value, error) {
	if _, err := jsonv.SetAll(v.State, s.State.Pointer(), parts.Output); err != nil {
		return jsonv.Value{}, fmt.Errorf("step %s: the process state has no place for its result: %w", s.Qualified(), err)
	}
	q := s.Qualified()
	if len(parts.Thinking) > 0 {
		v.Thinking.Object().Set(q, fields(parts.Thinking))
	}
	if len(parts.Metrics) > 0 {
		v.Metrics.Object().Set(q, fields(parts.Metrics))
	}
	return parts.Output, nil
}

// keepChunk stores a chunk's value, split: each step's part, and the
// members that are no step — a mixin's _considerations, a loop's
// _loopDone, a "$" metric of the context — as the chunk's own thinking and
// metrics.
func (v *View) keepChunk(ch *compile.ProgramChunk, parts compose.Parts) ([]jsonv.Value, error) {
	if parts.Output.Object() == nil {
		return nil, fmt.Errorf("chunk %s: the value is %s, not an object of its steps", ch.Name, parts.Output.Kind())
	}
	thinking, metrics := jsonv.NewObject(0), jsonv.NewObject(0)
	for _, f := range parts.Thinking {
		if f.Path.Parent() == "" {
			thinking.Set(f.Name, f.Value)
		}
	}
	for _, f := range parts.Metrics {
		if f.Path.Parent() == "" {
			metrics.Set(f.Name, f.Value)
		}
	}
	for name, m := range parts.Output.Members() {
		if ch.Step(name) == nil {
			thinking.Set(name, m) // a member the schema does not name: kept, but not as output
		}
	}
	if thinking.Len() > 0 {
		v.Thinking.Object().Set(ch.Name, thinking.Value())
	}
	if metrics.Len() > 0 {
		v.Metrics.Object().Set(ch.Name, metrics.Value())
	}
	outs := make([]jsonv.Value, len(ch.Steps))
	for i := range ch.Steps {
		s := &ch.Steps[i]
		sp, ok := member(parts, s.Name)
		if !ok {
			return nil, fmt.Errorf("chunk %s: the value has no step %q", ch.Name, s.Name)
		}
		out, err := v.keep(s, sp)
		if err != nil {
			return nil, err
		}
		outs[i] = out
	}
	return outs, nil
}

// member is the part of a split object that member name holds: its output,
// and the thinking fields and metrics inside it, their paths taken from
// the member — what splitting the member alone gives.
func member(parts compose.Parts, name string) (compose.Parts, bool) {
	out, ok := parts.Output.Get(name)
	if !ok {
		return compose.Parts{}, false
	}
	at := string(jsonv.PointerTo(name)) + "/"
	inside := func(fs []compose.Field) []compose.Field {
		var in []compose.Field
		for _, f := range fs {
			if rest, ok := strings.CutPrefix(string(f.Path), at); ok {
				f.Path = jsonv.Pointer("/" + rest)
				in = append(in, f)
			}
		}
		return in
	}
	return compose.Parts{Output: out, Thinking: inside(parts.Thinking), Metrics: inside(parts.Metrics)}, true
}

// account adds a filled chunk's call to the usage of the process, the
// chunk and its steps, and to the calls.
func (v *View) account(ch *compile.ProgramChunk, in durable.FillInput, out durable.FillOutput) {
	v.Usage = v.Usage.Add(out.Usage)
	v.Steps[ch.Name] = v.Steps[ch.Name].Add(out.Usage)
	v.Replayed = v.Replayed || out.Replayed
	weights := make([]int, len(ch.Steps))
	for i, s := range ch.Steps {
		weights[i] = len(jsonv.Marshal(out.Value.Lookup(s.Name)))
	}
	for i, share := range llm.Apportion(out.Usage, weights) {
		q := ch.Steps[i].Qualified()
		k := slices.IndexFunc(v.StepUsage, func(s StepUsage) bool { return s.Step == q })
		if k < 0 {
			v.StepUsage, k = append(v.StepUsage, StepUsage{Step: q}), len(v.StepUsage)
		}
		v.StepUsage[k].Usage = v.StepUsage[k].Usage.Add(share)
	}
	v.Calls = append(v.Calls, ModelCall{Chunk: ch.Name, System: in.System, Prompt: in.Prompt, Context: in.Context,
		Turns: out.Turns, Usage: out.Usage, Model: out.Model, Replayed: out.Replayed})
}

// context is the minimal context of a chunk or step: the values of its
// references in the state, each at its own path.
func (v *View) context(refs []compile.Path) (jsonv.Value, error) {
	ps := make([]jsonv.Pointer, len(refs))
	for i, r := range refs {
		ps[i] = r.Pointer()
	}
	return jsonv.Pick(v.State, ps...)
}

func fields(fs []compose.Field) jsonv.Value {
	o := jsonv.NewObject(len(fs))
	for _, f := range fs {
		o.Set(strings.TrimPrefix(string(f.Path), "/"), f.Value)
	}
	return o.Value()
}
