package process

import (
	"context"
	"strings"
	"time"

	"github.com/augceo/vibe/durable"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
)

// Stalled is a call of a process's that waits for a worker able to make
// it: scheduled on its own task queue — its model's (durable.ModelQueue)
// or its action's (durable.ActionQueue) — for StallAfter or more, a queue
// that no worker has polled lately. It is not failed and spends no
// attempt: it goes on when a worker that has its model or its action
// comes.
type Stalled struct {
	// Needs is what the call needs: "model" or "action" (or "worker" on
	// another queue).
	Needs string `json:"needs"`
	// Action names the action, for an action's call.
	Action string `json:"action,omitempty"`
	// Queue is the task queue the call waits on.
	Queue string `json:"queue"`
	// Since is when the call was scheduled, or its attempt was due.
	Since time.Time `json:"since"`
}

// StallAfter is how long a call waits for a worker before Get says it
// is stalled: a worker that has its queue takes it well before.
const StallAfter = 3 * time.Second

// pollerFresh is how recently a worker must have polled a queue to count
// as polling it: a live worker's long poll comes back within a minute and
// polls again, and the engine keeps a gone worker's last poll for a
// while.
const pollerFresh = 2 * time.Minute

// stalled returns the calls of the workflow desc describes that wait for a
// worker no one runs. It asks the engine about a queue only when a call
// has waited StallAfter, and says nothing of a queue it cannot read.
func (c *Client) stalled(ctx context.Context, desc *workflowservice.DescribeWorkflowExecutionResponse, now time.Time) []Stalled {
	var out []Stalled
	polled := map[string]bool{}
	for _, pa := range desc.GetPendingActivities() {
		if pa.GetState() != enumspb.PENDING_ACTIVITY_STATE_SCHEDULED || pa.GetPaused() {
			continue
		}
		since := pa.GetScheduledTime().AsTime()
		if t := pa.GetNextAttemptScheduleTime(); t != nil {
			since = t.AsTime() // a retry waits for its time first
		}
		q := pa.GetActivityOptions().GetTaskQueue().GetName()
		if q == "" || pa.GetScheduledTime() == nil || now.Sub(since) < StallAfter {
			continue
		}
		alive, seen := polled[q]
		if !seen {
			resp, err := c.Temporal.DescribeTaskQueue(ctx, q, enumspb.TASK_QUEUE_TYPE_ACTIVITY)
			if err != nil {
				continue
			}
			for _, p := range resp.GetPollers() {
				if t := p.GetLastAccessTime(); t != nil && now.Sub(t.AsTime()) < pollerFresh {
					alive = true
				}
			}
			polled[q] = alive
		}
		if alive {
			continue
		}
		s := Stalled{Needs: "worker", Queue: q, Since: since}
		switch {
		case strings.HasPrefix(q, durable.ActionQueuePrefix):
			s.Needs, s.Action = "action", strings.TrimPrefix(q, durable.ActionQueuePrefix)
		case q == durable.AnyModelQueue || strings.HasPrefix(q, durable.ModelQueuePrefix):
			s.Needs = "model"
		}
		out = append(out, s)
	}
	return out
}
