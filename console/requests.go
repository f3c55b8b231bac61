package console

import (
	"context"
	"net/http"
	"time"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/request"
	"github.com/augceo/vibe/vessel"
)

// requestList is the requests page.
type requestList struct {
	filter
	Statuses []process.Status
	Rows     []requestRow
	Pager    pager
	Problem  string
	Now      time.Time
}

// requestRow is a request in the list.
type requestRow struct{ request.Summary }

// Took is how long the request ran: to its end, or to now while it runs.
func (r requestRow) Took(now time.Time) string {
	return timed{StartedAt: r.StartedAt, EndedAt: r.EndedAt, Open: r.Open()}.Took(now)
}

// Open reports whether the request still runs.
func (r requestRow) Open() bool { return open(r.Status) }

func (requestList) title() string { return "Requests" }

// requests is the list, newest first, a page at a time, filtered by
// status and by the day it started.
func (c *console) requests(r *http.Request) (any, error) {
	q := r.URL.Query()
	f := filterOf(q)
	f.Name = "" // a request has no process name to filter by
	data := requestList{filter: f, Now: c.now(), Problem: f.Problem,
		Statuses: []process.Status{process.Running, process.Completed, process.Failed}}
	page, err := c.opts.Requests.List(r.Context(), f.options(listLimit))
	if err != nil {
		if !f.Filtered() && f.Cursor == "" {
			return nil, err
		}
		data.Problem = err.Error()
		return data, nil
	}
	for _, s := range page.Requests {
		data.Rows = append(data.Rows, requestRow{Summary: s})
	}
	data.Pager = pagerOf("/requests", f, page.Next, q, len(data.Rows))
	return data, nil
}

// requestPage is a request's page: its decision, then per instance the
// calls made for it and its state; a delegate call's sub-request is drawn
// inside its call, as deep as delegates nest.
type requestPage struct {
	Info      *request.Info
	Temporal  string
	Instances []instanceView
	Now       time.Time
}

func (p requestPage) title() string { return p.Info.Vessel + " " + p.Info.ID }

// instanceView is an instance's calls and state; Name "" is the global
// one.
type instanceView struct {
	Name     string
	Calls    []callRow
	State    jsonv.Value
	HasState bool
}

// callRow is a call: what it was asked and what it gave, and where it
// ran: a launched process, or a delegate's sub-request (Sub).
type callRow struct {
	vessel.CallResult
	Process    string
	Sub        *requestPage
	SubProblem string
}

func (c *console) request(r *http.Request) (any, error) {
	info, err := c.opts.Requests.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	return c.requestPage(r.Context(), info, 1), nil
}

func (c *console) requestPage(ctx context.Context, info *request.Info, depth int) *requestPage {
	page := &requestPage{Info: info, Temporal: c.temporalLink(info.ID), Now: c.now()}
	at := map[string]int{}
	instance := func(name string) *instanceView {
		i, ok := at[name]
		if !ok {
			i = len(page.Instances)
			at[name] = i
			page.Instances = append(page.Instances, instanceView{Name: name})
		}
		return &page.Instances[i]
	}
	for name, state := range info.States.Members() {
		iv := instance(name)
		iv.State, iv.HasState = state, true
	}
	for _, call := range info.Calls {
		row := callRow{CallResult: call}
		if call.Run != "" {
			if p := call.Result.Lookup("process"); !p.IsNull() && call.Result.Lookup("id").Str() == call.Run {
				row.Process = call.Run
			} else if depth >= maxNesting {
				row.SubProblem = "nested too deep to draw here: open it on its own page"
			} else if sub, err := c.opts.Requests.Get(ctx, call.Run); err == nil {
				row.Sub = c.requestPage(ctx, sub, depth+1)
			} else {
				row.SubProblem = err.Error()
			}
		}
		iv := instance(call.Instance)
		iv.Calls = append(iv.Calls, row)
	}
	return page
}
