package console

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/augceo/vibe/process"
)

// dateLayout is how the lists' date filters are written: the value of an
// <input type="date">, a day in UTC.
const dateLayout = "2006-01-02"

// filter is a list's filters and page, as its URL's query gives them:
// status, name (the start of the process's name), from and to (days, UTC,
// both included) and cursor (the engine's, for the page after another).
type filter struct {
	Status, Name, From, To string
	Cursor                 string
	// Problem says why a filter was not taken ("" when all were).
	Problem string
}

// filterOf reads a list's filters from its query. A date that does not
// read is left out, and said so.
func filterOf(q url.Values) filter {
	f := filter{Status: q.Get("status"), Name: strings.TrimSpace(q.Get("name")),
		From: strings.TrimSpace(q.Get("from")), To: strings.TrimSpace(q.Get("to")), Cursor: q.Get("cursor")}
	for _, d := range []*string{&f.From, &f.To} {
		if *d == "" {
			continue
		}
		if _, err := time.Parse(dateLayout, *d); err != nil {
			f.Problem = fmt.Sprintf("%q is no date (YYYY-MM-DD): left out", *d)
			*d = ""
		}
	}
	return f
}

// options are the list options of f, limit processes (or requests) a page.
func (f filter) options(limit int) process.ListOptions {
	opts := process.ListOptions{Limit: limit, Cursor: f.Cursor, Status: process.Status(f.Status), Process: f.Name}
	if t, err := time.Parse(dateLayout, f.From); err == nil {
		opts.Since = t
	}
	if t, err := time.Parse(dateLayout, f.To); err == nil {
		opts.Before = t.AddDate(0, 0, 1) // the whole of the last day
	}
	return opts
}

// Filtered reports whether any filter is set (the list says "match").
func (f filter) Filtered() bool { return f.Status != "" || f.Name != "" || f.From != "" || f.To != "" }

// query is f as a URL query, with cursor for the page.
func (f filter) query(cursor string) string {
	q := url.Values{}
	for k, v := range map[string]string{"status": f.Status, "name": f.Name, "from": f.From, "to": f.To, "cursor": cursor} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

// pager is a list page's links: to the first page (when this is not it)
// and to the next one (when there is one). The engine's cursors go
// forward only, so there is no "previous".
type pager struct {
	First, Next string
	// From is the 1-based place of the page's first row, counted while
	// the person pages on (the "n" of the URL); 0 when unknown.
	From int
}

// pagerOf is the pager of a page of a list at path whose next cursor is
// next; n is the place of the page's first row (the URL's "n").
func pagerOf(path string, f filter, next string, q url.Values, rows int) pager {
	var p pager
	n := 1
	if f.Cursor != "" {
		p.First = path + f.query("")
		if _, err := fmt.Sscan(q.Get("n"), &n); err != nil || n < 1 {
			n = 0
		}
	}
	p.From = n
	if next != "" {
		p.Next = path + f.query(next)
		if n > 0 {
			p.Next += fmt.Sprintf("&n=%d", n+rows)
		}
	}
	return p
}

// span is a duration as a person reads it: "850ms", "12.3s", "4m12s",
// "3h05m", "2d03h".
func span(d time.Duration) string {
	switch {
	case d < 0:
		return ""
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%02dh", int(d.Hours()/24), int(d.Hours())%24)
}

// stamp is a time in a list, in UTC: the time alone when it is on now's
// day, else the day and minute.
func stamp(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	t, now = t.UTC(), now.UTC()
	if t.YearDay() == now.YearDay() && t.Year() == now.Year() {
		return t.Format("15:04:05")
	}
	return t.Format("2006-01-02 15:04")
}

// timed is what a list row shows of when something ran: its start, its end
// (nil while it runs), and how long it took or has taken so far.
type timed struct {
	StartedAt time.Time
	EndedAt   *time.Time
	// Open is set while it runs (or waits): its time counts to now.
	Open bool
}

// Took is how long it ran: to its end, or to now while it runs; "" for
// one that ended at a time not known.
func (t timed) Took(now time.Time) string {
	switch {
	case t.StartedAt.IsZero():
		return ""
	case t.EndedAt != nil:
		return span(t.EndedAt.Sub(t.StartedAt))
	case t.Open:
		return span(now.Sub(t.StartedAt))
	}
	return ""
}

// open reports whether a process of status s still runs.
func open(s process.Status) bool { return s == process.Running || s == process.Waiting }
