package process

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/internal/execution"
)

// ErrNotFound is returned for an id that names no process.
var ErrNotFound = errors.New("no such process")

// Info is a process as the API shows it.
type Info struct {
	ID      string `json:"id"`
	Process string `json:"process"`
	View
	// Direct is set for a direct server call; its View is empty.
	Direct *DirectResult `json:"direct,omitempty"`
	// ActionRuns are the process's fire-and-forget actions as they are
	// now, read from the workflows that run them, by step name.
	ActionRuns []ActionRun `json:"actionRuns,omitempty"`
	// Stalled are its calls that wait for a worker that has their model
	// or action, none polling their task queue (see Stalled).
	Stalled []Stalled `json:"stalled,omitempty"`
	// StartedAt is when the workflow started; EndedAt when it closed, nil
	// while it runs (and for a batch's item, which has no workflow of its
	// own).
	StartedAt time.Time  `json:"startedAt"`
	EndedAt   *time.Time `json:"endedAt,omitempty"`
}

// Get returns a process's view, read from its workflow with the query
// "view" (which also works once the workflow has closed).
func (c *Client) Get(ctx context.Context, id string) (*Info, error) {
	// Another workflow — a Vessel request, a fire-and-forget action — is
	// no process, though it may answer a query of the same name.
	desc, err := execution.DescribeAll(ctx, c.Temporal, id, ErrNotFound, durable.ProcessWorkflow, durable.DirectCallWorkflow)
	if errors.Is(err, ErrNotFound) {
		if host, ok, herr := c.host(ctx, id); ok || herr != nil {
			if herr != nil {
				return nil, herr
			}
			return c.getHosted(ctx, host, id)
		}
	}
	if err != nil {
		return nil, err
	}
	ex := desc.GetWorkflowExecutionInfo()
	info := &Info{ID: id, Process: memoProcess(ex.GetMemo()), StartedAt: ex.GetStartTime().AsTime(), EndedAt: closeTime(ex)}
	if ex.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		info.Stalled = c.stalled(ctx, desc, time.Now())
	}
	if ex.GetType().GetName() == durable.DirectCallWorkflow {
		info.View = View{Status: statusOf(ex.GetStatus()), Done: []string{}}
		if info.Status == Completed {
			var r DirectResult
			if err := c.Temporal.GetWorkflow(ctx, id, "").Get(ctx, &r); err == nil {
				info.Direct = &r
				info.Usage = r.Usage
			}
		} else if info.Status == Failed {
			if err := c.Temporal.GetWorkflow(ctx, id, "").Get(ctx, nil); err != nil {
				msg := durable.ErrorText(err)
				info.Error = &msg
			}
		}
		return info, nil
	}
	resp, err := durable.Query(ctx, c.Temporal, id, QueryView)
	if err != nil {
		return nil, fmt.Errorf("read process %s: %w", id, err)
	}
	if err := resp.Get(&info.View); err != nil {
		return nil, fmt.Errorf("read process %s: %w", id, err)
	}
	if len(info.Actions) > 0 {
		if info.ActionRuns, err = c.actionRuns(ctx, id, info.Actions); err != nil {
			return nil, fmt.Errorf("read process %s's fire-and-forget actions: %w", id, err)
		}
	}
	switch ex.GetStatus() {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, enumspb.WORKFLOW_EXECUTION_STATUS_FAILED:
	default: // terminated, cancelled, timed out from outside
		info.Status = Failed
		if info.Error == nil {
			msg := "the workflow was " + strings.ToLower(strings.TrimPrefix(ex.GetStatus().String(), "WORKFLOW_EXECUTION_STATUS_"))
			info.Error = &msg
		}
	}
	return info, nil
}

// Hosts finds the workflow that hosts a process which has none of its own:
// a batch's item runs in its group's workflow. batch.Client is one.
type Hosts interface {
	// Host returns the id of the workflow that hosts process id; ok is
	// false when no workflow does.
	Host(ctx context.Context, id string) (workflowID string, ok bool, err error)
}

// host is where process id runs when it has no workflow of its own.
func (c *Client) host(ctx context.Context, id string) (string, bool, error) {
	if c.Hosts == nil {
		return "", false, nil
	}
	return c.Hosts.Host(ctx, id)
}

// getHosted reads a hosted process from its host (QueryItem).
func (c *Client) getHosted(ctx context.Context, host, id string) (*Info, error) {
	resp, err := durable.Query(ctx, c.Temporal, host, durable.QueryItem, id)
	if err != nil {
		if durable.IsNotHosted(err) {
			return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
		}
		return nil, fmt.Errorf("read process %s in %s: %w", id, host, err)
	}
	var info Info
	if err := resp.Get(&info); err != nil {
		return nil, fmt.Errorf("read process %s in %s: %w", id, host, err)
	}
	return &info, nil
}

func statusOf(s enumspb.WorkflowExecutionStatus) Status {
	switch s {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		return Running
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		return Completed
	}
	return Failed
}

// Program returns the compiled program a process runs: its workflow's
// input, read from the first event of its history, so a running process
// is drawn and explained from exactly what it runs. A direct server call's
// program is its one chunk; an id of another workflow is not found.
func (c *Client) Program(ctx context.Context, id string) (*compile.Program, error) {
	if _, err := execution.Describe(ctx, c.Temporal, id, ErrNotFound, durable.ProcessWorkflow, durable.DirectCallWorkflow); errors.Is(err, ErrNotFound) {
		host, ok, err := c.host(ctx, id)
		if err != nil {
			return nil, err
		}
		if ok {
			resp, err := durable.Query(ctx, c.Temporal, host, durable.QueryItemProgram, id)
			if durable.IsNotHosted(err) {
				return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
			}
			if err != nil {
				return nil, fmt.Errorf("read process %s in %s: %w", id, host, err)
			}
			var prog compile.Program
			if err := resp.Get(&prog); err != nil {
				return nil, fmt.Errorf("read process %s in %s: %w", id, host, err)
			}
			return &prog, nil
		}
	}
	in, _, err := c.startInput(ctx, id)
	if err != nil {
		return nil, err
	}
	return in.Program, nil
}
