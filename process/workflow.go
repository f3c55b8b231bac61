package process

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/compose"
	"github.com/augceo/vibe/engine"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/schema"
)

// Names shared by workflows, workers and clients.
const (
	// TaskQueue is the task queue Vibe's workers poll.
	TaskQueue = "vibe"
	// WorkflowName, DirectCallName and FireAndForgetName are the workflow
	// types.
	WorkflowName      = "vibe.Process"
	DirectCallName    = "vibe.DirectCall"
	FireAndForgetName = "vibe.FireAndForget"
	// QueryView is the query that returns a process's View.
	QueryView = "view"
	// UpdateAnswer is the update that carries a person's answer to a USER
	// chunk.
	UpdateAnswer = "answer"
	// fillName and actionName are the activity types.
	fillName   = "vibe.Fill"
	actionName = "vibe.Action"
)

// Status is a process's status.
type Status string

// The statuses of a process.
const (
	Running   Status = "running"
	Waiting   Status = "waiting" // for a person's answer
	Completed Status = "completed"
	Failed    Status = "failed"
)

// Start is a process workflow's input.
type Start struct {
	// Name names the process (schedule-meeting); it is shown and searchable.
	Name string `json:"name"`
	// Process is the compiled process document.
	Process jsonv.Value `json:"process"`
	// Prompt is the person's request.
	Prompt string `json:"prompt,omitempty"`
	// Input is data the process starts with, kept in state under "input".
	Input jsonv.Value `json:"input,omitempty"`
	// First is the value of the first LLM chunk when it was filled already —
	// by a Vessel's LaunchProcess tool — so that no model is asked for it.
	First jsonv.Value `json:"first,omitempty"`
	// System is the system text of the process's model calls.
	System string `json:"system,omitempty"`
}

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
	// Usage totals the process's model calls; Steps has them by chunk.
	Usage llm.Usage            `json:"usage"`
	Steps map[string]llm.Usage `json:"chunkUsage,omitempty"`
	// Replayed is true when any model answer came from a recording.
	Replayed bool `json:"replayed,omitempty"`
	// Actions has the status of each fire-and-forget action by step:
	// "started", "completed" or "failed: …".
	Actions map[string]string `json:"actions,omitempty"`
	// Error says why the process failed; null while it has not.
	Error *string `json:"error"`
}

// Pending describes a USER chunk waiting for its answer.
type Pending struct {
	Chunk   string      `json:"chunk"`
	Schema  jsonv.Value `json:"schema"`
	Context jsonv.Value `json:"context"`
}

// ActivityTimeouts bound the activities of a process.
var (
	// FillTimeout bounds one attempt of an LLM chunk, repair turns included.
	FillTimeout = 10 * time.Minute
	// FillRetry retries an LLM chunk whose endpoint failed past its client's
	// own retries.
	FillRetry = &temporal.RetryPolicy{InitialInterval: 2 * time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 5}
)

// WithActionOptions sets the activity options of an action on ctx: its
// retry policy and timeout from the worker's registry, or the defaults.
func WithActionOptions(ctx workflow.Context, acts *Actions, name string) workflow.Context {
	retry, timeout := DefaultRetry, DefaultActionTimeout
	if a, ok := acts.Lookup(name); ok {
		if a.Retry != nil {
			retry = a.Retry
		}
		if a.Timeout > 0 {
			timeout = a.Timeout
		}
	}
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: timeout, RetryPolicy: retry})
}

// processRun is one process's interpreter.
type processRun struct {
	in   Start
	proc *compile.Process
	acts *Actions
	view View
	// answer is the person's accepted answer, set by the update handler.
	answer *jsonv.Value
	// upserted is set once the search attributes were first written.
	upserted bool
}

// Workflows holds the workflow functions; they need the worker's actions
// only for their retry policies and timeouts.
type Workflows struct {
	Actions *Actions
}

// Process is the process workflow.
func (w *Workflows) Process(ctx workflow.Context, in Start) (View, error) {
	r := &processRun{in: in, acts: w.Actions}
	r.view = View{Status: Running, Done: []string{}, State: jsonv.NewObject(4).Value(),
		Thinking: jsonv.NewObject(4).Value(), Metrics: jsonv.NewObject(4).Value(), Steps: map[string]llm.Usage{}}
	if err := workflow.SetQueryHandler(ctx, QueryView, func() (View, error) { return r.view, nil }); err != nil {
		return r.view, err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateAnswer, r.accept, workflow.UpdateHandlerOptions{Validator: r.validate}); err != nil {
		return r.view, err
	}
	proc, err := compile.Decode(in.Process)
	if err != nil {
		return r.fail(ctx, temporal.NewNonRetryableApplicationError("the process document is not a compiled process: "+err.Error(), "BadProcess", err))
	}
	r.proc = proc
	if !in.Input.IsNull() {
		r.view.State.Object().Set("input", in.Input)
	}
	for i, ch := range proc.Chunks {
		r.view.Chunk = ch.Name
		r.setStatus(ctx, Running)
		var err error
		switch ch.Kind {
		case compile.LLM:
			err = r.llmChunk(ctx, ch, i == 0)
		case compile.Server:
			err = r.serverChunk(ctx, ch)
		case compile.User:
			err = r.userChunk(ctx, ch)
		}
		if err != nil {
			return r.fail(ctx, err)
		}
		r.view.Done = append(r.view.Done, ch.Name)
	}
	r.view.Chunk = ""
	r.setStatus(ctx, Completed)
	return r.view, nil
}

func (r *processRun) setStatus(ctx workflow.Context, s Status) {
	if r.view.Status == s && s != Running {
		return
	}
	if r.view.Status == s && r.upserted {
		return
	}
	r.upserted = true
	r.view.Status = s
	// Visible in Temporal's own UI and CLI: VibeProcess, VibeStatus.
	_ = workflow.UpsertTypedSearchAttributes(ctx, engine.ProcessAttribute.ValueSet(r.in.Name), engine.StatusAttribute.ValueSet(string(s)))
}

func (r *processRun) fail(ctx workflow.Context, err error) (View, error) {
	msg := errorText(err)
	r.view.Error = &msg
	r.setStatus(ctx, Failed)
	return r.view, err
}

// errorText is an activity error without Temporal's wrapping.
func errorText(err error) string {
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		return ae.Error()
	}
	return err.Error()
}

// llmChunk fills an LLM chunk (or takes the value a Vessel already filled),
// keeps its steps' outputs, and starts its fire-and-forget actions.
func (r *processRun) llmChunk(ctx workflow.Context, ch *compile.Chunk, first bool) error {
	var value jsonv.Value
	if first && !r.in.First.IsNull() {
		value = r.in.First
	} else {
		mctx, err := compile.MinimalContext(r.view.State, ch.References)
		if err != nil {
			return fmt.Errorf("chunk %s: %w", ch.Name, err)
		}
		def := r.in.Process.Lookup("$defs").Lookup(ch.Name)
		actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: FillTimeout, RetryPolicy: FillRetry})
		var out FillOutput
		err = workflow.ExecuteActivity(actx, fillName, FillInput{
			Process: workflow.GetInfo(ctx).WorkflowExecution.ID, Chunk: ch.Name, System: r.in.System,
			Prompt: r.in.Prompt, Context: mctx, Schema: compile.Project(def, compile.ProjectOptions{}).Schema,
		}).Get(ctx, &out)
		if err != nil {
			return fmt.Errorf("chunk %s: %w", ch.Name, err)
		}
		value = out.Value
		r.view.Usage = r.view.Usage.Add(out.Usage)
		r.view.Steps[ch.Name] = r.view.Steps[ch.Name].Add(out.Usage)
		r.view.Replayed = r.view.Replayed || out.Replayed
	}
	if value.Object() == nil {
		return fmt.Errorf("chunk %s: the value is %s, not an object of its steps", ch.Name, value.Kind())
	}
	// Members that are not steps — a mixin's _considerations — are the
	// chunk's own thinking.
	rest := jsonv.NewObject(0)
	for name, v := range value.Members() {
		if !slices.ContainsFunc(ch.Steps, func(s *compile.Step) bool { return s.Name == name }) {
			rest.Set(name, v)
		}
	}
	if rest.Len() > 0 {
		r.view.Thinking.Object().Set(ch.Name, rest.Value())
	}
	for _, s := range ch.Steps {
		v, ok := value.Get(s.Name)
		if !ok {
			return fmt.Errorf("chunk %s: the value has no step %q", ch.Name, s.Name)
		}
		out, err := r.keep(s, v)
		if err != nil {
			return err
		}
		if s.FireAndForget {
			r.fireAndForget(ctx, s, out)
		}
	}
	return nil
}

// keep stores a step's value: its output in state, its thinking fields and
// metrics beside. It returns the output.
func (r *processRun) keep(s *compile.Step, v jsonv.Value) (jsonv.Value, error) {
	parts := compose.Split(v)
	if _, err := jsonv.SetAll(r.view.State, jsonv.PointerTo(s.StatePath()...), parts.Output); err != nil {
		return jsonv.Value{}, fmt.Errorf("step %s: the process state has no place for its result: %w", s.QualifiedName(), err)
	}
	q := s.QualifiedName()
	if len(parts.Thinking) > 0 {
		r.view.Thinking.Object().Set(q, fields(parts.Thinking))
	}
	if len(parts.Metrics) > 0 {
		r.view.Metrics.Object().Set(q, fields(parts.Metrics))
	}
	return parts.Output, nil
}

func fields(fs []compose.Field) jsonv.Value {
	o := jsonv.NewObject(len(fs))
	for _, f := range fs {
		o.Set(strings.TrimPrefix(string(f.Path), "/"), f.Value)
	}
	return o.Value()
}

// fireAndForget starts a step's action as a child workflow the process does
// not wait for; it outlives the process (ParentClosePolicy ABANDON) and its
// failure is recorded, not fatal.
func (r *processRun) fireAndForget(ctx workflow.Context, s *compile.Step, out jsonv.Value) {
	if r.view.Actions == nil {
		r.view.Actions = map[string]string{}
	}
	q := s.QualifiedName()
	id := workflow.GetInfo(ctx).WorkflowExecution.ID + "-" + strings.ReplaceAll(q, ".", "-")
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:        id,
		ParentClosePolicy: enumspb.PARENT_CLOSE_POLICY_ABANDON,
	})
	f := workflow.ExecuteChildWorkflow(cctx, FireAndForgetName, ActionInput{
		Process: workflow.GetInfo(ctx).WorkflowExecution.ID, Step: q, Action: s.Action, Input: out, Output: jsonv.NullValue(),
	})
	r.view.Actions[q] = "started"
	// Make sure the child exists before the process may close; then watch
	// it in the background.
	if err := f.GetChildWorkflowExecution().Get(ctx, nil); err != nil {
		r.view.Actions[q] = "failed: " + errorText(err)
		return
	}
	workflow.Go(ctx, func(ctx workflow.Context) {
		if err := f.Get(ctx, nil); err != nil {
			r.view.Actions[q] = "failed: " + errorText(err)
			return
		}
		r.view.Actions[q] = "completed"
	})
}

// serverChunk runs each step's action in order, blocking.
func (r *processRun) serverChunk(ctx workflow.Context, ch *compile.Chunk) error {
	for _, s := range ch.Steps {
		in, err := r.actionInput(s)
		if err != nil {
			return err
		}
		action := s.Action
		if action == "" {
			if a, ok := compile.MatchAction(s.Name, r.acts.Names()); ok {
				action = a
			} else {
				action = s.Name
			}
		}
		var out jsonv.Value
		err = workflow.ExecuteActivity(WithActionOptions(ctx, r.acts, action), actionName, ActionInput{
			Process: workflow.GetInfo(ctx).WorkflowExecution.ID, Step: s.QualifiedName(), Action: action,
			Input: in, Output: outputSchema(s),
		}).Get(ctx, &out)
		if err != nil {
			return fmt.Errorf("step %s: %w", s.QualifiedName(), err)
		}
		if schema.Properties(s.Schema).Has("output") {
			out = jsonv.ObjectValue(jsonv.Member{Name: "input", Value: in}, jsonv.Member{Name: "output", Value: out})
		}
		if _, err := r.keep(s, out); err != nil {
			return err
		}
	}
	return nil
}

// actionInput is a server step's input: the minimal context of its
// references, or the process's input when it has none.
func (r *processRun) actionInput(s *compile.Step) (jsonv.Value, error) {
	if len(s.References) == 0 {
		if in, ok := r.view.State.Get("input"); ok {
			return in, nil
		}
		return jsonv.NewObject(0).Value(), nil
	}
	v, err := compile.MinimalContext(r.view.State, s.References)
	if err != nil {
		return jsonv.Value{}, fmt.Errorf("step %s: %w", s.QualifiedName(), err)
	}
	return v, nil
}

// outputSchema is the schema an action's result must fit: the step's
// "output" property without null (the model's placeholder), or the step's
// own schema.
func outputSchema(s *compile.Step) jsonv.Value {
	if o, ok := schema.Properties(s.Schema).Get("output"); ok {
		return compile.Project(o, compile.ProjectOptions{}).Schema
	}
	return compile.Project(s.Schema, compile.ProjectOptions{}).Schema
}

// userChunk waits for a person's answer to the chunk.
func (r *processRun) userChunk(ctx workflow.Context, ch *compile.Chunk) error {
	mctx, err := compile.MinimalContext(r.view.State, ch.References)
	if err != nil {
		return fmt.Errorf("chunk %s: %w", ch.Name, err)
	}
	def := r.in.Process.Lookup("$defs").Lookup(ch.Name)
	r.answer = nil
	r.view.Waiting = &Pending{Chunk: ch.Name, Schema: compile.Project(def, compile.ProjectOptions{}).Schema, Context: mctx}
	r.setStatus(ctx, Waiting)
	if err := workflow.Await(ctx, func() bool { return r.answer != nil }); err != nil {
		return err
	}
	answer := *r.answer
	r.view.Waiting = nil
	for _, s := range ch.Steps {
		if _, err := r.keep(s, answer.Lookup(s.Name)); err != nil {
			return err
		}
	}
	return nil
}

// validate refuses an answer when the process waits for none, or when it
// breaks the waited chunk's schema; the process keeps waiting.
func (r *processRun) validate(answer jsonv.Value) error {
	if r.view.Waiting == nil {
		return fmt.Errorf("process is not waiting for an answer (status %s)", r.view.Status)
	}
	v, err := schema.NewValidator(r.view.Waiting.Chunk, r.view.Waiting.Schema, schema.ValidatorOptions{})
	if err != nil {
		return err
	}
	if err := v.Validate(answer); err != nil {
		return &AnswerError{Chunk: r.view.Waiting.Chunk, Problems: err.(*schema.ValidationError).Problems}
	}
	return nil
}

func (r *processRun) accept(ctx workflow.Context, answer jsonv.Value) (View, error) {
	r.answer = &answer
	// Let the workflow take the answer before the update returns, so that
	// the view it returns shows the process moving on.
	_ = workflow.Await(ctx, func() bool { return r.view.Waiting == nil || r.view.Waiting.Chunk != r.view.Chunk })
	return r.view, nil
}

// AnswerError is a person's answer that breaks the waited chunk's schema.
type AnswerError struct {
	Chunk    string
	Problems []schema.Invalid
}

func (e *AnswerError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return fmt.Sprintf("the answer does not fit chunk %s: %s", e.Chunk, strings.Join(lines, "; "))
}

// FireAndForget runs one action with retries: the workflow of a
// fire-and-forget step.
func (w *Workflows) FireAndForget(ctx workflow.Context, in ActionInput) (jsonv.Value, error) {
	var out jsonv.Value
	err := workflow.ExecuteActivity(WithActionOptions(ctx, w.Actions, in.Action), actionName, in).Get(ctx, &out)
	return out, err
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
func (w *Workflows) DirectCall(ctx workflow.Context, in Start) (DirectResult, error) {
	proc, err := compile.Decode(in.Process)
	if err != nil || proc.Direct == nil {
		return DirectResult{}, temporal.NewNonRetryableApplicationError("the document is not a compiled direct server call", "BadProcess", err)
	}
	d := proc.Direct
	res := DirectResult{Action: d.Action, Value: in.First}
	if in.First.IsNull() {
		def := in.Process.Lookup("$defs").Lookup(d.Chunk.Name)
		actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: FillTimeout, RetryPolicy: FillRetry})
		var out FillOutput
		if err := workflow.ExecuteActivity(actx, fillName, FillInput{
			Process: workflow.GetInfo(ctx).WorkflowExecution.ID, Chunk: d.Chunk.Name, System: in.System, Prompt: in.Prompt,
			Context: jsonv.NewObject(0).Value(), Schema: compile.Project(def, compile.ProjectOptions{}).Schema,
		}).Get(ctx, &out); err != nil {
			return res, err
		}
		res.Value, res.Usage = out.Value, out.Usage
	}
	input := compose.Split(res.Value.Lookup(d.Step.Name)).Output
	err = workflow.ExecuteActivity(WithActionOptions(ctx, w.Actions, d.Action), actionName, ActionInput{
		Process: workflow.GetInfo(ctx).WorkflowExecution.ID, Step: d.Step.Name, Action: d.Action, Input: input, Output: jsonv.NullValue(),
	}).Get(ctx, &res.Result)
	return res, err
}
