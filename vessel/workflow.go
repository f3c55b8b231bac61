package vessel

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/augceo/vibe/compose"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/schema"
)

// WorkflowName is the workflow type of a Vessel request.
const WorkflowName = "vibe.Vessel"

// MaxParallel bounds the calls of one layer that run at once.
const MaxParallel = 16

// Input is a Vessel request: the toolset, the context, the person's
// request. With a plan message in the context, the plan runs and no model
// is asked; with Decision set, that decision runs.
type Input struct {
	Toolset  *Toolset    `json:"toolset"`
	Context  jsonv.Value `json:"context"`
	Prompt   string      `json:"prompt,omitempty"`
	Decision jsonv.Value `json:"decision,omitempty"`
	// File names the context in errors.
	File string `json:"file,omitempty"`
}

// CallResult is what one call did.
type CallResult struct {
	Index    int         `json:"index"`
	Tool     string      `json:"tool"`
	Instance string      `json:"instance,omitempty"`
	Params   jsonv.Value `json:"params"` // with the state references resolved
	Output   string      `json:"output,omitempty"`
	Result   jsonv.Value `json:"result"`
	Error    string      `json:"error,omitempty"`
}

// Result is what a request did.
type Result struct {
	// Decision is the model's decision (or the plan's calls).
	Decision jsonv.Value  `json:"decision"`
	Calls    []CallResult `json:"calls"`
	// States holds each instance's final state; "" is the global one.
	States map[string]jsonv.Value `json:"states"`
	Usage  llm.Usage              `json:"usage"`
	// Replayed is true when the decision came from a recording.
	Replayed bool `json:"replayed,omitempty"`
}

// Register registers the Vessel workflow on a worker; the activities it
// uses are process.Register's, and actions (for their retry policies and
// timeouts) the worker's registered actions.
func Register(w worker.WorkflowRegistry, actions *process.Actions) {
	wf := &Workflows{Actions: actions}
	w.RegisterWorkflowWithOptions(wf.Request, workflow.RegisterOptions{Name: WorkflowName})
}

// Workflows holds the Vessel workflow; it needs the worker's actions only
// for their retry policies and timeouts.
type Workflows struct {
	Actions *process.Actions
}

// Request runs a Vessel request durably: the decision is one model call
// (an activity), the calls run layer by layer, independent calls in
// parallel; actions are activities, launches child workflows, so nothing
// finished runs again after a restart.
func (w *Workflows) Request(ctx workflow.Context, in Input) (Result, error) {
	file := in.File
	if file == "" {
		file = "request"
	}
	var res Result
	bad := func(err error) (Result, error) {
		return res, temporal.NewNonRetryableApplicationError(err.Error(), "BadRequest", err)
	}
	msgs, err := ParseContext(file, "/context", in.Context)
	if err != nil {
		return bad(err)
	}
	states, err := InitialStates(msgs)
	if err != nil {
		return bad(err)
	}
	instances := Instances(msgs)

	var calls []*Call
	var plan *Message
	for _, m := range msgs {
		if m.Type == PlanMessage {
			plan = m
		}
	}
	switch {
	case plan != nil:
		pc, err := ParseCalls(file, plan.Path.Append("calls"), plan.Data)
		if err != nil {
			return bad(err)
		}
		if calls, err = Expand(pc, instances); err != nil {
			return bad(err)
		}
		res.Decision = jsonv.ObjectValue(jsonv.Member{Name: "calls", Value: plan.Data})
	default:
		decision := in.Decision
		if decision.IsNull() {
			actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: process.FillTimeout, RetryPolicy: process.FillRetry})
			var out process.FillOutput
			err := workflow.ExecuteActivity(actx, "vibe.Fill", process.FillInput{
				Process: workflow.GetInfo(ctx).WorkflowExecution.ID, Chunk: "decision",
				System: System(in.Toolset.System, msgs), Prompt: Prompt(msgs, in.Prompt),
				Context: jsonv.NewObject(0).Value(), Schema: in.Toolset.DecisionSchema(),
			}).Get(ctx, &out)
			if err != nil {
				return res, fmt.Errorf("decision: %w", err)
			}
			decision, res.Usage, res.Replayed = out.Value, out.Usage, out.Replayed
		}
		res.Decision = decision
		if calls, err = ParseCalls("decision", "/calls", decision.Lookup("calls")); err != nil {
			return bad(err)
		}
	}

	g := NewGraph(calls)
	if err := g.Validate(file, in.Toolset, states); err != nil {
		return bad(err)
	}
	res.Calls = make([]CallResult, len(calls))
	failed := make([]bool, len(calls))
	for _, layer := range g.Layers() {
		for start := 0; start < len(layer); start += MaxParallel {
			batch := layer[start:min(len(layer), start+MaxParallel)]
			wg := workflow.NewWaitGroup(ctx)
			for _, i := range batch {
				c := calls[i]
				cr := &res.Calls[i]
				*cr = CallResult{Index: c.Index, Tool: c.Tool, Instance: c.Instance, Params: c.Params, Output: c.OutputString(), Result: jsonv.NullValue()}
				for _, e := range g.Deps[i] {
					if failed[e.From] {
						cr.Error = fmt.Sprintf("not run: %s, which it waits for, failed", calls[e.From].Name())
						failed[i] = true
					}
				}
				if failed[i] {
					continue
				}
				// Parameters read the state as it is when the layer starts.
				params, err := ResolveRefs(c.Params, states[c.Instance])
				if err != nil {
					cr.Error = fmt.Sprintf("%s: %v", c.Name(), err)
					failed[i] = true
					continue
				}
				cr.Params = params
				wg.Add(1)
				workflow.Go(ctx, func(ctx workflow.Context) {
					defer wg.Done()
					out, err := w.runCall(ctx, in, c, params)
					if err != nil {
						cr.Error = fmt.Sprintf("%s: %v", c.Name(), errorText(err))
						failed[i] = true
						return
					}
					cr.Result = out
				})
			}
			wg.Wait(ctx)
			// Results go into state in call order, whatever order they came in.
			for _, i := range batch {
				c, cr := calls[i], &res.Calls[i]
				if failed[i] || c.Output == nil {
					continue
				}
				next, err := Write(states[c.Instance], c.Output, cr.Result)
				if err != nil {
					cr.Error = fmt.Sprintf("%s: %v", c.Name(), err)
					failed[i] = true
					continue
				}
				states[c.Instance] = next
			}
		}
	}
	res.States = states
	return res, nil
}

func errorText(err error) string {
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		return ae.Error()
	}
	return err.Error()
}

// runCall runs one call: an instruction gives its filled value, an action
// runs as an activity, a launch starts the process as a child workflow that
// outlives the request.
func (w *Workflows) runCall(ctx workflow.Context, in Input, c *Call, params jsonv.Value) (jsonv.Value, error) {
	t := in.Toolset.Tool(c.Tool)
	v, err := schema.NewValidator(t.Name, t.Schema, schema.ValidatorOptions{})
	if err != nil {
		return jsonv.Value{}, err
	}
	if err := v.Validate(params); err != nil {
		return jsonv.Value{}, fmt.Errorf("parameters break the tool's schema: %w", err)
	}
	switch t.Kind {
	case Instruction:
		return compose.Split(params).Output, nil
	case Action:
		var out jsonv.Value
		err := workflow.ExecuteActivity(process.WithActionOptions(ctx, w.Actions, t.Action), "vibe.Action", process.ActionInput{
			Process: workflow.GetInfo(ctx).WorkflowExecution.ID, Step: c.Name(), Action: t.Action,
			Input: compose.Split(params).Output, Output: jsonv.NullValue(),
		}).Get(ctx, &out)
		return out, err
	case Launch:
		return launch(ctx, in, c, t, params)
	}
	return jsonv.Value{}, fmt.Errorf("tool %s has an unknown kind %q", t.Name, t.Kind)
}

// launch starts a process with its entry chunk filled by the call.
func launch(ctx workflow.Context, in Input, c *Call, t *Tool, params jsonv.Value) (jsonv.Value, error) {
	first, ok := params.Get(t.Entry)
	if !ok {
		return jsonv.Value{}, fmt.Errorf("the call has no %q: the process's entry chunk", t.Entry)
	}
	// A readable id that is the same on every replay of this request.
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s/%d/%s", workflow.GetInfo(ctx).WorkflowExecution.ID, c.Index, c.Instance)))
	id := t.ProcessName + "-" + hex.EncodeToString(sum[:4])
	wfName := process.WorkflowName
	if _, direct := t.Process.Get("directCall"); direct {
		wfName = process.DirectCallName
	}
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:         id,
		ParentClosePolicy:  enumspb.PARENT_CLOSE_POLICY_ABANDON,
		WorkflowRunTimeout: 0,
	})
	f := workflow.ExecuteChildWorkflow(cctx, wfName, process.Start{Name: t.ProcessName, Process: t.Process, Prompt: in.Prompt, First: first})
	if err := f.GetChildWorkflowExecution().Get(ctx, nil); err != nil {
		return jsonv.Value{}, fmt.Errorf("start %s: %w", t.ProcessName, err)
	}
	return jsonv.ObjectValue(
		jsonv.Member{Name: "process", Value: jsonv.StringValue(t.ProcessName)},
		jsonv.Member{Name: "id", Value: jsonv.StringValue(id)},
	), nil
}
