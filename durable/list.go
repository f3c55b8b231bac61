package durable

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// Status is the status of a Vibe workflow as people see it: a process's
// (which may wait for a person), a Vessel's request's. It is finer than
// Temporal's own, and kept in the search attribute VibeStatus.
type Status string

// The statuses.
const (
	Running   Status = "running"
	Waiting   Status = "waiting" // for a person's answer
	Completed Status = "completed"
	Failed    Status = "failed"
)

// Paging of the lists of workflows (ListExecutions).
const (
	// DefaultListLimit is the page size when ListOptions.Limit is 0.
	DefaultListLimit = 100
	// MaxListLimit is the largest page a list gives: the engine's own
	// largest visibility page (frontend.visibilityMaxPageSize).
	MaxListLimit = 1000
)

// ListOptions says which page of a list of workflows — processes, Vessel
// requests — to return.
type ListOptions struct {
	// Limit is the most workflows on the page, 1 to MaxListLimit; 0 means
	// DefaultListLimit.
	Limit int
	// Cursor is the Next of the page before; "" starts with the newest.
	Cursor string
	// Status, when set, lists only the workflows of that status, and
	// Process only the processes whose process name starts with it
	// (letters, digits, '.', '_' and '-'), which the list of Vessel
	// requests does not take.
	Status  Status
	Process string
	// Since and Before, when set, list only the workflows started at or
	// after Since and before Before.
	Since, Before time.Time
}

// ErrBadCursor is wrapped by a list's error for a cursor it did not give.
var ErrBadCursor = errors.New("not a cursor of this list")

// TimeQuery is the part of a visibility query that keeps to opts' Since
// and Before (" AND StartTime >= '…'"), "" without them.
func TimeQuery(opts ListOptions) string {
	var q string
	if !opts.Since.IsZero() {
		q += fmt.Sprintf(" AND StartTime >= '%s'", opts.Since.UTC().Format(time.RFC3339Nano))
	}
	if !opts.Before.IsZero() {
		q += fmt.Sprintf(" AND StartTime < '%s'", opts.Before.UTC().Format(time.RFC3339Nano))
	}
	return q
}

// ListExecutions returns a page of the workflows a visibility query
// matches, newest first, and the cursor of the next page ("" after the
// last); what names them in errors ("processes"). It is the paging of
// every client's List.
func ListExecutions(ctx context.Context, c client.Client, what, query string, opts ListOptions) ([]*workflowpb.WorkflowExecutionInfo, string, error) {
	limit := opts.Limit
	if limit == 0 {
		limit = DefaultListLimit
	}
	if limit < 1 || limit > MaxListLimit {
		return nil, "", fmt.Errorf("list %s: the limit %d is not between 1 and %d", what, opts.Limit, MaxListLimit)
	}
	token, err := base64.RawURLEncoding.DecodeString(opts.Cursor)
	if err != nil || !pageToken(token) {
		return nil, "", fmt.Errorf("list %s: cursor %q: %w", what, opts.Cursor, ErrBadCursor)
	}
	var execs []*workflowpb.WorkflowExecutionInfo
	for calls := 0; ; calls++ {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query:         query,
			PageSize:      int32(limit - len(execs)),
			NextPageToken: token,
		})
		if err != nil {
			var bad *serviceerror.InvalidArgument
			if calls == 0 && len(token) > 0 && errors.As(err, &bad) {
				return nil, "", fmt.Errorf("list %s: cursor %q: %w (%v)", what, opts.Cursor, ErrBadCursor, err)
			}
			return nil, "", fmt.Errorf("list %s: %w", what, err)
		}
		execs = append(execs, resp.GetExecutions()...)
		token = resp.GetNextPageToken()
		// The engine may give a short page before the last one: fill this
		// one up to the limit, so that a page is short only at the end.
		if len(token) == 0 || len(execs) >= limit {
			break
		}
	}
	if len(token) == 0 {
		return execs, "", nil
	}
	return execs, base64.RawURLEncoding.EncodeToString(token), nil
}

// pageToken reports whether token may be one of the engine's page tokens:
// none, or a JSON object that reads as the SQL visibility store's token
// (sqlplugin.VisibilityPageToken) does. That store answers a token it
// cannot read with an internal error, which the SDK retries until its
// deadline; the tokens of other stores have other members, which pass.
func pageToken(token []byte) bool {
	if len(token) == 0 {
		return true
	}
	var sqlToken struct {
		CloseTime, StartTime time.Time
		RunID                string
	}
	return token[0] == '{' && json.Unmarshal(token, &sqlToken) == nil
}
