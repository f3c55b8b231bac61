package request

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/internal/execution"
	"github.com/augceo/vibe/internal/wfid"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/vessel"
)

// Run runs a prepared request on the engine c talks to (a worker with
// Register must poll durable.TaskQueue) and waits for its result. It
// returns the request's workflow id as well, also on failure.
func Run(ctx context.Context, c client.Client, req *vessel.Request) (*vessel.Result, string, error) {
	run, err := start(ctx, c, req)
	if err != nil {
		return nil, "", err
	}
	var res vessel.Result
	if err := run.Get(ctx, &res); err != nil {
		return nil, run.GetID(), err
	}
	merged, err := mergeParts(ctx, c, &res)
	return merged, run.GetID(), err
}

// mergeParts is a split request's result with its parts' joined in
// (vessel.MergeResults); a request that was not split is returned as it is.
func mergeParts(ctx context.Context, c client.Client, res *vessel.Result) (*vessel.Result, error) {
	if len(res.Parts) == 0 {
		return res, nil
	}
	parts := make([]*vessel.Result, len(res.Parts))
	for i, id := range res.Parts {
		var p vessel.Result
		if err := c.GetWorkflow(ctx, id, "").Get(ctx, &p); err != nil {
			return nil, fmt.Errorf("part %s: %w", id, err)
		}
		parts[i] = &p
	}
	merged := vessel.MergeResults(parts)
	merged.Parts, merged.Usage, merged.Unanswered = res.Parts, res.Usage, res.Unanswered
	return merged, nil
}

// start starts a prepared request as a top-level request: a readable id,
// its Vessel's name in the memo for listings.
func start(ctx context.Context, c client.Client, req *vessel.Request) (client.WorkflowRun, error) {
	id := wfid.New("vessel-" + wfid.Slug(req.Toolset.Vessel, "request"))
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: durable.TaskQueue, Memo: map[string]any{MemoVessel: req.Toolset.Vessel}}, WorkflowName, req)
	if err != nil {
		return nil, fmt.Errorf("start request %s: %w", id, err)
	}
	return run, nil
}

// Client starts, reads and lists Vessel requests: the counterpart of
// process.Client.
type Client struct {
	// Temporal is the SDK client of the engine (engine.Engine.Client).
	Temporal client.Client
	// Registry resolves Vessel URIs and the URIs a Vessel names.
	Registry *registry.Registry
	// Actions are the names of the registered server actions: a tool of
	// that name runs the action, and launched processes are compiled
	// against them.
	Actions []string
	// Loader loads the delegates a toolset resolves ahead of time; nil
	// means one over Registry that loads files and no URLs.
	Loader *vessel.Loader
	// MaxDepth and MaxFanOut bound delegation: what a start that asks for
	// no bound gets, and the most one may ask for. 0 means
	// vessel.DefaultMaxDepth and vessel.DefaultMaxFanOut.
	MaxDepth, MaxFanOut int
	// ModelQueue is the task queue of the model calls of the requests it
	// starts (vessel.Request.ModelQueue), as process.Client.ModelQueue is
	// of a process's: the model's of its workers, durable.AnyModelQueue
	// when they have none, "" Vibe's own queue.
	ModelQueue string
}

// StartOptions says which request to start and with what.
type StartOptions struct {
	// Vessel is a registry URI (aug:vessels/accountant) …
	Vessel string
	// … or Document an inline Vessel document, named File in errors
	// ("vessel" when empty; relative delegate paths resolve against its
	// directory), …
	Document jsonv.Value
	File     string
	// … or Toolset a Vessel's toolset, built already.
	Toolset *vessel.Toolset
	// Prompt is the person's request.
	Prompt string
	// Context is the request's messages, a JSON array: system, input,
	// state, data and plan messages. ContextFile names it in errors
	// ("context" when empty), at ContextAt within that file.
	Context     jsonv.Value
	ContextFile string
	ContextAt   jsonv.Pointer
	// Decision, when set, is run instead of asking the model:
	// {"calls": [ … ]}.
	Decision jsonv.Value
	// Plan says that the context must hold a plan message, which then runs
	// in place of a decision; a context that holds none is refused.
	Plan bool
	// MaxDepth and MaxFanOut bound the request's delegation; 0 means the
	// client's bounds, and more than the client's is refused.
	MaxDepth, MaxFanOut int
}

// Started is a started request.
type Started struct {
	ID     string // the workflow id: vessel-<name>-<8 hex digits>
	Vessel string // the Vessel's name
}

// Start builds the toolset (unless given one) with the client's registry,
// actions and loader, prepares the request — its context parsed, a plan or
// a given decision assembled and checked — and starts its workflow. A
// Vessel, context, plan or decision with problems gives every problem with
// its file and JSON path (schema.ErrorList), a Vessel URI the registry
// lacks an error that wraps registry.ErrNotFound, a start past the
// engine's payload limit a *durable.TooLargeError; in each case nothing is
// started.
func (c *Client) Start(ctx context.Context, opts StartOptions) (*Started, error) {
	ts, err := c.toolset(ctx, opts)
	if err != nil {
		return nil, err
	}
	depth, fanOut, err := c.bounds(opts)
	if err != nil {
		return nil, err
	}
	file := cmp.Or(opts.ContextFile, "context")
	msgs := opts.Context
	if msgs.IsNull() {
		msgs = jsonv.ArrayValue()
	}
	// Parsed where the context sits in its file, so that every problem
	// names its place there; NewRequest reads it on its own.
	parsed, err := vessel.ParseContext(file, opts.ContextAt, msgs)
	if err != nil {
		return nil, err
	}
	if opts.Plan || slices.ContainsFunc(parsed, func(m *vessel.Message) bool { return m.Type == vessel.PlanMessage }) {
		if _, err := vessel.AssemblePlan(file, parsed, ts); err != nil {
			return nil, err
		}
	}
	req, err := vessel.NewRequest(ts, msgs, vessel.RequestOptions{Prompt: opts.Prompt, File: file, Decision: opts.Decision, MaxDepth: depth, MaxFanOut: fanOut})
	if err != nil {
		return nil, err
	}
	req.ModelQueue = c.ModelQueue
	if err := durable.CheckPayloadSize("the request of "+ts.Vessel, req); err != nil {
		return nil, err
	}
	run, err := start(ctx, c.Temporal, req)
	if err != nil {
		return nil, err
	}
	return &Started{ID: run.GetID(), Vessel: ts.Vessel}, nil
}

// toolset is the toolset opts name: given, or built from a Vessel in the
// registry or inline.
func (c *Client) toolset(ctx context.Context, opts StartOptions) (*vessel.Toolset, error) {
	var (
		v   *vessel.Vessel
		err error
	)
	switch {
	case opts.Toolset != nil:
		return opts.Toolset, nil
	case opts.Vessel != "":
		if c.Registry == nil {
			return nil, fmt.Errorf("cannot start %s: %w", opts.Vessel, registry.ErrNoRegistry)
		}
		d, derr := c.Registry.Document(opts.Vessel)
		if derr != nil {
			return nil, derr
		}
		v, err = vessel.Parse(d.File, d.Value)
	case !opts.Document.IsNull():
		v, err = vessel.Parse(cmp.Or(opts.File, "vessel"), opts.Document)
	default:
		return nil, errors.New("nothing to start: give a Vessel URI, an inline Vessel or a toolset")
	}
	if err != nil {
		return nil, err
	}
	loader := c.Loader
	if loader == nil {
		loader = &vessel.Loader{Registry: c.Registry}
	}
	return vessel.Build(ctx, v, vessel.BuildOptions{Registry: c.Registry, Actions: c.Actions, Loader: loader})
}

// BoundError is a start that asks for more delegation than the client
// allows.
type BoundError struct {
	What         string // BoundDepth or BoundFanOut
	Asked, Bound int
}

// The bounds of a BoundError.
const (
	BoundDepth  = "depth"   // how deep delegates nest
	BoundFanOut = "fan-out" // how many delegate calls one request makes
)

func (e *BoundError) Error() string {
	return fmt.Sprintf("a delegate %s of %d is past the bound of %d here", e.What, e.Asked, e.Bound)
}

// bounds are a start's delegation bounds: its own within the client's.
func (c *Client) bounds(opts StartOptions) (depth, fanOut int, err error) {
	maxDepth := cmp.Or(max(c.MaxDepth, 0), vessel.DefaultMaxDepth)
	maxFanOut := cmp.Or(max(c.MaxFanOut, 0), vessel.DefaultMaxFanOut)
	switch {
	case opts.MaxDepth > maxDepth:
		return 0, 0, &BoundError{What: BoundDepth, Asked: opts.MaxDepth, Bound: maxDepth}
	case opts.MaxFanOut > maxFanOut:
		return 0, 0, &BoundError{What: BoundFanOut, Asked: opts.MaxFanOut, Bound: maxFanOut}
	}
	return cmp.Or(max(opts.MaxDepth, 0), maxDepth), cmp.Or(max(opts.MaxFanOut, 0), maxFanOut), nil
}

// View is a request as far as it has run, the answer of the query "view":
// the Result with only the calls that have finished (all of them once the
// request is done), and the context's instances in order.
type View struct {
	vessel.Result
	Instances []string `json:"instances,omitempty"`
}

// ErrNotFound is returned for an id that names no request.
var ErrNotFound = errors.New("no such request")

// Info is a request as the API shows it.
type Info struct {
	ID     string         `json:"id"`
	Vessel string         `json:"vessel"`
	Status durable.Status `json:"status"` // running, completed or failed
	// Decision is the model's decision (or the plan's calls, or the given
	// decision) as written; null while the model decides.
	Decision jsonv.Value `json:"decision"`
	// Calls are the calls that have finished, each with its result or
	// error, and the run of a delegated call.
	Calls []vessel.CallResult `json:"calls"`
	// States holds each instance's state, in the context's order, after
	// the global one ("") when it has any.
	States jsonv.Value `json:"states"`
	// Output is the request's result when it has an output schema (a
	// delegate's sub-request).
	Output jsonv.Value `json:"output,omitzero"`
	// Usage totals the request's model calls, its delegates' included.
	Usage llm.Usage `json:"usage"`
	// Replayed is true when the decision came from a recording.
	Replayed bool `json:"replayed,omitempty"`
	// FollowUps, Repairs, Replaced and Unanswered are the Result's: the
	// decisions that asked again for unanswered instances or replaced
	// failed calls, the calls they replaced, the instances still without a
	// call.
	FollowUps  []jsonv.Value       `json:"followUps,omitempty"`
	Repairs    []jsonv.Value       `json:"repairs,omitempty"`
	Replaced   []vessel.CallResult `json:"replaced,omitempty"`
	Unanswered []string            `json:"unanswered,omitempty"`
	// Parts are the requests a request with more instances than one
	// decision covers was split into; their calls and states are this one's.
	Parts []string `json:"parts,omitempty"`
	// Error says why the request failed; null while it has not.
	Error     *string   `json:"error"`
	StartedAt time.Time `json:"startedAt"`
}

// Get returns a request as far as it has run, read from its workflow with
// the query "view" (which also works once the workflow has closed). A
// delegate call's run is a request too.
func (c *Client) Get(ctx context.Context, id string) (*Info, error) {
	ex, err := execution.Describe(ctx, c.Temporal, id, ErrNotFound, WorkflowName)
	if err != nil {
		return nil, err
	}
	info := &Info{ID: id, Vessel: memoVessel(ex.GetMemo()), Status: statusOf(ex.GetStatus()), StartedAt: ex.GetStartTime().AsTime()}
	var v View
	resp, err := durable.Query(ctx, c.Temporal, id, QueryView)
	if err == nil {
		err = resp.Get(&v)
	}
	if err != nil {
		return nil, fmt.Errorf("read request %s: %w", id, err)
	}
	switch ex.GetStatus() {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
	case enumspb.WORKFLOW_EXECUTION_STATUS_FAILED:
		msg := "the request failed"
		if err := c.Temporal.GetWorkflow(ctx, id, "").Get(ctx, nil); err != nil {
			msg = durable.ErrorText(err)
		}
		info.Error = &msg
	default: // terminated, cancelled, timed out from outside
		msg := "the workflow was " + strings.ToLower(strings.TrimPrefix(ex.GetStatus().String(), "WORKFLOW_EXECUTION_STATUS_"))
		info.Error = &msg
	}
	if len(v.Parts) > 0 {
		if v, err = c.joinParts(ctx, v); err != nil {
			return nil, err
		}
	}
	info.Decision, info.Output, info.Usage, info.Replayed = v.Decision, v.Output, v.Usage, v.Replayed
	info.FollowUps, info.Repairs, info.Replaced, info.Unanswered, info.Parts = v.FollowUps, v.Repairs, v.Replaced, v.Unanswered, v.Parts
	info.Calls = v.Calls
	if info.Calls == nil {
		info.Calls = []vessel.CallResult{}
	}
	info.States = States(v.States, v.Instances)
	return info, nil
}

// joinParts is a split request's view with its parts' — as far as each
// has run — joined in (vessel.MergeResults): their calls in the parts'
// order, which is the decision's, and each instance's state as its part
// wrote it.
func (c *Client) joinParts(ctx context.Context, v View) (View, error) {
	parts := make([]*vessel.Result, len(v.Parts))
	var instances []string
	for i, id := range v.Parts {
		resp, err := durable.Query(ctx, c.Temporal, id, QueryView)
		var pv View
		if err == nil {
			err = resp.Get(&pv)
		}
		if err != nil {
			// A part not started yet has nothing to show.
			pv = View{Result: vessel.Result{States: map[string]jsonv.Value{}}}
		}
		parts[i] = &pv.Result
		instances = append(instances, pv.Instances...)
	}
	// The parts' usage and unanswered instances, as far as each has run:
	// the request's own are theirs, summed once every part has ended.
	merged := vessel.MergeResults(parts)
	merged.Parts, merged.Replayed = v.Parts, v.Replayed || merged.Replayed
	return View{Result: *merged, Instances: instances}, nil
}

// States orders a request's states as it shows them: the global one ("")
// when it has any, then each instance's in the context's order.
func States(states map[string]jsonv.Value, instances []string) jsonv.Value {
	o := jsonv.NewObject(len(instances) + 1)
	if g, ok := states[""]; ok && g.Len() > 0 {
		o.Set("", g)
	}
	for _, m := range instances {
		o.Set(m, states[m])
	}
	return o.Value()
}

// memoVessel reads the Vessel's name from a request's memo.
func memoVessel(m *commonpb.Memo) string {
	var name string
	if p := m.GetFields()[MemoVessel]; p != nil {
		_ = converter.GetDefaultDataConverter().FromPayload(p, &name)
	}
	return name
}

func statusOf(s enumspb.WorkflowExecutionStatus) durable.Status {
	switch s {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		return durable.Running
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		return durable.Completed
	}
	return durable.Failed
}

// ListOptions says which page of requests List returns: as process's.
type ListOptions = durable.ListOptions

// Summary is a request in a list.
type Summary struct {
	ID        string         `json:"id"`
	Vessel    string         `json:"vessel"`
	Status    durable.Status `json:"status"`
	StartedAt time.Time      `json:"startedAt"`
	EndedAt   *time.Time     `json:"endedAt,omitempty"` // nil while it runs
}

// Page is one page of requests, newest first.
type Page struct {
	Requests []Summary
	// Next is the cursor of the page after this one, or "" when this is
	// the last.
	Next string
}

// listQuery matches the requests started from outside: a delegate's
// sub-request, a child of its request, is shown in its call (run).
var listQuery = fmt.Sprintf("WorkflowType = '%s' AND ParentWorkflowId IS NULL", WorkflowName)

// List returns a page of requests, newest first; a cursor it did not give
// is refused with an error that wraps durable.ErrBadCursor. Of opts'
// filters it takes Status (running, completed or failed; a request waits
// for no person), Since and Before; not Process.
func (c *Client) List(ctx context.Context, opts ListOptions) (Page, error) {
	query := listQuery
	switch opts.Status {
	case "":
	case durable.Running:
		query += " AND ExecutionStatus = 'Running'"
	case durable.Completed:
		query += " AND ExecutionStatus = 'Completed'"
	case durable.Failed:
		query += " AND ExecutionStatus != 'Running' AND ExecutionStatus != 'Completed'"
	default:
		return Page{}, fmt.Errorf("list requests: no status %q (want running, completed or failed)", opts.Status)
	}
	execs, next, err := durable.ListExecutions(ctx, c.Temporal, "requests", query+durable.TimeQuery(opts), opts)
	if err != nil {
		return Page{}, err
	}
	page := Page{Requests: make([]Summary, len(execs)), Next: next}
	for i, ex := range execs {
		page.Requests[i] = Summary{ID: ex.GetExecution().GetWorkflowId(), Vessel: memoVessel(ex.GetMemo()), Status: statusOf(ex.GetStatus()), StartedAt: ex.GetStartTime().AsTime()}
		if ex.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING && ex.GetCloseTime() != nil {
			end := ex.GetCloseTime().AsTime()
			page.Requests[i].EndedAt = &end
		}
	}
	return page, nil
}
