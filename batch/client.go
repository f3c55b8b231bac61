package batch

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/internal/execution"
	"github.com/augceo/vibe/internal/watch"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/process"
)

// Client runs batches and reads them.
type Client struct {
	// Processes compiles the process a batch runs (its Registry, Actions
	// and Registered) and reads its items; its Temporal client is the
	// engine's.
	Processes *process.Client
	// Calibrations, when set, give the K calibrated for a chunk on the
	// worker's model (package calibrate's Store), which Run takes for
	// --batch-size auto.
	Calibrations Calibrations
	// OutputLimit is the most tokens one answer of the worker's model may
	// have (llm.Models), which K answers of a chunk must fit; 0 means
	// DefaultOutputTokens.
	OutputLimit int
	// Limiter, when set, is the worker's limiter of model calls, on this
	// machine: Run plans its groups in flight for as many calls as it
	// lets run at once, and its summary says what it did.
	Limiter *llm.Limiter
	// Held, when set, says why the engine holds every running batch's
	// work, nil when it does not: the disk-space guard's error while the
	// data directory's disk is full (engine.Engine.Space). Status shows a
	// running batch then as StatusHeld, with the reason, and as running
	// again once space is freed.
	Held func() error
}

func (c *Client) temporal() client.Client { return c.Processes.Temporal }

// ErrNotFound is returned for an id that names no batch.
var ErrNotFound = errors.New("no such batch")

// Status reads what a batch has done so far. A running batch whose work
// the engine holds (Held) is StatusHeld, Status.Held saying why.
func (c *Client) Status(ctx context.Context, id string) (*Status, error) {
	st, err := c.status(ctx, id)
	if err != nil || st.Status != StatusRunning || c.Held == nil {
		return st, err
	}
	if err := c.Held(); err != nil {
		st.Status, st.Held = StatusHeld, err.Error()
	}
	return st, nil
}

// status reads what a batch has done so far, as its record says it: a
// held batch is running.
func (c *Client) status(ctx context.Context, id string) (*Status, error) {
	st, err := c.record(ctx, id)
	if err != nil {
		return nil, err
	}
	if st.Status == StatusRunning {
		// What cannot be read counts none: the status is shown without it.
		ids, _ := c.waiting(ctx, id)
		st.Waiting = len(ids)
	}
	if st.Provider != nil { // the record says the batch has provider batches
		if ps := c.provider(ctx, id); ps != nil {
			st.Provider = ps
		}
	}
	return st, nil
}

// record is the status batch id's record keeps, without asking its groups
// which items wait or its provider batches how they stand.
func (c *Client) record(ctx context.Context, id string) (*Status, error) {
	ex, err := execution.Describe(ctx, c.temporal(), id, ErrNotFound, BatchName)
	if err != nil {
		return nil, err
	}
	var st Status
	switch ex.GetStatus() {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		v, err := durable.Query(ctx, c.temporal(), id, QueryStatus)
		if err != nil {
			return nil, fmt.Errorf("read batch %s: %w", id, err)
		}
		if err := v.Get(&st); err != nil {
			return nil, fmt.Errorf("read batch %s: %w", id, err)
		}
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		if err := c.temporal().GetWorkflow(ctx, id, "").Get(ctx, &st); err != nil {
			return nil, fmt.Errorf("read batch %s: %w", id, err)
		}
	default:
		st = Status{ID: id, Status: "canceled", StartedAt: ex.GetStartTime().AsTime()}
	}
	return &st, nil
}

// Waiting returns the ids of the items of batch id that wait for a
// person, group by group: its items are data in their groups' workflows,
// so each running group is asked (QueryWaiting). A group that cannot be
// asked is left out, and its error returned with the others' ids; an id
// that names no batch is ErrNotFound.
func (c *Client) Waiting(ctx context.Context, id string) ([]string, error) {
	if _, err := execution.Describe(ctx, c.temporal(), id, ErrNotFound, BatchName); err != nil {
		return nil, err
	}
	return c.waiting(ctx, id)
}

// waiting is Waiting of a batch known to exist.
func (c *Client) waiting(ctx context.Context, id string) ([]string, error) {
	var (
		ids  []string
		errs []error
	)
	err := c.runningGroups(ctx, id, func(wid string) {
		v, err := durable.Query(ctx, c.temporal(), wid, QueryWaiting)
		var some []string
		if err == nil {
			err = v.Get(&some)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("ask group %s: %w", wid, err))
			return
		}
		ids = append(ids, some...)
	})
	if err != nil {
		errs = append(errs, fmt.Errorf("list the groups of batch %s: %w", id, err))
	}
	return ids, errors.Join(errs...)
}

// runningGroups calls f with the workflow id of each running group of
// batch id, as the engine's visibility store lists them.
func (c *Client) runningGroups(ctx context.Context, id string, f func(wid string)) error {
	query := fmt.Sprintf("%s = '%s' AND WorkflowType = '%s' AND ExecutionStatus = 'Running'", durable.BatchAttribute.GetName(), id, GroupName)
	for next := []byte(nil); ; {
		resp, err := c.temporal().ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{NextPageToken: next, Query: query})
		if err != nil {
			return err
		}
		for _, e := range resp.GetExecutions() {
			f(e.GetExecution().GetWorkflowId())
		}
		if next = resp.GetNextPageToken(); len(next) == 0 {
			return nil
		}
	}
}

// provider is the state of batch id's provider batches, nil when it has
// none (or they cannot be read: the status is shown without them).
func (c *Client) provider(ctx context.Context, id string) *ProviderState {
	ex, err := execution.Describe(ctx, c.temporal(), ProviderID(id), ErrNotFound, ProviderName)
	if err != nil {
		return nil
	}
	var ps ProviderState
	switch ex.GetStatus() {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		v, err := durable.Query(ctx, c.temporal(), ProviderID(id), QueryProvider)
		if err != nil || v.Get(&ps) != nil {
			return nil
		}
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		if c.temporal().GetWorkflow(ctx, ProviderID(id), "").Get(ctx, &ps) != nil {
			return nil
		}
	default:
		return nil
	}
	return &ps
}

// Cancel cancels batch id: its groups (their items fail as cancelled),
// its provider batches (each one the provider still runs is cancelled
// there, CancelBatch), and its record — last, once the groups have ended
// (or CancelWait has passed), so that it counts what they did and spent
// to the end. A batch that already finished is no error.
func (c *Client) Cancel(ctx context.Context, id string) error {
	if _, err := execution.Describe(ctx, c.temporal(), id, ErrNotFound, BatchName); err != nil {
		return err
	}
	var errs []error
	cancel := func(wid string) {
		err := c.temporal().CancelWorkflow(ctx, wid, "")
		if err != nil && !execution.IsNotFound(err) && !isDone(err) {
			errs = append(errs, fmt.Errorf("cancel %s: %w", wid, err))
		}
	}
	cancel(ProviderID(id))
	var groups []string
	if err := c.runningGroups(ctx, id, func(wid string) { groups = append(groups, wid); cancel(wid) }); err != nil {
		return fmt.Errorf("cancel batch %s: list its groups: %w", id, err)
	}
	c.awaitEnded(ctx, groups)
	cancel(id)
	// A group that started while the others ended reported to a record
	// that still ran: it is cancelled too.
	if err := c.runningGroups(ctx, id, cancel); err != nil {
		return fmt.Errorf("cancel batch %s: list its groups: %w", id, err)
	}
	return errors.Join(errs...)
}

// CancelWait bounds how long Cancel waits for a batch's cancelled groups
// to end: a fill in flight says what it spent at its next heartbeat.
var CancelWait = 30 * time.Second

// awaitEnded waits until the workflows ids are no longer running, or
// CancelWait has passed.
func (c *Client) awaitEnded(ctx context.Context, ids []string) {
	ctx, cancel := context.WithTimeout(ctx, CancelWait)
	defer cancel()
	for _, id := range ids {
		for ctx.Err() == nil {
			desc, err := c.temporal().DescribeWorkflowExecution(ctx, id, "")
			if err != nil || desc.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
				break
			}
			t := time.NewTimer(50 * time.Millisecond)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
		}
	}
}

// isDone reports whether err says the workflow already finished.
func isDone(err error) bool {
	var done *serviceerror.NotFound
	return errors.As(err, &done) || strings.Contains(err.Error(), "already completed")
}

// List returns a page of batches, newest first, with their status.
func (c *Client) List(ctx context.Context, opts durable.ListOptions) ([]Status, string, error) {
	execs, next, err := durable.ListExecutions(ctx, c.temporal(), "batches", fmt.Sprintf("WorkflowType = '%s'", BatchName), opts)
	if err != nil {
		return nil, "", err
	}
	out := make([]Status, 0, len(execs))
	for _, ex := range execs {
		st, err := c.Status(ctx, ex.GetExecution().GetWorkflowId())
		if err != nil {
			return nil, "", err
		}
		out = append(out, *st)
	}
	return out, next, nil
}

// ResultsOptions says which results to read.
type ResultsOptions struct {
	// After skips the lines up to and including it.
	After int
	// Poll is how often the batch is read while the next group has not
	// started (the group is looked for when the batch has changed); 0
	// means a second.
	Poll time.Duration
	// Ready reads only what is there: the groups that have finished, up to
	// the first that has not, without waiting.
	Ready bool
}

// Results reads a batch's result lines in input order, waiting for
// groups still running, until the last group of an ended batch or ctx's
// end.
func (c *Client) Results(ctx context.Context, id string, opts ResultsOptions, emit func(Result) error) error {
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	st, err := c.record(ctx, id)
	if err != nil {
		return err
	}
	if st.Kind == KindReplay {
		return fmt.Errorf("%s is a replay: its report is what vibe replay wrote (--out), or POST /v1/replays answered; it has no result lines", id)
	}
	for g := 0; ; {
		if opts.Ready {
			desc, err := c.temporal().DescribeWorkflowExecution(ctx, GroupID(id, g), "")
			if err != nil || desc.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
				return nil
			}
		}
		var res GroupResult
		err := c.temporal().GetWorkflow(ctx, GroupID(id, g), "").Get(ctx, &res)
		switch {
		case execution.IsNotFound(err):
			started, err := c.awaitGroup(ctx, id, g, opts.Poll)
			if err != nil || !started {
				return err
			}
			continue
		case err != nil:
			return fmt.Errorf("read group %s: %w", GroupID(id, g), err)
		}
		for _, r := range res.Results {
			if r.Line <= opts.After {
				continue
			}
			r, err := c.complete(ctx, r, nil)
			if err == nil {
				err = emit(r)
			}
			if err != nil {
				return err
			}
		}
		g++
	}
}

// awaitGroup waits until group g of batch id has started, and reports
// false when the batch ended without it. Each group tells its batch when
// it starts, so the group is looked for again each time the batch's
// status has changed.
func (c *Client) awaitGroup(ctx context.Context, id string, g int, poll time.Duration) (bool, error) {
	status := func(ctx context.Context) (*Status, error) { return c.status(ctx, id) }
	for st, err := range watch.Changes(ctx, status, watch.Options[*Status]{Interval: poll, Equal: watch.SameJSON[*Status]}) {
		if err != nil {
			return false, err
		}
		if (st.Ended || st.Status != StatusRunning) && g >= st.Groups {
			// Its input ended, or it was cancelled: no group starts now.
			return false, nil
		}
		_, err := c.temporal().DescribeWorkflowExecution(ctx, GroupID(id, g), "")
		if !execution.IsNotFound(err) {
			// Started; or an error that reading the group tells again.
			return true, nil
		}
	}
	return false, ctx.Err()
}

// complete fills in the output of a result whose group left it to the
// item's process (its outputs were past the payload limit together).
func (c *Client) complete(ctx context.Context, r Result, unreachable func(error)) (Result, error) {
	if r.Status != StatusCompleted || r.Output != nil {
		return r, nil
	}
	var info *process.Info
	err := untilReachable(ctx, unreachable, func() (err error) {
		info, err = c.Processes.Get(ctx, r.ID)
		return err
	})
	switch {
	case Unreachable(err) || ctx.Err() != nil:
		return r, fmt.Errorf("line %d: read its output: %w", r.Line, err) // not failed: unwritten
	case err != nil:
		r.Status, r.Error = StatusFailed, fmt.Sprintf("read its output: %v", err)
		return r, nil
	}
	r.Output = output(info.State)
	return r, nil
}

// Group reads group g of batch id: its results, each completed item's
// output filled in. A group still running is waited for; one that never
// started is ErrNotFound.
func (c *Client) Group(ctx context.Context, id string, g int) (*GroupResult, error) {
	var res GroupResult
	err := c.temporal().GetWorkflow(ctx, GroupID(id, g), "").Get(ctx, &res)
	if execution.IsNotFound(err) {
		return nil, fmt.Errorf("%w: group %s", ErrNotFound, GroupID(id, g))
	}
	if err != nil {
		return nil, fmt.Errorf("read group %s: %w", GroupID(id, g), err)
	}
	for i, r := range res.Results {
		if res.Results[i], err = c.complete(ctx, r, nil); err != nil {
			return nil, err
		}
	}
	return &res, nil
}

// startOrAttach starts a workflow with a deterministic id, or attaches to
// the one that ran or runs under it: starting the same work again finds
// what already ran.
func (c *Client) startOrAttach(ctx context.Context, opts client.StartWorkflowOptions, workflow string, in any) (client.WorkflowRun, error) {
	run, _, err := c.startOrFind(ctx, opts, workflow, in, false)
	return run, err
}

// startNew starts workflow under opts.ID when no workflow ran or runs
// under it, and says whether it did.
func (c *Client) startNew(ctx context.Context, opts client.StartWorkflowOptions, workflow string, in any) (started bool, err error) {
	_, err = c.temporal().ExecuteWorkflow(ctx, startOptions(opts, enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL), workflow, in)
	if _, ok := errors.AsType[*serviceerror.WorkflowExecutionAlreadyStarted](err); ok {
		return false, nil
	}
	return err == nil, err
}

// startOrFind is startOrAttach that says whether the run it returns was
// started before this call (ended: it ran or runs for an earlier run of
// the batch); again starts a new run under the id of one that ended.
func (c *Client) startOrFind(ctx context.Context, opts client.StartWorkflowOptions, workflow string, in any, again bool) (run client.WorkflowRun, ended bool, err error) {
	opts = startOptions(opts, enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING)
	if again {
		opts.WorkflowIDReusePolicy = enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE
	}
	run, err = c.temporal().ExecuteWorkflow(ctx, opts, workflow, in)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) { // one that ran under the id has ended
		return c.temporal().GetWorkflow(ctx, opts.ID, ""), true, nil
	}
	return run, false, err
}

// startOptions are opts for a workflow of the batch: on Vibe's queue,
// never started again under the id of a run that ended, conflict saying
// what a run under the id that still runs does to the start; a start the
// id refuses errs with WorkflowExecutionAlreadyStarted.
func startOptions(opts client.StartWorkflowOptions, conflict enumspb.WorkflowIdConflictPolicy) client.StartWorkflowOptions {
	opts.TaskQueue = durable.TaskQueue
	opts.WorkflowIDReusePolicy = enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE
	opts.WorkflowIDConflictPolicy = conflict
	opts.WorkflowExecutionErrorWhenAlreadyStarted = true
	return opts
}

// batchAttribute tags a batch's workflows, for listings.
func batchAttribute(id string) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(durable.BatchAttribute.ValueSet(id))
}

// Host finds the group whose workflow runs batch item id
// (<batch>-<line>, ItemID): a process.Hosts, so that process.Client reads,
// watches and answers items by their ids. ok is false for an id that is
// no batch's item, or whose group has not reported its start yet.
func (c *Client) Host(ctx context.Context, id string) (string, bool, error) {
	i := strings.LastIndexByte(id, '-')
	if i <= 0 {
		return "", false, nil
	}
	line, err := strconv.Atoi(id[i+1:])
	b := id[:i]
	if err != nil || line < 1 || CheckID(b) != nil {
		return "", false, nil
	}
	if _, err := execution.Describe(ctx, c.temporal(), b, ErrNotFound, BatchName); err != nil {
		if errors.Is(err, ErrNotFound) {
			return "", false, nil
		}
		return "", false, err
	}
	resp, err := durable.Query(ctx, c.temporal(), b, QueryGroup, line)
	if err != nil {
		return "", false, fmt.Errorf("find the group of %s: %w", id, err)
	}
	var g int
	if err := resp.Get(&g); err != nil {
		return "", false, fmt.Errorf("find the group of %s: %w", id, err)
	}
	if g < 0 {
		return "", false, nil
	}
	return GroupID(b, g), true, nil
}

// NewClient returns the batch client of processes p. For p to read and
// answer the batches' items by their ids, make the client p's Hosts
// (vibe.StartOn does).
func NewClient(p *process.Client) *Client { return &Client{Processes: p} }
