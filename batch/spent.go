package batch

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/augceo/vibe/durable"
)

// A batch's record counts its model calls as they are answered, not only
// when a group ends: each group reports what its calls have spent after
// every fill (a GroupReport with Spent set), and a fill cancelled with its
// batch gives back what it spent before it stopped — the requests it sent
// and the usage of the answers it got — in its CanceledError, which the
// group waits for. So a batch whose items wait for a person, or that was
// cancelled, shows the calls that were paid for.

// liveUsage is the group workflow's version that reports what its calls
// spent as they are answered (GetVersion): groups started before it report
// at their end only.
const liveUsage = "vibe.group.live-usage"

// fillFailed is the error of a multiplexed fill that failed: when the
// activity was cancelled, a CanceledError with what it spent
// (durable.SentDetails); else durable.FillError's.
func fillFailed(ctx context.Context, sent *durable.Sent, err error) error {
	if ctx.Err() != nil {
		return temporal.NewCanceledError(sent.Spent())
	}
	return durable.FillError(err)
}

// spentBy is what a fill that failed had spent, when its activity was
// cancelled and said so (fillFailed).
func spentBy(err error) (durable.SentDetails, bool) {
	var ce *temporal.CanceledError
	var d durable.SentDetails
	if !errors.As(err, &ce) || !ce.HasDetails() || ce.Details(&d) != nil {
		return durable.SentDetails{}, false
	}
	return d, true
}

// fillOptions are the activity options of a group's multiplexed fill: a
// group that reports live usage waits, when it is cancelled, for its fill
// to say what it spent.
func (g *group) fillOptions() workflow.ActivityOptions {
	opts := durable.FillOptions()
	opts.WaitForCancellation = g.live
	return opts
}

// spent takes what a cancelled fill spent into the group's usage (out is
// the fill's output, empty when it failed).
func (g *group) spent(err error, out *FillOutput) {
	if d, ok := spentBy(err); ok && g.live {
		out.Requests, out.Usage = int(d.Requests), d.Usage
	}
}

// progress tells the batch what the group's calls have spent so far; the
// record keeps the latest of each group still running (Workflows.Batch).
// Nothing waits for it: a record gone takes no report.
func (g *group) progress(ctx workflow.Context) {
	if !g.live {
		return
	}
	g.report(ctx, GroupReport{Index: g.in.Index, Spent: true,
		Usage: g.res.Usage, Requests: g.res.Requests, Model: g.res.Model})
}

// spentSoFar is what a record shows: the usage and requests of the groups
// that finished (st's), and of those still running as they last reported
// (live).
func spentSoFar(st Status, live []GroupReport) Status {
	for _, r := range live {
		st.Usage = st.Usage.Add(r.Usage)
		st.Requests += r.Requests
		if st.Model == "" {
			st.Model = r.Model
		}
	}
	return st
}

// takeSpent keeps r, a running group's report of what it spent, in live
// (sorted by group): a report that says less than one already taken came
// late, and is dropped.
func takeSpent(live []GroupReport, r GroupReport) []GroupReport {
	i, found := slices.BinarySearchFunc(live, r.Index, func(l GroupReport, g int) int { return cmp.Compare(l.Index, g) })
	switch {
	case !found:
		return slices.Insert(live, i, r)
	case r.Requests >= live[i].Requests:
		live[i] = r
	}
	return live
}

// dropSpent removes group g's report from live: it finished, and its
// final report counts in its place.
func dropSpent(live []GroupReport, g int) []GroupReport {
	return slices.DeleteFunc(live, func(r GroupReport) bool { return r.Index == g })
}
