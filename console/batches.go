package console

import (
	"errors"
	"net/http"
	"time"

	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/replay"
)

// batchRow is a batch with its progress worked out.
type batchRow struct {
	batch.Status
	// Finished counts the items done or failed; Of is how many items the
	// batch has: its input's lines while they are read, when the run knew
	// them (Status.Total), else the items read so far. Percent is of Of.
	Finished int
	Of       int
	Percent  int
	// PerSecond is the items finished per second since the start (until
	// the end, once it has ended).
	PerSecond float64
	Elapsed   time.Duration
	// Cost is what its tokens cost at the console's prices ("" without).
	Cost string
	// Shown is the status as the console shows it (Shown.Class its
	// badge's): a batch that ended with failed items is "completed with
	// failures" — its items ran to their end — though the API's Status
	// stays "failed"; one whose every item failed is "failed".
	Shown shownStatus
}

// shownStatus is a status as a badge shows it.
type shownStatus struct{ Text, Class string }

// batchStatus is how the console shows a batch's status.
func batchStatus(s batch.Status) shownStatus {
	if s.Status == batch.StatusFailed && s.Done > 0 {
		return shownStatus{Text: "completed with failures", Class: "partial"}
	}
	return shownStatus{Text: s.Status, Class: s.Status}
}

func rowOf(s batch.Status, now time.Time) batchRow {
	b := batchRow{Status: s, Finished: s.Done + s.Failed, Of: s.Items, Shown: batchStatus(s)}
	if !s.Ended && s.Total > s.Items {
		b.Of = s.Total
	}
	if b.Of > 0 {
		b.Percent = b.Finished * 100 / b.Of
	}
	end := now
	if s.FinishedAt != nil {
		end = *s.FinishedAt
	}
	if !s.StartedAt.IsZero() && end.After(s.StartedAt) {
		b.Elapsed = end.Sub(s.StartedAt)
		b.PerSecond = float64(b.Finished) / b.Elapsed.Seconds()
	}
	return b
}

// batchList is the batches page.
type batchList struct {
	Rows   []batchRow
	Now    time.Time
	Priced bool // a cost column
	Totals totals
}

func (batchList) title() string { return "Batches" }

func (c *console) batches(r *http.Request) (any, error) {
	list, err := c.opts.Batches.ListBatches(r.Context())
	if err != nil {
		return nil, err
	}
	now := c.now()
	data := batchList{Now: now, Totals: totals{N: len(list), What: "batches"}}
	amount := 0.0
	for _, s := range list {
		row := rowOf(s, now)
		row.Cost = c.cost(s.Model, s.Usage)
		data.Rows = append(data.Rows, row)
		data.Totals.Usage = data.Totals.Usage.Add(s.Usage)
		if a, ok := c.opts.Prices.Cost(s.Model, s.Usage, false); ok {
			amount += a
		} else if c.opts.Prices != nil && s.Usage.Total() > 0 {
			data.Totals.Unpriced++
		}
	}
	data.Priced = c.opts.Prices != nil
	if data.Priced {
		data.Totals.Cost = c.opts.Prices.Format(amount)
	}
	return data, nil
}

// batchPage is a batch's page: its progress and its failed items; a
// replay's, the items of its report that changed (at most Limit).
type batchPage struct {
	Batch   batchRow
	Failed  []batch.Result
	Changed []replay.Item
	Report  bool // the replay's report was read
	Limit   int
	Now     time.Time
}

func (p batchPage) title() string {
	if p.Batch.Kind == batch.KindReplay {
		return "Replay " + p.Batch.ID
	}
	return "Batch " + p.Batch.ID
}

func (c *console) batch(r *http.Request) (any, error) {
	id := r.PathValue("id")
	s, err := c.opts.Batches.Batch(r.Context(), id)
	if err != nil {
		return nil, err
	}
	now := c.now()
	page := batchPage{Batch: rowOf(s, now), Limit: failedLimit, Now: now}
	page.Batch.Cost = c.cost(s.Model, s.Usage)
	if s.Kind == batch.KindReplay && c.opts.Replays != nil {
		rep, err := c.opts.Replays.ReplayReport(r.Context(), id)
		switch {
		case errors.Is(err, replay.ErrNoReport): // not yet, or not kept
		case err != nil:
			return nil, err
		default:
			page.Report = true
			for _, it := range rep.Items {
				if it.Changed && len(page.Changed) < failedLimit {
					page.Changed = append(page.Changed, it)
				}
			}
		}
	}
	if s.Failed > 0 && s.Kind != batch.KindReplay { // a replay's report is its command's
		if page.Failed, err = c.opts.Batches.Results(r.Context(), id, true, failedLimit); err != nil {
			return nil, err
		}
	}
	return page, nil
}
