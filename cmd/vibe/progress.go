package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/internal/watch"
)

// progress shows a batch's progress on stderr: a bar on a terminal, a
// line every few seconds otherwise. Both start at the lines an earlier run
// wrote; the rates and the time left are this run's.
type progress struct {
	io    stdio
	id    string
	total int // the input's lines; -1 when unknown
	bar   *progressbar.ProgressBar
	mu    sync.Mutex
	last  time.Time
}

// newProgress shows a batch over total lines (-1: unknown) of which an
// earlier run wrote those up to after.
func newProgress(io stdio, id string, total, after int) *progress {
	p := &progress{io: io, id: id, total: total, last: time.Now()}
	if f, ok := io.err.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		// The bar's own rate would count the lines of earlier runs as
		// read in its first instant: the description gives this run's.
		p.bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(f), progressbar.OptionSetDescription("batch "+id),
			progressbar.OptionShowCount(), progressbar.OptionThrottle(200*time.Millisecond), progressbar.OptionClearOnFinish())
		p.bar.Set(after)
	}
	return p
}

// update shows s, this run's totals so far, and line, the last input line
// written.
func (p *progress) update(s batch.Summary, line int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		p.bar.Describe(fmt.Sprintf("batch %s: %s", p.id, p.rates(s, line)))
		p.bar.Set(line)
		return
	}
	if time.Since(p.last) >= 5*time.Second {
		p.last = time.Now()
		at := fmt.Sprintf("line %d", line)
		if p.total >= 0 {
			at += fmt.Sprintf(" of %d", p.total)
		}
		fmt.Fprintf(p.io.err, "vibe: batch %s: %s; %s\n", p.id, at, p.rates(s, line))
	}
}

// rates says what this run did and, at its pace, how long the rest takes.
func (p *progress) rates(s batch.Summary, line int) string {
	rate := 0.0
	if s.Elapsed > 0 {
		rate = float64(s.Lines) / s.Elapsed.Seconds()
	}
	out := fmt.Sprintf("this run %d ok, %d failed, %.1f items/s, %d tokens", s.Done, s.Failed, rate, s.Usage.Total())
	for _, a := range s.Audits {
		out += fmt.Sprintf(", audit %s %.2f of %d", a.Chunk, a.Agreement(), a.Audited)
	}
	if rate > 0 && p.total > line {
		out += fmt.Sprintf(", about %s left", time.Duration(float64(p.total-line)/rate*float64(time.Second)).Round(time.Second))
	}
	return out
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
