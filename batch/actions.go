package batch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/internal/execution"
	"github.com/augceo/vibe/process"
)

// fireAndForget are the qualified names of the fire-and-forget steps of the
// process p.
func fireAndForget(p *compile.Program) []string {
	var steps []string
	if p == nil {
		return nil
	}
	for _, ch := range p.Chunks {
		for i := range ch.Steps {
			if ch.Steps[i].FireAndForget {
				steps = append(steps, ch.Steps[i].Qualified())
			}
		}
	}
	return steps
}

// Actions are the workflows of the fire-and-forget actions of batch id's
// items that may not have ended: one per step of steps (Summary.FireAndForget)
// for each of items, and those the engine lists as running for any of the
// batch's groups (the items of earlier runs). The first are named without
// asking the engine, which lists a workflow only a moment after it started.
func (c *Client) Actions(ctx context.Context, id string, steps, items []string) ([]string, error) {
	if len(steps) == 0 {
		return nil, nil
	}
	seen := map[string]bool{}
	var ids []string
	add := func(wid string) {
		if !seen[wid] {
			seen[wid] = true
			ids = append(ids, wid)
		}
	}
	for _, item := range items {
		for _, s := range steps {
			add(process.FireAndForgetID(item, s))
		}
	}
	query := fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running'", process.FireAndForgetName)
	listed := len(ids)
	for next := []byte(nil); ; {
		resp, err := c.temporal().ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{NextPageToken: next, Query: query})
		if err != nil {
			return nil, fmt.Errorf("list batch %s's fire-and-forget actions: %w", id, err)
		}
		for _, e := range resp.GetExecutions() {
			if isGroupOf(e.GetParentExecution().GetWorkflowId(), id) {
				add(e.GetExecution().GetWorkflowId())
			}
		}
		if next = resp.GetNextPageToken(); len(next) == 0 {
			slices.Sort(ids[listed:])
			return ids, nil
		}
	}
}

// isGroupOf reports whether wid is the id of a group of batch id (GroupID).
func isGroupOf(wid, id string) bool {
	g, ok := strings.CutPrefix(wid, id+"-g")
	if !ok || g == "" {
		return false
	}
	_, err := strconv.ParseUint(g, 10, 31)
	return err == nil
}

// AwaitActions waits for the workflows ids (Actions) to end, at most until
// ctx's end, a few at a time, calling ended (when set) with the count of
// those that have ended so far. It returns those still running, in the
// order of ids: none once every one has ended. A workflow the engine does
// not know (an action that never started) has ended. A ctx that ends is
// not an error: what has not ended is returned.
func (c *Client) AwaitActions(ctx context.Context, ids []string, ended func(n int)) ([]string, error) {
	const workers = 8
	open := make([]bool, len(ids))
	next := make(chan int)
	var (
		mu   sync.Mutex
		n    int
		errs []error
		wg   sync.WaitGroup
	)
	for range min(workers, len(ids)) {
		wg.Go(func() {
			for i := range next {
				done, err := c.awaitAction(ctx, ids[i])
				mu.Lock()
				switch {
				case err != nil:
					errs = append(errs, err)
					open[i] = true
				case !done:
					open[i] = true
				default:
					n++
					if ended != nil {
						ended(n)
					}
				}
				mu.Unlock()
			}
		})
	}
	for i := range ids {
		next <- i
	}
	close(next)
	wg.Wait()
	var still []string
	for i, o := range open {
		if o {
			still = append(still, ids[i])
		}
	}
	return still, errors.Join(errs...)
}

// awaitAction waits for the workflow wid to end, until ctx's end: done is
// false when it has not ended by then.
func (c *Client) awaitAction(ctx context.Context, wid string) (done bool, err error) {
	if ctx.Err() == nil {
		err = c.temporal().GetWorkflow(ctx, wid, "").Get(ctx, nil)
		if err == nil || execution.IsNotFound(err) {
			return true, nil
		}
	}
	// It ended in failure, or the wait ended: the engine says which. A
	// context of its own, for ctx may be over.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	desc, derr := c.temporal().DescribeWorkflowExecution(dctx, wid, "")
	switch {
	case execution.IsNotFound(derr):
		return true, nil
	case derr != nil:
		if ctx.Err() != nil || isDeadline(err) {
			return false, nil // the engine is busy or gone: it has not been seen to end
		}
		return false, fmt.Errorf("read fire-and-forget action %s: %w", wid, derr)
	}
	return desc.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, nil
}

// isDeadline reports whether err is a deadline's: the context's, or the
// engine's answer that the call's deadline passed.
func isDeadline(err error) bool {
	var de *serviceerror.DeadlineExceeded
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &de)
}
