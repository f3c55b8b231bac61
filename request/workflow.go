package request

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/compose"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/internal/wfid"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
	"github.com/augceo/vibe/vessel"
)

// MaxParallel bounds the calls of one layer that run at once.
const MaxParallel = 16

// Workflows holds the Vessel workflow; it needs the worker's actions only
// for their retry policies and timeouts.
type Workflows struct {
	Actions *action.Registry
}

// Request runs a Vessel request durably: the model decides (an activity)
// unless the request brings its calls (a plan, a given decision); the
// calls run layer by layer, independent ones in parallel, each instance's
// results written into its state in call order; actions are activities,
// launches and delegates child workflows, so nothing finished runs again
// after a restart. A delegate's sub-request with tools then has the model
// fill its output with the calls' results in view.
//
// When the model decides: a request with more instances than one decision
// covers is split into parts, each a request of its own (a child
// workflow), decided in parallel; a decision that leaves instances without
// a call is followed by one that asks for those (Toolset.FollowUps); and a
// call whose parameters break its tool once its "†state" references hold
// values is replaced by a repair decision (MaxRepairRounds), the calls
// that ran not run again.
func (w *Workflows) Request(ctx workflow.Context, req vessel.Request) (vessel.Result, error) {
	res := vessel.Result{States: req.States}
	var run *requestRun // set once the calls are known
	if err := workflow.SetQueryHandler(ctx, QueryView, func() (View, error) { return view(&req, &res, run), nil }); err != nil {
		return res, err
	}
	res.Decision = req.Decision
	decided := false
	graph := req.Calls
	switch {
	case graph != nil:
	case len(req.Toolset.Tools) == 0:
		// A request without tools — a delegate's sub-request — is one model
		// call that fills its output.
		out, err := durable.ExecuteFill(ctx, durable.FillInput{Chunk: "output", System: req.OutputSystem(), Prompt: req.Text(), Context: jsonv.NewObject(0).Value(), Schema: req.Output,
			Queue: req.ModelQueue})
		if err != nil {
			return res, fmt.Errorf("output: %w", err)
		}
		res.Output, res.Usage, res.Replayed = out.Parts().Output, out.Usage, out.Replayed
		return res, nil
	default:
		if parts := req.Split(); len(parts) > 1 {
			// res is the query's: it lists each part as it starts, and the
			// readers join the parts' calls and states (Client.Get).
			err := w.parts(ctx, parts, &res)
			return res, err
		}
		var err error
		if graph, err = decideAll(ctx, &req, &res); err != nil {
			return res, err
		}
		decided = true
	}

	run = &requestRun{w: w, req: &req, states: req.States}
	run.exec(ctx, graph)
	if decided {
		if err := repair(ctx, &req, run, &res); err != nil {
			return res, err
		}
	}
	for i, c := range run.calls {
		if run.replaced[i] {
			res.Replaced = append(res.Replaced, c)
		} else {
			res.Calls = append(res.Calls, c)
		}
		res.Usage = res.Usage.Add(c.Usage)
	}
	res.States = run.states
	if !req.Output.IsNull() {
		// A delegate's sub-request with tools: its result is filled once
		// its calls are done, with what they gave.
		out, err := durable.ExecuteFill(ctx, durable.FillInput{Chunk: "output", System: req.OutputSystem(), Prompt: req.Text(vessel.ResultsMessage(res.Calls)), Context: jsonv.NewObject(0).Value(), Schema: req.Output,
			Queue: req.ModelQueue})
		if err != nil {
			return res, fmt.Errorf("output: %w", err)
		}
		res.Output, res.Usage = out.Parts().Output, res.Usage.Add(out.Usage)
	}
	return res, nil
}

// MaxRepairRounds bounds the repair decisions of a request: each replaces
// the calls whose parameters broke their tool once their references held
// values.
const MaxRepairRounds = 2

// MaxParallelParts bounds the parts of a split request decided at once.
const MaxParallelParts = 8

// decide asks the model for a decision under rules, with prompt; the
// activity checks it — what breaks the rules goes back to the model as a
// repair turn — and wires its calls. A call of a looping tool (Tool.Loop)
// that the model did not mark done is asked again, with its previous
// attempt, as a process's looping chunk is, up to the loop's maximum; the
// decision keeps the last attempt.
func decide(ctx workflow.Context, req *vessel.Request, rules vessel.DecisionRules, prompt string, states map[string]jsonv.Value) (DecideOutput, error) {
	opts := durable.FillOptions()
	opts.TaskQueue = req.ModelQueue // "" for a request from before model calls were routed
	actx := workflow.WithActivityOptions(ctx, opts)
	in := DecideInput{
		Process: workflow.GetInfo(ctx).WorkflowExecution.ID, Toolset: req.Toolset, States: states,
		System: req.System(), Prompt: prompt, Rules: rules,
	}
	var out DecideOutput
	if err := workflow.ExecuteActivity(actx, DecideName, in).Get(ctx, &out); err != nil {
		return out, err
	}
	for i := range out.Calls.Calls {
		t := req.Toolset.Tool(out.Calls.Calls[i].Tool)
		if t == nil || t.Loop == nil {
			continue
		}
		for attempt := 2; attempt <= t.Loop.Max && !vessel.LoopDone(out.Decision.Lookup("calls").Array()[i], t); attempt++ {
			in.Again = &Again{Decision: out.Decision, Call: i, Attempt: attempt, Max: t.Loop.Max}
			var next DecideOutput
			if err := workflow.ExecuteActivity(actx, DecideName, in).Get(ctx, &next); err != nil {
				return out, fmt.Errorf("%s, attempt %d of at most %d: %w", out.Calls.Calls[i].Name(), attempt, t.Loop.Max, err)
			}
			next.Usage, next.Replayed = out.Usage.Add(next.Usage), out.Replayed || next.Replayed
			out = next
		}
	}
	return out, nil
}

// decideAll has the model decide for every instance: the decision, then
// follow-ups for the instances it left without a call, at most
// Toolset.FollowUps of them.
func decideAll(ctx workflow.Context, req *vessel.Request, res *vessel.Result) (*vessel.Graph, error) {
	rules := req.Rules()
	d, err := decide(ctx, req, rules, req.Text(), req.States)
	if err != nil {
		return nil, fmt.Errorf("decision: %w", err)
	}
	res.Decision, res.Usage, res.Replayed = d.Decision, d.Usage, d.Replayed
	calls := d.Calls.Calls
	for range req.Toolset.FollowUps {
		missing := vessel.Unanswered(req.Instances, calls)
		if len(missing) == 0 {
			break
		}
		follow := rules
		follow.Instances, follow.Global = missing, false
		d, err := decide(ctx, req, follow, req.Text()+"\n\n"+vessel.FollowUp(missing), req.States)
		if err != nil {
			// The calls decided stand; the instances stay unanswered.
			workflow.GetLogger(ctx).Warn("follow-up decision failed", "instances", len(missing), "error", durable.ErrorText(err))
			break
		}
		res.FollowUps, res.Usage = append(res.FollowUps, d.Decision), res.Usage.Add(d.Usage)
		if len(d.Calls.Calls) == 0 {
			break // the model says they need nothing: asking again would not change it
		}
		calls = append(calls, vessel.Renumber(d.Calls.Calls, len(calls))...)
	}
	res.Unanswered = vessel.Unanswered(req.Instances, calls)
	return vessel.NewGraph(calls), nil
}

// repair replaces the calls whose parameters broke their tool once their
// "†state" references held values: the model sees what ran and what
// failed, and decides the replacements, which run then; the calls that ran
// are not run again.
func repair(ctx workflow.Context, req *vessel.Request, run *requestRun, res *vessel.Result) error {
	for range MaxRepairRounds {
		var failed []int
		for i := range run.calls {
			if run.repairable[i] && !run.replaced[i] {
				failed = append(failed, i)
			}
		}
		if len(failed) == 0 {
			return nil
		}
		rules := req.Rules()
		rules.Instances, rules.Global = nil, false
		var lines []string
		for _, i := range failed {
			c := run.calls[i]
			if c.Instance == "" {
				rules.Global = true
			} else if !slices.Contains(rules.Instances, c.Instance) {
				rules.Instances = append(rules.Instances, c.Instance)
			}
			lines = append(lines, "- "+c.Error)
			run.replaced[i] = true
		}
		prompt := req.Text(vessel.ResultsMessage(run.calls)) + "\n\n" + vessel.RepairText(lines)
		d, err := decide(ctx, req, rules, prompt, run.states)
		if err != nil {
			return fmt.Errorf("repair decision: %w", err)
		}
		res.Repairs, res.Usage = append(res.Repairs, d.Decision), res.Usage.Add(d.Usage)
		run.exec(ctx, vessel.NewGraph(vessel.Renumber(d.Calls.Calls, len(run.calls))))
	}
	return nil
}

// parts runs a split request's parts as requests of their own, at most
// MaxParallelParts at once; res lists each as it starts (Result.Parts),
// and takes their usage and unanswered instances once they end. Their
// calls and states stay theirs: each instance is in one part, and only the
// first may make global calls, so no two parts write one state.
func (w *Workflows) parts(ctx workflow.Context, parts []*vessel.Request, res *vessel.Result) error {
	id := workflow.GetInfo(ctx).WorkflowExecution.ID
	results := make([]vessel.Result, len(parts))
	errs := make([]error, len(parts))
	res.States = nil
	for start := 0; start < len(parts); start += MaxParallelParts {
		wg := workflow.NewWaitGroup(ctx)
		for i := start; i < min(len(parts), start+MaxParallelParts); i++ {
			pid := fmt.Sprintf("%s-part-%d", id, i+1)
			res.Parts = append(res.Parts, pid)
			cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowID: pid, ParentClosePolicy: enumspb.PARENT_CLOSE_POLICY_TERMINATE})
			wg.Add(1)
			workflow.Go(ctx, func(ctx workflow.Context) {
				defer wg.Done()
				errs[i] = workflow.ExecuteChildWorkflow(cctx, WorkflowName, parts[i]).Get(ctx, &results[i])
			})
		}
		wg.Wait(ctx)
	}
	var failed []string
	for i, r := range results {
		if errs[i] != nil {
			failed = append(failed, fmt.Sprintf("%s: %s", res.Parts[i], durable.ErrorText(errs[i])))
			continue
		}
		res.Usage = res.Usage.Add(r.Usage)
		res.Unanswered = append(res.Unanswered, r.Unanswered...)
		res.Replayed = res.Replayed || r.Replayed
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d parts failed: %s", len(failed), len(parts), strings.Join(failed, "; "))
	}
	return nil
}

// requestRun is one request's calls as they run.
type requestRun struct {
	w      *Workflows
	req    *vessel.Request
	states map[string]jsonv.Value
	calls  []vessel.CallResult
	failed []bool
	// skipped marks the calls of a plan whose condition did not hold, or
	// that read a variable only skipped calls write.
	skipped []bool
	// done marks the calls that have finished, failed or were not run, for
	// the query "view"; repairable those whose parameters broke their tool
	// once their references held values, and replaced those a repair
	// decision replaced.
	done, repairable, replaced []bool
}

// exec runs g's calls (numbered from len(r.calls)) layer by layer.
func (r *requestRun) exec(ctx workflow.Context, g *vessel.Graph) {
	base := len(r.calls)
	n := len(g.Calls)
	r.calls = append(r.calls, make([]vessel.CallResult, n)...)
	r.failed = append(r.failed, make([]bool, n)...)
	r.skipped = append(r.skipped, make([]bool, n)...)
	r.done = append(r.done, make([]bool, n)...)
	r.repairable = append(r.repairable, make([]bool, n)...)
	r.replaced = append(r.replaced, make([]bool, n)...)
	for _, layer := range g.Layers() {
		for start := 0; start < len(layer); start += MaxParallel {
			r.batch(ctx, g, base, layer[start:min(len(layer), start+MaxParallel)])
		}
	}
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

// paramsError is a call's parameters that broke its tool once its
// references held values: a repair decision replaces the call.
type paramsError struct{ err error }

func (e *paramsError) Error() string { return e.err.Error() }
func (e *paramsError) Unwrap() error { return e.err }

// batch runs calls of one layer of g (numbered from base) in parallel,
// then writes their results into state in call order, whatever order they
// came in.
func (r *requestRun) batch(ctx workflow.Context, g *vessel.Graph, base int, batch []int) {
	wg := workflow.NewWaitGroup(ctx)
	for _, j := range batch {
		i := base + j
		c := g.Calls[j]
		cr := &r.calls[i]
		*cr = vessel.CallResult{Index: c.Index, Tool: c.Tool, Instance: c.Instance, Params: c.Params, Output: c.OutputString(), Result: jsonv.NullValue()}
		for _, e := range g.Deps[j] {
			if r.failed[base+e.From] {
				cr.Error = fmt.Sprintf("not run: %s, which it waits for, failed", g.Calls[e.From].Name())
				r.failed[i] = true
			}
		}
		if r.failed[i] {
			r.done[i] = true
			continue
		}
		skipped, err := r.skip(ctx, g, base, j)
		if err != nil {
			cr.Error = fmt.Sprintf("%s: its condition could not be checked: %v", c.Name(), durable.ErrorText(err))
			r.failed[i], r.done[i] = true, true
			continue
		}
		if cr.Skipped = skipped; skipped != "" {
			r.skipped[i], r.done[i] = true, true
			continue
		}
		// Parameters read the state as it is when the layer starts.
		params, err := vessel.ResolveRefs(c.Params, r.states[c.Instance])
		if err != nil {
			cr.Error = fmt.Sprintf("%s: %v", c.Name(), err)
			r.failed[i], r.done[i], r.repairable[i] = true, true, true
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
				cr.Error = fmt.Sprintf("%s: %v", c.Name(), durable.ErrorText(err))
				r.failed[i] = true
				var pe *paramsError
				r.repairable[i] = errors.As(err, &pe)
				return
			}
			cr.Result = out
		})
	}
	wg.Wait(ctx)
	for _, j := range batch {
		i := base + j
		c, cr := g.Calls[j], &r.calls[i]
		if r.failed[i] || r.skipped[i] || c.Output == nil {
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

// skip says why call j of g (numbered from base) is not to run, or "" when
// it runs. A call is skipped when a variable it reads (a parameter's or its
// condition's) is unset and a call that writes it was skipped — the branch
// not taken is followed by what depends on it, while a call with another
// writer that ran has its value and runs — or when its condition does not
// hold on the state as the layer starts.
func (r *requestRun) skip(ctx workflow.Context, g *vessel.Graph, base, j int) (string, error) {
	c := g.Calls[j]
	state := r.states[c.Instance]
	for _, read := range c.StateReads() {
		if _, err := vessel.ReadState(state, read.Path); err == nil {
			continue
		}
		for _, e := range g.Deps[j] {
			if w := g.Calls[e.From]; r.skipped[base+e.From] && w.Output != nil && vessel.Overlap(w.Output, read.Path) {
				return fmt.Sprintf("state.%s is not set: %s, which writes it, was skipped", strings.Join(read.Path, "."), w.Name()), nil
			}
		}
	}
	if c.If == nil {
		return "", nil
	}
	v, err := vessel.ReadState(state, c.If.State)
	if err != nil || v.IsNull() {
		return fmt.Sprintf("the condition %s does not hold: state.%s holds no value", c.If, strings.Join(c.If.State, ".")), nil
	}
	switch {
	case c.If.Equals != nil:
		if !jsonv.Equal(v, *c.If.Equals) {
			return fmt.Sprintf("the condition %s does not hold: it is %s", c.If, jsonv.Marshal(v)), nil
		}
	case !c.If.Matches.IsNull():
		err := check(ctx, c.If.Matches, v, "it does not match")
		var invalid *schema.ValidationError
		switch {
		case errors.As(err, &invalid):
			return fmt.Sprintf("the condition %s does not hold: %v", c.If, err), nil
		case err != nil:
			return "", err
		}
	}
	return "", nil
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
		if err := check(ctx, t.ParamsSchema(), params, "parameters break the tool's schema"); err != nil {
			return jsonv.Value{}, &paramsError{err}
		}
		if err := checkEntry(ctx, t, params); err != nil {
			return jsonv.Value{}, &paramsError{err}
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
		in := durable.ActionInput{Step: c.Name(), Action: t.Action, Input: compose.Split(params).Output, Output: jsonv.NullValue(), Key: key}
		// The tool's action is a registered one (the toolset was built
		// against the starter's actions): its calls wait on its queue for
		// a worker that has it. A request from before they were routed
		// replays on the request's own queue.
		if workflow.GetVersion(ctx, durable.ToolActionQueueChange, workflow.DefaultVersion, 1) != workflow.DefaultVersion {
			in.Queue = durable.ActionQueue(t.Action)
		}
		return durable.ExecuteAction(ctx, r.w.Actions, in)
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
	problems, err := durable.Check(ctx, s, v)
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s: %w", what, &schema.ValidationError{Problems: problems})
	}
	return nil
}

// checkEntry checks a launch call's entry chunk, its references resolved,
// against the chunk of the process it fills — what vessel.CheckLaunch
// checks of a decision before its references hold values.
func checkEntry(ctx workflow.Context, t *vessel.Tool, params jsonv.Value) error {
	if t.Kind != vessel.Launch || t.Program == nil {
		return nil
	}
	first, ok := params.Get(t.Entry)
	ch := t.Program.FirstChunk()
	if !ok || ch == nil {
		return nil
	}
	problems, err := durable.Check(ctx, ch.Schema, first)
	if err != nil {
		return err
	}
	if problems = append(problems, ch.MissingSteps(first, problems)...); len(problems) > 0 {
		for i := range problems {
			problems[i].Path = jsonv.PointerTo(t.Entry) + problems[i].Path
		}
		return fmt.Errorf("the entry chunk does not fit process %s's %s: %w", t.ProcessName, ch.Name, &schema.ValidationError{Problems: problems})
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
	wfName := durable.ProcessWorkflow
	if t.Program.Direct != nil {
		wfName = durable.DirectCallWorkflow
	}
	cctx := workflow.WithChildOptions(ctx, durable.LaunchOptions(id, t.ProcessName))
	// Its model calls go where the request's do.
	start := durable.Start{Name: t.ProcessName, Program: t.Program, Prompt: r.req.Prompt, First: first, Instance: c.Instance, ModelQueue: r.req.ModelQueue}
	// The process's actions wait on their queues for a worker that has
	// them, as those of a process a client starts do; one launched by a
	// request from before they were routed runs them on its own queue.
	if workflow.GetVersion(ctx, durable.ToolActionQueueChange, workflow.DefaultVersion, 1) != workflow.DefaultVersion {
		// The toolset compiled the process against the starter's actions:
		// each step that runs one names it, and a step that names none
		// runs on the process's own queue.
		start.ActionQueues = durable.ActionQueues(t.Program, nil)
	}
	f := workflow.ExecuteChildWorkflow(cctx, wfName, start)
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
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: delegateTimeout, HeartbeatTimeout: durable.HeartbeatTimeout, RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 3}})
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
