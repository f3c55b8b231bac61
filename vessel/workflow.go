package vessel

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
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
	// Output is the schema of the request's result. A request with no tools
	// (a delegate's sub-request) is one model call that fills it; with
	// tools, the decision fills it beside its calls.
	Output jsonv.Value `json:"output,omitempty"`
	// Chain lists the delegates this request runs inside, outermost first;
	// Depth is their number.
	Chain []string `json:"chain,omitempty"`
	Depth int      `json:"depth,omitempty"`
	// MaxDepth bounds how deep delegates nest (0: DefaultMaxDepth) and
	// MaxFanOut how many delegate calls one request makes (0:
	// DefaultMaxFanOut).
	MaxDepth  int `json:"maxDepth,omitempty"`
	MaxFanOut int `json:"maxFanOut,omitempty"`
}

// Bounds of delegation.
const (
	DefaultMaxDepth  = 4
	DefaultMaxFanOut = 128
)

// CallResult is what one call did.
type CallResult struct {
	Index    int         `json:"index"`
	Tool     string      `json:"tool"`
	Instance string      `json:"instance,omitempty"`
	Params   jsonv.Value `json:"params"` // with the state references resolved
	Output   string      `json:"output,omitempty"`
	Result   jsonv.Value `json:"result"`
	Error    string      `json:"error,omitempty"`
	// Run is the workflow id of a delegate call's sub-request.
	Run string `json:"run,omitempty"`
	// Usage is what a delegate call's sub-request (and its own delegates)
	// spent.
	Usage llm.Usage `json:"usage,omitzero"`
}

// Result is what a request did.
type Result struct {
	// Decision is the model's decision (or the plan's calls).
	Decision jsonv.Value `json:"decision"`
	// Output is the request's result when it has an Output schema.
	Output jsonv.Value  `json:"output,omitempty"`
	Calls  []CallResult `json:"calls"`
	// States holds each instance's final state; "" is the global one.
	States map[string]jsonv.Value `json:"states"`
	// Usage totals the request's model calls, its delegates' included.
	Usage llm.Usage `json:"usage"`
	// Replayed is true when the decision came from a recording.
	Replayed bool `json:"replayed,omitempty"`
}

// Register registers the Vessel workflow on a worker; the activities it
// uses are process.Register's and, with acts set, the delegate activity.
// actions are the worker's registered actions, for their retry policies
// and timeouts.
func Register(w worker.Registry, actions *process.Actions, acts *Activities) {
	wf := &Workflows{Actions: actions}
	w.RegisterWorkflowWithOptions(wf.Request, workflow.RegisterOptions{Name: WorkflowName})
	if acts != nil {
		w.RegisterActivityWithOptions(acts.Delegate, activity.RegisterOptions{Name: delegateName})
	}
}

// RegisterWorkflow registers only the Vessel workflow, for a replayer or a
// worker that runs no activities.
func RegisterWorkflow(w worker.WorkflowRegistry, actions *process.Actions) {
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
	case len(in.Toolset.Tools) == 0:
		// A request without tools — a delegate's sub-request — is one model
		// call that fills its output.
		out, err := fill(ctx, in, msgs, "output", outputSchema(in.Output))
		if err != nil {
			return res, fmt.Errorf("output: %w", err)
		}
		res.Output, res.Usage, res.Replayed = compose.Split(out.Value).Output, out.Usage, out.Replayed
		res.States = states
		return res, nil
	default:
		decision := in.Decision
		if decision.IsNull() {
			out, err := fill(ctx, in, msgs, "decision", in.Toolset.DecisionSchema())
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
	if n, bound := delegateCalls(in.Toolset, calls), maxOr(in.MaxFanOut, DefaultMaxFanOut); n > bound {
		return bad(fmt.Errorf("the request makes %d delegate calls; at most %d may run from one request (fan-out bound)", n, bound))
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
					out, err := w.runCall(ctx, in, msgs, states[c.Instance], c, params, cr)
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
				res.Usage = res.Usage.Add(cr.Usage)
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
	if !in.Output.IsNull() {
		// A delegate's sub-request with tools: its result is filled once
		// its calls are done, with what they gave.
		done, err := ParseContext(file, "", jsonv.ArrayValue(resultsMessage(res.Calls)))
		if err != nil {
			return res, err
		}
		out, err := fill(ctx, in, append(slices.Clone(msgs), done...), "output", in.Output)
		if err != nil {
			return res, fmt.Errorf("output: %w", err)
		}
		res.Output, res.Usage = compose.Split(out.Value).Output, res.Usage.Add(out.Usage)
	}
	return res, nil
}

// resultsMessage is a data message of kind "results": what a request's
// calls gave, for the model that fills the request's output.
func resultsMessage(calls []CallResult) jsonv.Value {
	items := make([]jsonv.Value, len(calls))
	for i, c := range calls {
		items[i] = c.Summary()
	}
	return jsonv.ObjectValue(
		jsonv.Member{Name: "type", Value: jsonv.StringValue(DataMessage)},
		jsonv.Member{Name: "kind", Value: jsonv.StringValue("results")},
		jsonv.Member{Name: "data", Value: jsonv.ArrayValue(items...)})
}

// Summary is what the call did, in order: tool, instance, params, output
// path, then result or error. It leaves out Run, which names a workflow and
// differs from run to run.
func (c CallResult) Summary() jsonv.Value {
	o := jsonv.NewObject(6)
	o.Set("tool", jsonv.StringValue(c.Tool))
	if c.Instance != "" {
		o.Set("instance", jsonv.StringValue(c.Instance))
	}
	o.Set("params", c.Params)
	if c.Output != "" {
		o.Set("output", jsonv.StringValue(c.Output))
	}
	if c.Error != "" {
		o.Set("error", jsonv.StringValue(c.Error))
	} else {
		o.Set("result", c.Result)
	}
	return o.Value()
}

// fill asks the model to fill a schema for the request.
func fill(ctx workflow.Context, in Input, msgs []*Message, name string, s jsonv.Value) (process.FillOutput, error) {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: process.FillTimeout, RetryPolicy: process.FillRetry})
	var out process.FillOutput
	err := workflow.ExecuteActivity(actx, "vibe.Fill", process.FillInput{
		Process: workflow.GetInfo(ctx).WorkflowExecution.ID, Chunk: name,
		System: System(in.Toolset.System, msgs), Prompt: Prompt(msgs, in.Prompt),
		Context: jsonv.NewObject(0).Value(), Schema: s,
	}).Get(ctx, &out)
	return out, err
}

func outputSchema(s jsonv.Value) jsonv.Value {
	if s.IsNull() {
		return DefaultOutput
	}
	return s
}

func maxOr(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

func delegateCalls(ts *Toolset, calls []*Call) int {
	n := 0
	for _, c := range calls {
		if t := ts.Tool(c.Tool); t != nil && t.Kind == DelegateKind {
			n++
		}
	}
	return n
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
func (w *Workflows) runCall(ctx workflow.Context, in Input, msgs []*Message, state jsonv.Value, c *Call, params jsonv.Value, cr *CallResult) (jsonv.Value, error) {
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
	case DelegateKind:
		return delegate(ctx, in, msgs, state, c, t, compose.Split(params).Output, cr)
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
