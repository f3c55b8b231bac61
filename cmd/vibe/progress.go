package main

import (
	"context"
	"fmt"
	goio "io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/internal/watch"
	"github.com/augceo/vibe/replay"
)

// progress shows a batch's or a replay's progress on stderr: a bar on a
// terminal, a line every few seconds otherwise. Both start where an
// earlier run got; the rates and the time left are this run's.
type progress struct {
	io    stdio
	what  string // "batch ID", "replay ID"
	unit  string // what is counted: "line", "item"
	total int    // the lines or items; -1 when unknown
	bar   *progressbar.ProgressBar
	mu    sync.Mutex
	last  time.Time
}

// newProgress shows a batch over total lines (-1: unknown) of which an
// earlier run wrote those up to after.
func newProgress(io stdio, id string, total, after int) *progress {
	return startProgress(io, "batch "+id, "line", total, after)
}

// startProgress shows what over total units (-1: unknown), of which an
// earlier run did after.
func startProgress(io stdio, what, unit string, total, after int) *progress {
	p := &progress{io: io, what: what, unit: unit, total: total, last: time.Now()}
	if f, ok := io.err.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.barTo(f, after)
	}
	return p
}

// barTo shows the progress as a bar on w, a terminal, from after.
func (p *progress) barTo(w goio.Writer, after int) {
	// The bar's own rate would count the units of earlier runs as done in
	// its first instant: the description gives this run's.
	p.bar = progressbar.NewOptions(p.total, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription(p.what),
		progressbar.OptionShowCount(), progressbar.OptionThrottle(200*time.Millisecond), progressbar.OptionClearOnFinish())
	p.bar.Set(after)
}

// update shows s, this run's totals so far, and line, the last input line
// written.
func (p *progress) update(s batch.Summary, line int) {
	p.show(line, func() string { return p.rates(s, line) })
}

// show moves the progress to at units done, with what text says of it:
// at once on a terminal, every 5 s otherwise (text is not asked between).
func (p *progress) show(at int, text func() string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		p.bar.Describe(fmt.Sprintf("%s: %s", p.what, text()))
		p.bar.Set(at)
		return
	}
	if time.Since(p.last) >= 5*time.Second {
		p.last = time.Now()
		where := fmt.Sprintf("%s %d", p.unit, at)
		if p.total >= 0 {
			where += fmt.Sprintf(" of %d", p.total)
		}
		fmt.Fprintf(p.io.err, "vibe: %s: %s; %s\n", p.what, where, text())
	}
}

// rates says what this run of a batch did and, at its pace, how long the
// rest takes.
func (p *progress) rates(s batch.Summary, line int) string {
	rate := 0.0
	if s.Elapsed > 0 {
		rate = float64(s.Lines) / s.Elapsed.Seconds()
	}
	out := fmt.Sprintf("this run %d ok, %d failed, %.1f items/s, %d tokens", s.Done, s.Failed, rate, s.Usage.Total())
	for _, a := range s.Audits {
		out += fmt.Sprintf(", audit %s %.2f of %d", a.Chunk, a.Agreement(), a.Audited)
	}
	return out + p.left(rate, line)
}

// left says how long the units after at take at rate a second; "" when
// that is not known.
func (p *progress) left(rate float64, at int) string {
	if rate <= 0 || p.total <= at {
		return ""
	}
	return fmt.Sprintf(", about %s left", time.Duration(float64(p.total-at)/rate*float64(time.Second)).Round(time.Second))
}

// replayProgress shows a replay's progress as Progress tells it: the
// items replayed of those with a record, the model requests and tokens
// so far and the items changed so far; the rate and the time left are
// this run's. Its finish ends the bar.
func replayProgress(io stdio, id string, items int) (*progress, func(replay.Progress)) {
	p := startProgress(io, "replay "+id, "item", items, 0)
	start := time.Now()
	return p, func(r replay.Progress) {
		p.show(r.Done, func() string {
			rate := 0.0
			if s := time.Since(start).Seconds(); s > 0 {
				rate = float64(r.Done) / s
			}
			return fmt.Sprintf("%d changed, %d LLM requests, %d tokens, %.1f items/s", r.Changed, r.Requests, r.Usage.Total(), rate) + p.left(rate, r.Done)
		})
	}
}

// note prints a line between the progress updates.
func (p *progress) note(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		p.bar.Clear()
	}
	fmt.Fprintln(p.io.err, msg)
}

func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		p.bar.Finish()
	}
}

// followProvider notes, between the progress updates, where the batch's
// provider batches are whenever that changes, until done is closed: a
// provider batch may take hours, and the progress does not move while it
// runs.
func followProvider(ctx context.Context, c *batch.Client, id string, p *progress, done <-chan struct{}) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-done:
			cancel()
		case <-ctx.Done():
		}
	}()
	read := func(ctx context.Context) (string, error) {
		st, err := c.Status(ctx, id)
		if err != nil {
			return "", err
		}
		return providerText(st.Provider), nil
	}
	// A read that shows nothing (no provider batch yet, or none left)
	// leaves the last note standing.
	same := func(last, now string) bool { return now == "" || now == last }
	for text, err := range watch.Changes(ctx, read, watch.Options[string]{Interval: 5 * time.Second, Equal: same}) {
		if err == nil && text != "" {
			p.note("vibe: provider batches: " + text)
		}
	}
}

// providerText says where a batch's provider batches are: each one's id,
// status and answers, and the calls gathering for the next.
func providerText(pr *batch.ProviderState) string {
	if pr == nil {
		return ""
	}
	var parts []string
	for _, f := range pr.Flights {
		switch {
		case f.ID == "":
			parts = append(parts, fmt.Sprintf("%d requests being submitted", f.Requests))
		default:
			parts = append(parts, fmt.Sprintf("%s %s, %d of %d requests answered", f.ID, f.Status, f.Answered, f.Requests))
		}
	}
	if pr.Pending > 0 {
		parts = append(parts, fmt.Sprintf("%d calls gathering for the next", pr.Pending))
	}
	return strings.Join(parts, "; ")
}
