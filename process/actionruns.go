package process

import (
	"context"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"

	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/internal/execution"
)

// ActionRun is what a fire-and-forget action has come to. The action runs
// in a workflow of its own (FireAndForget) that outlives its process, so
// the process's view cannot follow it to its end: a client reads it from
// that workflow (Client.Get does, for every reader of a process — vibe
// show, GET /v1/processes/{id}, the console, MCP).
type ActionRun struct {
	// Step is the step's qualified name.
	Step string `json:"step"`
	// Workflow is the id of the workflow that runs the action, on the
	// engine the process runs on: it resumes wherever a worker polls it.
	Workflow string `json:"workflow"`
	// Status is "running" (retrying, or waiting for its next attempt),
	// "completed" or "failed" — or "unknown" once the engine no longer
	// keeps its workflow and the process never learnt how it ended.
	Status string `json:"status"`
	// Attempts are the attempts of the action started so far.
	Attempts int `json:"attempts"`
	// LastError is the last attempt's failure: why a failed action failed,
	// or what a running or completed one got wrong before.
	LastError string `json:"lastError,omitempty"`
	// NextAttempt is when a running action that failed tries again.
	NextAttempt *time.Time `json:"nextAttempt,omitempty"`
	// Done is true once the action will not run again: completed or failed.
	Done bool `json:"done"`
}

// The statuses of an ActionRun.
const (
	ActionRunning   = "running"
	ActionCompleted = "completed"
	ActionFailed    = "failed"
	ActionUnknown   = "unknown"
)

// FireAndForgetID is the id of the workflow that runs process's
// fire-and-forget step (qualified name).
func FireAndForgetID(process, step string) string {
	return process + "-" + strings.ReplaceAll(step, ".", "-")
}

// actionRuns reads the fire-and-forget actions of process id, by step name
// in order, and brings the view's Actions up to date with them: "started"
// while one runs, then "completed" or "failed: …" — the view itself stops
// following them when its process ends.
func (c *Client) actionRuns(ctx context.Context, id string, actions map[string]string) ([]ActionRun, error) {
	steps := make([]string, 0, len(actions))
	for s := range actions {
		steps = append(steps, s)
	}
	slices.Sort(steps)
	runs := make([]ActionRun, 0, len(steps))
	for _, step := range steps {
		r, err := c.actionRun(ctx, id, step, actions[step])
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
		switch r.Status {
		case ActionCompleted:
			actions[step] = "completed"
		case ActionFailed:
			actions[step] = "failed: " + r.LastError
		}
	}
	return runs, nil
}

// actionRun reads one fire-and-forget action's workflow; viewed is what
// the process's view says of it.
func (c *Client) actionRun(ctx context.Context, id, step, viewed string) (ActionRun, error) {
	r := ActionRun{Step: step, Workflow: FireAndForgetID(id, step)}
	desc, err := c.Temporal.DescribeWorkflowExecution(ctx, r.Workflow, "")
	if err != nil {
		if execution.IsNotFound(err) {
			// It never started (the view says why), or it closed longer ago
			// than the engine keeps workflows.
			r.Done = true
			switch {
			case strings.HasPrefix(viewed, "failed: "):
				r.Status, r.LastError = ActionFailed, strings.TrimPrefix(viewed, "failed: ")
			case viewed == "completed":
				r.Status = ActionCompleted
			default:
				r.Status, r.LastError = ActionUnknown, "its workflow is no longer on the engine (closed longer ago than the namespace keeps workflows)"
			}
			return r, nil
		}
		return r, err
	}
	switch desc.GetWorkflowExecutionInfo().GetStatus() {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		r.Status = ActionRunning
		for _, pa := range desc.GetPendingActivities() {
			r.Attempts = int(pa.GetAttempt())
			if pa.GetState() != enumspb.PENDING_ACTIVITY_STATE_STARTED {
				r.Attempts-- // the attempt numbered is the next one, not started yet
			}
			if f := pa.GetLastFailure(); f != nil {
				r.LastError = f.GetMessage()
			}
			if t := pa.GetNextAttemptScheduleTime(); t != nil {
				at := t.AsTime()
				r.NextAttempt = &at
			}
		}
		return r, nil
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		r.Status = ActionCompleted
	default:
		r.Status = ActionFailed
	}
	r.Done = true
	r.Attempts, r.LastError, err = attempts(ctx, c.Temporal, r.Workflow)
	if err != nil {
		return r, err
	}
	if r.Status == ActionFailed {
		if err := c.Temporal.GetWorkflow(ctx, r.Workflow, "").Get(ctx, nil); err != nil {
			r.LastError = durable.ErrorText(err)
		} else if r.LastError == "" {
			r.LastError = "the workflow was " + strings.ToLower(strings.TrimPrefix(desc.GetWorkflowExecutionInfo().GetStatus().String(), "WORKFLOW_EXECUTION_STATUS_"))
		}
	}
	return r, nil
}

// attempts reads a closed FireAndForget workflow's history for its
// action's attempts and the last failure among them. Temporal records an
// activity's last attempt only (its number, and the failure before it).
func attempts(ctx context.Context, tc client.Client, id string) (n int, last string, err error) {
	it := tc.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return 0, "", err
		}
		last = lastFailure(ev, last)
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil {
			n = max(n, int(a.GetAttempt()))
		}
	}
	return n, last, nil
}

// lastFailure is the failure ev records, or last.
func lastFailure(ev *historypb.HistoryEvent, last string) string {
	if a := ev.GetActivityTaskStartedEventAttributes(); a != nil && a.GetLastFailure() != nil {
		return a.GetLastFailure().GetMessage()
	}
	if a := ev.GetActivityTaskFailedEventAttributes(); a != nil && a.GetFailure() != nil {
		return a.GetFailure().GetMessage()
	}
	if a := ev.GetActivityTaskTimedOutEventAttributes(); a != nil && a.GetFailure() != nil {
		return a.GetFailure().GetMessage()
	}
	return last
}
