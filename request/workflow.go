package request

import (
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/augceo/vibe/compose"
	"github.com/augceo/vibe/internal/wfid"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/schema"
	"github.com/augceo/vibe/vessel"
)

// MaxParallel bounds the calls of one layer that run at once.
const MaxParallel = 16

// Workflows holds the Vessel workflow; it needs the worker's actions only
// for their retry policies and timeouts.
type Workflows struct {
	Actions *process.Actions
}

// Request runs a Vessel request durably: the model decides (an activity)
// unless the request brings its calls (a plan, a given decision); the
// calls run layer by layer, independent ones in parallel, each instance's
// results written into its state in call order; actions are activities,
// launches and delegates child workflows, so nothing finished runs again
// after a restart. A delegate's sub-request with tools then has the model
// fill its output with the calls' results in view.
func (w *Workflows) Request(ctx workflow.Context, req vessel.Request) (vessel.Result, error) {
	res := vessel.Result{States: req.States}
	var run *requestRun // set once the calls are known
	if err := workflow.SetQueryHandler(ctx, QueryView, func() (View, error) { return view(&req, &res, run), nil }); err != nil {
		return res, err
	}
	graph := req.Calls
	res.Decision = req.Decision
	switch {
	case graph != nil:
	case len(req.Toolset.Tools) == 0:
		// A request without tools — a delegate's sub-request — is one model
		// call that fills its output.
		out, err := process.ExecuteFill(ctx, process.FillInput{Chunk: "output", System: req.System(), Prompt: req.Text(), Context: jsonv.NewObject(0).Value(), Schema: req.Output})
		if err != nil {
			return res, fmt.Errorf("output: %w", err)
		}
		res.Output, res.Usage, res.Replayed = compose.Split(out.Value).Output, out.Usage, out.Replayed
		return res, nil
	default:
		d, err := decide(ctx, &req)
		if err != nil {
			return res, fmt.Errorf("decision: %w", err)
		}
		graph, res.Decision, res.Usage, res.Replayed = d.Calls, d.Decision, d.Usage, d.Replayed
	}

	run = &requestRun{w: w, req: &req, graph: graph, states: req.States,
		calls: make([]vessel.CallResult, len(graph.Calls)), failed: make([]bool, len(graph.Calls)), done: make([]bool, len(graph.Calls))}
	for _, layer := range graph.Layers() {
		for start := 0; start < len(layer); start += MaxParallel {
			run.batch(ctx, layer[start:min(len(layer), start+MaxParallel)])
		}
	}
	res.Calls, res.States = run.calls, run.states
	for _, c := range run.calls {
		res.Usage = res.Usage.Add(c.Usage)
	}
	if !req.Output.IsNull() {
		// A delegate's sub-request with tools: its result is filled once
		// its calls are done, with what they gave.
		out, err := process.ExecuteFill(ctx, process.FillInput{Chunk: "output", System: req.System(), Prompt: req.Text(vessel.ResultsMessage(res.Calls)), Context: jsonv.NewObject(0).Value(), Schema: req.Output})
		if err != nil {
			return res, fmt.Errorf("output: %w", err)
		}
		res.Output, res.Usage = compose.Split(out.Value).Output, res.Usage.Add(out.Usage)
	}
	return res, nil
}

// decide asks the model for the request's decision; the activity checks it
// and wires its calls.
func decide(ctx workflow.Context, req *vessel.Request) (DecideOutput, error) {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: process.FillTimeout, HeartbeatTimeout: process.HeartbeatTimeout, RetryPolicy: process.FillRetry})
	var out DecideOutput
	err := workflow.ExecuteActivity(actx, DecideName, DecideInput{
		Process: workflow.GetInfo(ctx).WorkflowExecution.ID, Toolset: req.Toolset, States: req.States,
		System: req.System(), Prompt: req.Text(), MaxFanOut: req.FanOut(),
	}).Get(ctx, &out)
	return out, err
}

// requestRun is one request's calls as they run.
type requestRun struct {
	w      *Workflows
	req    *vessel.Request
	graph  *vessel.Graph
	states map[string]jsonv.Value
	calls  []vessel.CallResult
	failed []bool
	// done marks the calls that have finished, failed or were not run, for
	// the query "view".
	done []bool
}

// view is the request as far as it has run, for the query "view": what the
// workflow holds, with only the calls that have finished.
func view(req *vessel.Request, res *vessel.Result, run *requestRun) View {
	v := View{Result: *res, Instances: req.Instances}
	if run == nil || res.Calls != nil {
		// Deciding, or done: res holds it all.
		return v
	}
	v.Calls, v.States = []vessel.CallResult{}, run.states
	for i, c := range run.calls {
		if run.done[i] {
			v.Calls = append(v.Calls, c)
			v.Usage = v.Usage.Add(c.Usage)
		}
	}
	return v
}

// batch runs calls of one layer in parallel, then writes their results into
// state in call order, whatever order they came in.
func (r *requestRun) batch(ctx workflow.Context, batch []int) {
	wg := workflow.NewWaitGroup(ctx)
	for _, i := range batch {
		c := r.graph.Calls[i]
		cr := &r.calls[i]
		*cr = vessel.CallResult{Index: c.Index, Tool: c.Tool, Instance: c.Instance, Params: c.Params, Output: c.OutputString(), Result: jsonv.NullValue()}
		for _, e := range r.graph.Deps[i] {
			if r.failed[e.From] {
				cr.Error = fmt.Sprintf("not run: %s, which it waits for, failed", r.graph.Calls[e.From].Name())
				r.failed[i] = true
			}
		}
		if r.failed[i] {
			r.done[i] = true
			continue
		}
		// Parameters read the state as it is when the layer starts.
		params, err := vessel.ResolveRefs(c.Params, r.states[c.Instance])
		if err != nil {
			cr.Error = fmt.Sprintf("%s: %v", c.Name(), err)
			r.failed[i], r.done[i] = true, true
			continue
		}
		cr.Params = params
		state := r.states[c.Instance]
		wg.Add(1)
		workflow.Go(ctx, func(ctx workflow.Context) {
			defer wg.Done()
			defer func() { r.done[i] = true }()
			out, err := r.call(ctx, state, c, params, cr)
			if err != nil {
				cr.Error = fmt.Sprintf("%s: %v", c.Name(), process.ErrorText(err))
				r.failed[i] = true
				return
			}
			cr.Result = out
		})
	}
	wg.Wait(ctx)
	for _, i := range batch {
		c, cr := r.graph.Calls[i], &r.calls[i]
		if r.failed[i] || c.Output == nil {
			continue
		}
		next, err := vessel.Write(r.states[c.Instance], c.Output, cr.Result)
		if err != nil {
			cr.Error = fmt.Sprintf("%s: %v", c.Name(), err)
			r.failed[i] = true
			continue
		}
		r.states[c.Instance] = next
	}
}

// call runs one call: an instruction gives its filled value, an action
// runs as an activity, a launch starts the process as a child workflow that
// outlives the request, a delegate runs its sub-request.
func (r *requestRun) call(ctx workflow.Context, state jsonv.Value, c *vessel.Call, params jsonv.Value, cr *vessel.CallResult) (jsonv.Value, error) {
	t := r.req.Toolset.Tool(c.Tool)
	if len(c.Reads()) > 0 {
		// The decision was checked with its "†state" references as they
		// were written; now that they hold values, the parameters must
		// still fit the tool.
		if err := check(ctx, t.Schema, params, "parameters break the tool's schema"); err != nil {
			return jsonv.Value{}, err
		}
	}
	switch t.Kind {
	case vessel.Instruction:
		return compose.Split(params).Output, nil
	case vessel.Action:
		key := fmt.Sprintf("vibe:%s:call-%d", workflow.GetInfo(ctx).WorkflowExecution.ID, c.Index)
		if c.Instance != "" {
			key += ":" + c.Instance
		}
		return process.ExecuteAction(ctx, r.w.Actions, process.ActionInput{Step: c.Name(), Action: t.Action, Input: compose.Split(params).Output, Output: jsonv.NullValue(), Key: key})
	case vessel.Launch:
		return r.launch(ctx, c, t, params, cr)
	case vessel.DelegateKind:
		return r.delegate(ctx, state, c, t, compose.Split(params).Output, cr)
	}
	return jsonv.Value{}, fmt.Errorf("tool %s has an unknown kind %q", t.Name, t.Kind)
}

// check validates v against s in a local activity; what breaks it is an
// error that starts with what.
func check(ctx workflow.Context, s, v jsonv.Value, what string) error {
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: 10 * time.Second})
	var problems []schema.Invalid
	if err := workflow.ExecuteLocalActivity(lctx, process.CheckName, process.CheckInput{Schema: s, Value: v}).Get(ctx, &problems); err != nil {
		return err
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s: %w", what, &schema.ValidationError{Problems: problems})
	}
	return nil
}

// launch starts a process with its entry chunk filled by the call.
func (r *requestRun) launch(ctx workflow.Context, c *vessel.Call, t *vessel.Tool, params jsonv.Value, cr *vessel.CallResult) (jsonv.Value, error) {
	first, ok := params.Get(t.Entry)
	if !ok {
		return jsonv.Value{}, fmt.Errorf("the call has no %q: the process's entry chunk", t.Entry)
	}
	// A readable id that is the same on every replay of this request.
	id := wfid.Derived(t.ProcessName, 4, workflow.GetInfo(ctx).WorkflowExecution.ID, "/", c.Index, "/", c.Instance)
	wfName := process.WorkflowName
	if t.Program.Direct != nil {
		wfName = process.DirectCallName
	}
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:        id,
		ParentClosePolicy: enumspb.PARENT_CLOSE_POLICY_ABANDON,
		// Listed like any process: by name (vibe ps, GET /v1/processes) and
		// in Temporal's own UI.
		Memo:                  map[string]any{process.MemoProcess: t.ProcessName},
		TypedSearchAttributes: temporal.NewSearchAttributes(process.ProcessAttribute.ValueSet(t.ProcessName), process.StatusAttribute.ValueSet(string(process.Running))),
	})
	f := workflow.ExecuteChildWorkflow(cctx, wfName, process.Start{Name: t.ProcessName, Program: t.Program, Prompt: r.req.Prompt, First: first, Instance: c.Instance})
	if err := f.GetChildWorkflowExecution().Get(ctx, nil); err != nil {
		return jsonv.Value{}, fmt.Errorf("start %s: %w", t.ProcessName, err)
	}
	return jsonv.ObjectValue(
		jsonv.Member{Name: "process", Value: jsonv.StringValue(t.ProcessName)},
		jsonv.Member{Name: "id", Value: jsonv.StringValue(id)},
	), nil
}

// delegateTimeout bounds loading and assembling a delegate.
const delegateTimeout = time.Minute

// delegate runs a delegate call: the activity loads the delegate and
// prepares the isolated sub-request, which then runs as a child request
// one level deeper; its output is the call's result.
func (r *requestRun) delegate(ctx workflow.Context, state jsonv.Value, c *vessel.Call, t *vessel.Tool, params jsonv.Value, cr *vessel.CallResult) (jsonv.Value, error) {
	req := r.req
	if bound := req.MaxNesting(); req.Depth+1 > bound {
		return jsonv.Value{}, fmt.Errorf("delegating to %s would nest %d deep, over the bound of %d (%s)", t.Delegate, req.Depth+1, bound, vessel.ChainText(req.Chain, t.Delegate))
	}
	scoped, err := vessel.Scoped(t.Scopes, req.Context, state, c.Instance)
	if err != nil {
		return jsonv.Value{}, err
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: delegateTimeout, HeartbeatTimeout: process.HeartbeatTimeout, RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 3}})
	var out DelegateOutput
	if err := workflow.ExecuteActivity(actx, DelegateName, DelegateInput{Call: c, Params: params, Tool: t, Context: scoped}).Get(ctx, &out); err != nil {
		return jsonv.Value{}, err
	}
	sub := out.Request
	if err := sub.Nest(req, out.ID); err != nil {
		return jsonv.Value{}, err
	}
	cr.Run = wfid.Derived(workflow.GetInfo(ctx).WorkflowExecution.ID+"-"+wfid.Slug(out.Name, "request"), 3, workflow.GetInfo(ctx).WorkflowExecution.ID, "/", c.Index, "/", c.Instance)
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:        cr.Run,
		ParentClosePolicy: enumspb.PARENT_CLOSE_POLICY_TERMINATE,
	})
	var res vessel.Result
	if err := workflow.ExecuteChildWorkflow(cctx, WorkflowName, sub).Get(ctx, &res); err != nil {
		return jsonv.Value{}, fmt.Errorf("delegate %s: %w", out.Name, err)
	}
	cr.Usage = res.Usage
	if t.Resolve == vessel.ResolveAhead && !t.Contract.IsNull() {
		if err := check(ctx, t.Contract, res.Output, fmt.Sprintf("delegate %s: the result breaks its _output", out.Name)); err != nil {
			return jsonv.Value{}, err
		}
	}
	return res.Output, nil
}
