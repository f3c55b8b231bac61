package batch

import (
	"slices"

	"go.temporal.io/sdk/workflow"
)

// RecordInput starts a batch's record (Workflows.Batch), or carries it
// over a continue-as-new.
type RecordInput struct {
	Status Status `json:"status"`
	// Started and Finished are the groups reported so far, sorted; End
	// is set once the input ended.
	Started  []int `json:"started,omitempty"`
	Finished []int `json:"finished,omitempty"`
	End      *End  `json:"end,omitempty"`
	// Lines are the groups' line ranges as they reported them, by group.
	Lines []Lines `json:"lines,omitempty"`
	// Live are the last reports of what running groups spent so far
	// (GroupReport.Spent), by group.
	Live []GroupReport `json:"live,omitempty"`
}

// Lines is the range of input lines a group holds.
type Lines struct {
	Group int `json:"group"`
	First int `json:"first"`
	Last  int `json:"last"`
}

// End says a batch's input ended (SignalEnd): how many groups and lines
// it made.
type End struct {
	Groups int `json:"groups"`
	Items  int `json:"items"`
}

// ContinueAfter is the length of a batch record's history (its events)
// past which it continues as new, carrying its counts: however many groups
// a batch has, its record stays well within the engine's history limits
// (51,200 events). The engine may suggest it sooner. Tests lower it.
var ContinueAfter = 10_000

// Batch is a batch's record: it counts what its groups report — items,
// done and failed, usage, model requests — answers QueryStatus, and
// returns the final Status once the input ended and every group
// finished. Reports count once each, so a group run again after a crash
// is not counted twice.
func (w *Workflows) Batch(ctx workflow.Context, in RecordInput) (Status, error) {
	st := in.Status
	if st.Status == "" {
		st.Status = "running"
	}
	started, finished, lines, live := in.Started, in.Finished, in.Lines, in.Live
	if err := workflow.SetQueryHandler(ctx, QueryStatus, func() (Status, error) { return spentSoFar(st, live), nil }); err != nil {
		return st, err
	}
	// QueryGroup: the group that holds an input line, -1 for none
	// reported (yet).
	err := workflow.SetQueryHandler(ctx, QueryGroup, func(line int) (int, error) {
		for _, l := range lines {
			if line >= l.First && line <= l.Last {
				return l.Group, nil
			}
		}
		return -1, nil
	})
	if err != nil {
		return st, err
	}
	if err := workflow.SetQueryHandler(ctx, QueryLines, func() ([]Lines, error) { return lines, nil }); err != nil {
		return st, err
	}
	reports := workflow.GetSignalChannel(ctx, SignalGroup)
	ends := workflow.GetSignalChannel(ctx, SignalEnd)
	take := func(r GroupReport) {
		if r.Spent {
			if _, done := slices.BinarySearch(finished, r.Index); !done {
				live = takeSpent(live, r)
			}
			return
		}
		if add(&started, r.Index) {
			st.Items += r.Items
			st.Groups++
			if r.Last > 0 {
				lines = append(lines, Lines{Group: r.Index, First: r.First, Last: r.Last})
			}
		}
		if r.Finished && add(&finished, r.Index) {
			live = dropSpent(live, r.Index)
			st.Done += r.Done
			st.Failed += r.Failed
			st.Changed += r.Changed
			st.Usage = st.Usage.Add(r.Usage)
			st.Requests += r.Requests
			if st.Model == "" {
				st.Model = r.Model
			}
			st.Splits = mergeSplits(st.Splits, r.Splits, 0)
			st.Audits = mergeAudits(st.Audits, r.Audits)
		} else if r.Finished && r.Again != nil {
			// The group ran again after an item failed for a reason not
			// its own, or its failed items were asked again
			// (Options.RetryFailed): its counts take the place of its run
			// before.
			st.Done += r.Done - r.Again.Done
			st.Failed += r.Failed - r.Again.Failed
			st.Usage = st.Usage.Add(r.Usage)
			st.Requests += r.Requests
		}
	}
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(reports, func(c workflow.ReceiveChannel, _ bool) {
		var r GroupReport
		c.Receive(ctx, &r)
		take(r)
	})
	sel.AddReceive(ends, func(c workflow.ReceiveChannel, _ bool) {
		var e End
		c.Receive(ctx, &e)
		in.End = &e
		st.Ended = true
	})
	sel.AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) {})
	queued := func() { // take what is queued
		for {
			var r GroupReport
			if !reports.ReceiveAsync(&r) {
				break
			}
			take(r)
		}
		var e End
		if ends.ReceiveAsync(&e) {
			in.End, st.Ended = &e, true
		}
	}
	for in.End == nil || len(finished) < in.End.Groups {
		if ctx.Err() != nil { // cancelled (Client.Cancel): it ends with what it counted
			// The groups' last reports came before the cancellation
			// (Client.Cancel cancels them first): they count.
			queued()
			st = spentSoFar(st, live)
			st.Status = "canceled"
			now := workflow.Now(ctx)
			st.FinishedAt = &now
			return st, nil
		}
		if info := workflow.GetInfo(ctx); info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() >= ContinueAfter {
			// Take what is queued, then start afresh with the counts.
			queued()
			return st, workflow.NewContinueAsNewError(ctx, BatchName, RecordInput{Status: st, Started: started, Finished: finished, End: in.End, Lines: lines, Live: live})
		}
		sel.Select(ctx)
	}
	st = spentSoFar(st, live)
	st.Status = StatusCompleted
	if st.Failed > 0 {
		st.Status = StatusFailed
	}
	now := workflow.Now(ctx)
	st.FinishedAt = &now
	return st, nil
}

// add puts x in the sorted set xs, and reports whether it was new.
func add(xs *[]int, x int) bool {
	i, found := slices.BinarySearch(*xs, x)
	if !found {
		*xs = slices.Insert(*xs, i, x)
	}
	return !found
}
