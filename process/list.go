package process

import (
	"context"
	"fmt"
	"time"
	"unicode"

	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/augceo/vibe/durable"
)

// Summary is a process in a list.
type Summary struct {
	ID        string     `json:"id"`
	Process   string     `json:"process"`
	Status    Status     `json:"status"`
	StartedAt time.Time  `json:"startedAt"`
	EndedAt   *time.Time `json:"endedAt,omitempty"` // nil while it runs
}

// closeTime is when a workflow closed, nil while it runs.
func closeTime(ex interface {
	GetStatus() enumspb.WorkflowExecutionStatus
	GetCloseTime() *timestamppb.Timestamp
}) *time.Time {
	if ex.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING || ex.GetCloseTime() == nil {
		return nil
	}
	t := ex.GetCloseTime().AsTime()
	return &t
}

// Page is one page of processes, newest first.
type Page struct {
	Processes []Summary
	// Next is the cursor of the page after this one, or "" when this is
	// the last.
	Next string
}

// List returns a page of processes, newest first, but for batch items. The
// cursor is the engine's own page token, base64url-encoded.
func (c *Client) List(ctx context.Context, opts ListOptions) (Page, error) {
	query, err := listQuery(opts)
	if err != nil {
		return Page{}, err
	}
	execs, next, err := durable.ListExecutions(ctx, c.Temporal, "processes", query, opts)
	if err != nil {
		return Page{}, err
	}
	page := Page{Processes: make([]Summary, len(execs)), Next: next}
	for i, ex := range execs {
		page.Processes[i] = summaryOf(ex)
	}
	return page, nil
}

// listQuery is the visibility query of a list of processes. A waiting
// process is running to the engine; VibeStatus tells it apart. Completed
// and failed come from the engine's own status, which also covers direct
// calls and workflows ended from outside.
func listQuery(opts ListOptions) (string, error) {
	// A batch's items are listed with their batch, not here.
	query := fmt.Sprintf("(WorkflowType = '%s' OR WorkflowType = '%s') AND %s IS NULL", durable.ProcessWorkflow, durable.DirectCallWorkflow, durable.BatchAttribute.GetName())
	switch opts.Status {
	case "":
	case Running:
		query += fmt.Sprintf(" AND ExecutionStatus = 'Running' AND %s != '%s'", durable.StatusAttribute.GetName(), Waiting)
	case Waiting:
		query += fmt.Sprintf(" AND ExecutionStatus = 'Running' AND %s = '%s'", durable.StatusAttribute.GetName(), Waiting)
	case Completed:
		query += " AND ExecutionStatus = 'Completed'"
	case Failed:
		query += " AND ExecutionStatus != 'Running' AND ExecutionStatus != 'Completed'"
	default:
		return "", fmt.Errorf("list processes: no status %q (want running, waiting, completed or failed)", opts.Status)
	}
	if opts.Process != "" {
		for _, r := range opts.Process {
			if !(r == '.' || r == '_' || r == '-' || unicode.IsLetter(r) || unicode.IsDigit(r)) {
				return "", fmt.Errorf("list processes: a process name is letters, digits, '.', '_' and '-', not %q", opts.Process)
			}
		}
		query += fmt.Sprintf(" AND %s STARTS_WITH '%s'", durable.ProcessAttribute.GetName(), opts.Process)
	}
	return query + durable.TimeQuery(opts), nil
}

func summaryOf(ex *workflowpb.WorkflowExecutionInfo) Summary {
	s := Summary{ID: ex.GetExecution().GetWorkflowId(), Process: memoProcess(ex.GetMemo()), Status: statusOf(ex.GetStatus()), StartedAt: ex.GetStartTime().AsTime(), EndedAt: closeTime(ex)}
	if sa := ex.GetSearchAttributes().GetIndexedFields()[durable.StatusAttribute.GetName()]; sa != nil && s.Status == Running {
		var st string
		if converter.GetDefaultDataConverter().FromPayload(sa, &st) == nil && st != "" {
			s.Status = Status(st)
		}
	}
	return s
}
