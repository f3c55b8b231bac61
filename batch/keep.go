package batch

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/client"

	"github.com/augceo/vibe/durable"
)

// Work that runs outside a batch's groups — a replay, whose model calls
// the command makes itself — keeps a batch's record all the same
// (Workflows.Batch): listed by List with the batches, read by Status, with
// the same counts, usage and requests. Keep starts or finds the record,
// Report tells it what the work did, EndInput says how many groups and
// items the work has.

// Keep starts the record st.ID with st (Kind says what the work is), or
// finds the one an earlier run of the same work started: ended reports
// that it has ended, the work recorded whole before.
func (c *Client) Keep(ctx context.Context, st Status) (ended bool, err error) {
	if st.Status == "" {
		st.Status = "running"
	}
	_, ended, err = c.startOrFind(ctx, client.StartWorkflowOptions{ID: st.ID, TypedSearchAttributes: batchAttribute(st.ID),
		Memo: map[string]any{durable.MemoProcess: st.Process}}, BatchName, RecordInput{Status: st}, false)
	if err != nil {
		return false, fmt.Errorf("keep the record of %s: %w", st.ID, err)
	}
	return ended, nil
}

// Report tells record id what a group of the work did (SignalGroup): its
// start (Items, First, Last), what it spent so far (Spent), or its end
// (Finished, with Done, Failed, Usage, Requests and Model). A report is
// counted once, however often it is sent.
func (c *Client) Report(ctx context.Context, id string, r GroupReport) error {
	if err := c.temporal().SignalWorkflow(ctx, id, "", SignalGroup, r); err != nil {
		return fmt.Errorf("report to the record of %s: %w", id, err)
	}
	return nil
}

// EndInput tells record id that its work has e.Groups groups and e.Items
// items (SignalEnd): it completes once each group reported its end.
func (c *Client) EndInput(ctx context.Context, id string, e End) error {
	if err := c.temporal().SignalWorkflow(ctx, id, "", SignalEnd, e); err != nil {
		return fmt.Errorf("end the record of %s: %w", id, err)
	}
	return nil
}
