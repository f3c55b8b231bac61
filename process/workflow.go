package process

import (
	"cmp"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/compose"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/replay/record"
)

// Workflows holds the workflow functions; they need the worker's actions
// only for their retry policies and timeouts.
type Workflows struct {
	Actions *action.Registry
}

// Process is the process workflow: it runs the prepared program chunk by
// chunk — a model fills an LLM chunk, the server runs a SERVER chunk's
// actions, a person answers a USER chunk — and keeps every step's result.
// The program is run by an Interpreter; the workflow is its Host.
func (w *Workflows) Process(ctx workflow.Context, in durable.Start) (View, error) {
	r := NewInterpreter(workflow.GetInfo(ctx).WorkflowExecution.ID, in)
	h := &processHost{r: r, acts: w.Actions}
	if err := workflow.SetQueryHandler(ctx, QueryView, func() (View, error) { return r.view, nil }); err != nil {
		return r.view, err
	}
	// The update's second argument, who sent the answer, is optional: a
	// client that sends the answer alone leaves it "".
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateAnswer, r.Accept, workflow.UpdateHandlerOptions{Validator: r.Validate}); err != nil {
		return r.view, err
	}
	err := r.Run(ctx, h)
	durable.Keep(ctx, func() []record.Record { return []record.Record{r.Record(workflow.Now(ctx))} })
	return r.view, err
}

// processHost is a process's own workflow as its interpreter's Host: it
// asks the model itself, and shows the status in the search attributes.
type processHost struct {
	r    *Interpreter
	acts *action.Registry
}

func (h *processHost) Fill(ctx workflow.Context, idx int, in durable.FillInput) (durable.FillOutput, error) {
	return durable.ExecuteFill(ctx, in)
}

func (h *processHost) Action(ctx workflow.Context, in durable.ActionInput) (jsonv.Value, error) {
	return durable.ExecuteAction(ctx, h.acts, in)
}

func (h *processHost) Status(ctx workflow.Context, s Status) {
	// A process that waits for a person keeps its record as far as it
	// got, before it says it waits: a replay takes it up to there, and
	// the record at its end replaces it.
	if s == Waiting && workflow.GetVersion(ctx, durable.KeepWaitingChange, workflow.DefaultVersion, 1) == 1 {
		durable.Keep(ctx, func() []record.Record { return []record.Record{h.r.Record(workflow.Now(ctx))} })
	}
	// Visible in Temporal's own UI and CLI: VibeProcess, VibeStatus.
	_ = workflow.UpsertTypedSearchAttributes(ctx, durable.ProcessAttribute.ValueSet(h.r.in.Name), durable.StatusAttribute.ValueSet(string(s)))
}

// Host is where an Interpreter runs a process's program: the process's
// own workflow (vibe.Process), or a workflow that runs many programs side
// by side, each in a coroutine of its own. The interpreter decides what
// comes next and keeps the process's view; the host does the effects.
type Host interface {
	// Fill asks a model to fill the program's LLM chunk idx with in: its
	// schema, prompt and the minimal context of its references.
	Fill(ctx workflow.Context, idx int, in durable.FillInput) (durable.FillOutput, error)
	// Action runs a SERVER step's action (ExecuteAction); in carries the
	// process's id and the step, from which the idempotency key comes.
	Action(ctx workflow.Context, in durable.ActionInput) (jsonv.Value, error)
	// Status is told each change of the process's status.
	Status(ctx workflow.Context, s Status)
}

// Interpreter runs one process's compiled program, chunk by chunk, and
// keeps its View. A person's answer reaches it through Validate and Accept
// (the host's update handler).
type Interpreter struct {
	id   string // the process's id: its workflow's, or a batch item's
	in   durable.Start
	view View
	// answer is the person's accepted answer, set by Accept, with who sent
	// it and when it was taken.
	answer   *jsonv.Value
	answered Answered
	// told is set once the host was first told the status.
	told bool
}

// NewInterpreter returns the interpreter of the process id that in starts.
func NewInterpreter(id string, in durable.Start) *Interpreter {
	return &Interpreter{id: id, in: in, view: newView(in)}
}

// View is the process as far as it has run.
func (r *Interpreter) View() View { return r.view }

// Program is the compiled program the interpreter runs.
func (r *Interpreter) Program() *compile.Program { return r.in.Program }

// Name is the name of the process the interpreter runs.
func (r *Interpreter) Name() string { return r.in.Name }

// Run runs the program to its end on h. On an error the view has failed
// with it, and the error is returned.
func (r *Interpreter) Run(ctx workflow.Context, h Host) error {
	if r.in.Program == nil || len(r.in.Program.Chunks) == 0 {
		return r.fail(ctx, h, temporal.NewNonRetryableApplicationError("the process has no program: start it with process.Client or a Vessel's launch", durable.ErrTypeBadProcess, nil))
	}
	for i := range r.in.Program.Chunks {
		ch := &r.in.Program.Chunks[i]
		r.view.Chunk = ch.Name
		r.setStatus(ctx, h, Running)
		timing := r.view.started(ch.Name, "", workflow.Now(ctx))
		var err error
		switch ch.Kind {
		case compile.LLM:
			err = r.llmChunk(ctx, h, i)
		case compile.Server:
			err = r.serverChunk(ctx, h, ch)
		case compile.User:
			err = r.userChunk(ctx, h, i)
		}
		r.view.ended(timing, workflow.Now(ctx))
		if err != nil {
			return r.fail(ctx, h, err)
		}
		r.view.Done = append(r.view.Done, ch.Name)
	}
	r.view.Chunk = ""
	r.setStatus(ctx, h, Completed)
	return nil
}

// setStatus sets the view's status and tells h when it changed (and the
// first time, though the view starts running).
func (r *Interpreter) setStatus(ctx workflow.Context, h Host, s Status) {
	if r.view.Status == s && r.told {
		return
	}
	r.told = true
	r.view.Status = s
	h.Status(ctx, s)
}

func (r *Interpreter) fail(ctx workflow.Context, h Host, err error) error {
	msg := durable.ErrorText(err)
	r.view.Error = &msg
	r.setStatus(ctx, h, Failed)
	return err
}

// llmChunk fills an LLM chunk (or takes the value a Vessel already filled),
// keeps its steps' outputs, and starts its fire-and-forget actions. A
// chunk with a loop is asked again, with its previous attempt, until the
// model marks it done or the loop's maximum is reached; the last attempt
// is kept.
func (r *Interpreter) llmChunk(ctx workflow.Context, h Host, idx int) error {
	ch := &r.in.Program.Chunks[idx]
	var parts compose.Parts // the value kept, split
	if idx == 0 && !r.in.First.IsNull() {
		parts = compose.Split(r.in.First) // a Vessel filled it: no model call here split it
	} else {
		mctx, err := r.view.context(ch.References)
		if err != nil {
			return fmt.Errorf("chunk %s: %w", ch.Name, err)
		}
		in := durable.FillInput{Chunk: ch.Name, System: r.in.System, Prompt: r.in.Prompt, Context: mctx, Schema: ch.Schema,
			ProcessName: r.in.Name, StepContext: ch.StepContext(), Instance: cmp.Or(r.in.Instance, r.id), Queue: r.in.ModelQueue}
		for attempt := 1; ; attempt++ {
			if ch.Loop != nil {
				in.Attempt, in.MaxAttempts = attempt, ch.Loop.Max
			}
			out, err := h.Fill(ctx, idx, in)
			if err != nil {
				if failed, ok := failedFill(err); ok {
					r.view.account(ch, in, failed)
				}
				return fmt.Errorf("chunk %s: %w", ch.Name, err)
			}
			r.view.account(ch, in, out)
			if ch.Loop == nil || attempt >= ch.Loop.Max || loopDone(out.Value, ch.Loop) {
				parts = out.Parts()
				break
			}
			in.Previous = out.Value
		}
	}
	outs, err := r.view.keepChunk(ch, parts)
	if err != nil {
		return err
	}
	for i := range ch.Steps {
		if ch.Steps[i].FireAndForget {
			r.fireAndForget(ctx, &ch.Steps[i], outs[i])
		}
	}
	return nil
}

// failedFill is what a model call that kept breaking its schema sent and
// got back, carried by its error.
func failedFill(err error) (durable.FillOutput, bool) {
	var ae *temporal.ApplicationError
	var out durable.FillOutput
	if !errors.As(err, &ae) || ae.Type() != durable.ErrTypeInvalidAnswer || !ae.HasDetails() || ae.Details(&out) != nil {
		return durable.FillOutput{}, false
	}
	return out, true
}

// loopDone reports whether the model marked a loop's attempt final.
func loopDone(value jsonv.Value, l *compile.Loop) bool {
	done, err := value.At(l.Done)
	return err == nil && done.Bool()
}

// fireAndForget starts a step's action as a child workflow the process does
// not wait for; it outlives the process (ParentClosePolicy ABANDON) and its
// failure is recorded, not fatal.
func (r *Interpreter) fireAndForget(ctx workflow.Context, s *compile.ProgramStep, out jsonv.Value) {
	if r.view.Actions == nil {
		r.view.Actions = map[string]string{}
	}
	q := s.Qualified()
	id := FireAndForgetID(r.id, q)
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:        id,
		ParentClosePolicy: enumspb.PARENT_CLOSE_POLICY_ABANDON,
	})
	f := workflow.ExecuteChildWorkflow(cctx, FireAndForgetName, durable.ActionInput{
		Process: r.id, Step: q, Action: s.Action, Input: out, Output: jsonv.NullValue(), Queue: r.in.ActionQueues[s.Action],
	})
	r.view.Actions[q] = "started"
	// Make sure the child exists before the process may close; then watch
	// it in the background.
	if err := f.GetChildWorkflowExecution().Get(ctx, nil); err != nil {
		r.view.Actions[q] = "failed: " + durable.ErrorText(err)
		return
	}
	workflow.Go(ctx, func(ctx workflow.Context) {
		if err := f.Get(ctx, nil); err != nil {
			r.view.Actions[q] = "failed: " + durable.ErrorText(err)
			return
		}
		r.view.Actions[q] = "completed"
	})
}

// serverChunk runs each step's action in order, blocking.
func (r *Interpreter) serverChunk(ctx workflow.Context, h Host, ch *compile.ProgramChunk) error {
	for i := range ch.Steps {
		s := &ch.Steps[i]
		in, err := r.actionInput(s)
		if err != nil {
			return err
		}
		action := s.Action
		if action == "" {
			action = s.Name // the worker matches it to one of its actions
		}
		ai := durable.ActionInput{Process: r.id, Step: s.Qualified(), Action: action, Input: in, Output: s.Output, Queue: r.in.ActionQueues[action]}
		if !s.Inputs { // a blocking step's filled inputs are its arguments as they are
			for _, r := range s.References {
				ai.Arguments = append(ai.Arguments, r.Pointer())
			}
		}
		timing := r.view.started(ch.Name, ai.Step, workflow.Now(ctx))
		out, err := h.Action(ctx, ai)
		r.view.ended(timing, workflow.Now(ctx))
		if err != nil {
			return fmt.Errorf("step %s: %w", s.Qualified(), err)
		}
		if s.Blocking {
			out = jsonv.ObjectValue(jsonv.Member{Name: "input", Value: in}, jsonv.Member{Name: "output", Value: out})
		}
		if _, err := r.view.keep(s, compose.Split(out)); err != nil {
			return err
		}
	}
	return nil
}

// actionInput is a server step's input in the process's state
// (compile.ProgramStep.ActionInput).
func (r *Interpreter) actionInput(s *compile.ProgramStep) (jsonv.Value, error) {
	return s.ActionInput(r.view.State)
}

// userChunk waits for a person's answer to the chunk.
func (r *Interpreter) userChunk(ctx workflow.Context, h Host, idx int) error {
	ch := &r.in.Program.Chunks[idx]
	mctx, err := r.view.context(ch.References)
	if err != nil {
		return fmt.Errorf("chunk %s: %w", ch.Name, err)
	}
	r.answer = nil
	r.view.Waiting = &Pending{Chunk: ch.Name, Schema: ch.Schema, Context: mctx}
	r.setStatus(ctx, h, Waiting)
	if err := workflow.Await(ctx, func() bool { return r.answer != nil }); err != nil {
		return err
	}
	answer := *r.answer
	r.view.Waiting = nil
	r.view.Answers = append(r.view.Answers, r.answered)
	_, err = r.view.keepChunk(ch, compose.Split(answer))
	return err
}

// FireAndForget runs one action with retries: the workflow of a
// fire-and-forget step.
func (w *Workflows) FireAndForget(ctx workflow.Context, in durable.ActionInput) (jsonv.Value, error) {
	return durable.ExecuteAction(ctx, w.Actions, in)
}

// DirectResult is what a direct server call did.
type DirectResult struct {
	Value  jsonv.Value `json:"value"`  // the instruction as the model filled it
	Action string      `json:"action"` // the action that ran
	Result jsonv.Value `json:"result"` // what it returned
	Usage  llm.Usage   `json:"usage"`
}

// DirectCall is the workflow of a direct server call: the model fills the
// instruction (unless Start.First holds it already), then the action runs
// with the last step's value, with retries. It keeps no process state.
func (w *Workflows) DirectCall(ctx workflow.Context, in durable.Start) (DirectResult, error) {
	if in.Program == nil || in.Program.Direct == nil {
		return DirectResult{}, temporal.NewNonRetryableApplicationError("the process is not a direct server call", durable.ErrTypeBadProcess, nil)
	}
	d := in.Program.Direct
	ch := &in.Program.Chunks[d.Chunk]
	res := DirectResult{Action: d.Action, Value: in.First}
	var input jsonv.Value
	if in.First.IsNull() {
		out, err := durable.ExecuteFill(ctx, durable.FillInput{Chunk: ch.Name, System: in.System, Prompt: in.Prompt, Context: jsonv.NewObject(0).Value(), Schema: ch.Schema,
			Queue: in.ModelQueue})
		if err != nil {
			return res, err
		}
		res.Value, res.Usage = out.Value, out.Usage
		input = out.Parts().Output.Lookup(d.Step)
	} else {
		input = compose.Split(in.First.Lookup(d.Step)).Output // a Vessel filled it: no model call here split it
	}
	out, err := durable.ExecuteAction(ctx, w.Actions, durable.ActionInput{Step: d.Step, Action: d.Action, Input: input, Output: jsonv.NullValue(), Queue: in.ActionQueues[d.Action]})
	res.Result = out
	return res, err
}
