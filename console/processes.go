package console

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/diagram"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/internal/schemaform"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/schema"
)

// processRow is a process in the list.
type processRow struct {
	ID, Process string
	Status      process.Status
	// Waiting is the chunk it waits on for a person; Chunk the one it
	// runs (or failed in).
	Waiting, Chunk string
	Usage          llm.Usage
	// Cost is what its model calls cost at the console's prices; Priced
	// is false when one of their models has no price (or there are no
	// prices).
	Cost     float64
	Priced   bool
	CostText string
	timed
	// Problem says why the process could not be read.
	Problem string
}

// processList is the processes page.
type processList struct {
	filter
	Statuses []process.Status
	Rows     []processRow
	Pager    pager
	Totals   totals
	Problem  string
	Now      time.Time
}

func (processList) title() string { return "Processes" }

// totals are the tokens and cost of the processes on a list's page.
type totals struct {
	// N counts the processes (or batches) added up; What says which
	// ("processes on this page").
	N     int
	What  string
	Usage llm.Usage
	// Cost is the sum of the priced processes' costs, "" without prices;
	// Unpriced counts the processes whose model has no price.
	Cost     string
	Unpriced int
}

// processes is the list, newest first, a page at a time, filtered by
// status, by the start of the process's name and by the day it started;
// the engine filters, so the filter covers every process, not only a
// page.
func (c *console) processes(r *http.Request) (any, error) {
	q := r.URL.Query()
	f := filterOf(q)
	data := processList{filter: f, Now: c.now(), Problem: f.Problem,
		Statuses: []process.Status{process.Running, process.Waiting, process.Completed, process.Failed}}
	page, err := c.opts.Processes.List(r.Context(), f.options(listLimit))
	if err != nil {
		if !f.Filtered() && f.Cursor == "" {
			return nil, err
		}
		// A filter or cursor the engine cannot take is the person's to fix.
		data.Problem = err.Error()
		return data, nil
	}
	data.Rows = c.rows(r.Context(), page.Processes)
	data.Pager = pagerOf("/processes", f, page.Next, q, len(data.Rows))
	data.Totals = c.totals(data.Rows)
	return data, nil
}

// totals adds up rows' tokens and, at the console's prices, their cost.
func (c *console) totals(rows []processRow) totals {
	t := totals{N: len(rows), What: "processes on this page"}
	amount := 0.0
	for _, row := range rows {
		t.Usage = t.Usage.Add(row.Usage)
		if row.Priced {
			amount += row.Cost
		} else if c.opts.Prices != nil && row.Usage.Total() > 0 {
			t.Unpriced++
		}
	}
	if c.opts.Prices != nil {
		t.Cost = c.opts.Prices.Format(amount)
	}
	return t
}

// rows reads each listed process for what it waits for, its chunk and
// its tokens, a few at a time; a finished one is read once.
func (c *console) rows(ctx context.Context, list []process.Summary) []processRow {
	rows := make([]processRow, len(list))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, s := range list {
		c.finishedMu.Lock()
		row, ok := c.finished[s.ID]
		c.finishedMu.Unlock()
		if ok {
			rows[i] = row
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			rows[i] = c.row(ctx, s)
		}()
	}
	wg.Wait()
	return rows
}

func (c *console) row(ctx context.Context, s process.Summary) processRow {
	row := processRow{ID: s.ID, Process: s.Process, Status: s.Status, timed: timed{StartedAt: s.StartedAt, EndedAt: s.EndedAt, Open: open(s.Status)}}
	info, err := c.opts.Processes.Get(ctx, s.ID)
	if err != nil {
		row.Problem = err.Error()
		return row
	}
	row.Status, row.Chunk, row.Usage = info.Status, info.Chunk, info.Usage
	row.Open = open(info.Status)
	row.Cost, row.Priced = c.callsAmount(info.Calls)
	if row.Priced {
		row.CostText = c.opts.Prices.Format(row.Cost)
	}
	if info.EndedAt != nil {
		row.EndedAt = info.EndedAt
	}
	if waiting(info) {
		row.Waiting = info.Waiting.Chunk
	}
	if row.Status == process.Completed || row.Status == process.Failed {
		c.finishedMu.Lock()
		if len(c.finished) >= finishedCap {
			clear(c.finished)
		}
		c.finished[s.ID] = row
		c.finishedMu.Unlock()
	}
	return row
}

// waiting reports whether a process waits for a person's answer now: a
// process cancelled while it waited keeps what it waited for in its view.
func waiting(info *process.Info) bool { return info.Status == process.Waiting && info.Waiting != nil }

// processPage is a process's page.
type processPage struct {
	Info     *process.Info
	Temporal string
	// Picture is the compiled program drawn (diagram.SVG), marked with how
	// far the process has come; "" without a program.
	Picture template.HTML
	Chunks  []chunkView
	// Form is the answer form while the process waits for a person.
	Form *answerForm
	// Failure lists the problems of the answer that failed the process,
	// by path, when a model's answers kept breaking the schema.
	Failure []schema.Invalid
	Now     time.Time
	// Cost is what the process's model calls cost at the console's
	// prices ("" without).
	Cost string
	// Took is how long the process has run (to its end, or so far).
	Took string
	// Cancel and Retry show those buttons: the console can cancel a
	// process that runs or waits, and start a finished one again.
	Cancel, Retry bool
}

func (p processPage) title() string { return p.Info.Process + " " + p.Info.ID }

// chunkView is one chunk of a process's page.
type chunkView struct {
	N     int // 1-based place in execution order; the picture links to #chunk-N
	Name  string
	Kind  compile.Kind
	State string // done, running, waiting, failed, or pending
	Steps []stepView
	// Calls are the chunk's model calls (one per loop round).
	Calls []callView
	// Schema is what the model (or person) was given to fill.
	Schema   jsonv.Value
	Thinking jsonv.Value // the chunk's own "_" fields
	Metrics  jsonv.Value
	// Took is how long the chunk ran (a USER chunk: waited for a person),
	// "" when the process kept no timings; Running is set while it runs.
	Took    string
	Running bool
	// Answered is who answered a USER chunk, and when.
	Answered *process.Answered
}

// stepView is one step of a chunk.
type stepView struct {
	Name, Qualified string
	Action          string
	FireAndForget   bool
	References      []string
	// Output is its value in the state; Input a blocking action's input.
	Output, Input jsonv.Value
	HasOutput     bool
	// Thinking and Metrics are its "_" and "$" fields, apart from Output.
	Thinking, Metrics jsonv.Value
	Usage             *llm.Usage
	// ActionStatus is a fire-and-forget action's: started, completed or
	// failed: ….
	ActionStatus string
	// Took is how long a blocking action ran (retries included), "" when
	// the process kept no timings.
	Took string
}

// callView is one model call: what it was sent, and each turn.
type callView struct {
	System, Prompt string
	Context        jsonv.Value
	Model          string
	Replayed       bool
	Usage          llm.Usage
	LatencyMs      int64
	Turns          []turnView
}

// turnView is one answer of a call; every one after the first is a repair
// turn, sent back with the problems of the one before.
type turnView struct {
	N          int
	Answer     string // pretty when it is JSON, else as the model wrote it
	Problems   []schema.Invalid
	ParseError string
	Usage      llm.Usage
	LatencyMs  int64
	Model      string
}

func (c *console) process(r *http.Request) (any, error) {
	id := r.PathValue("id")
	info, err := c.opts.Processes.Get(r.Context(), id)
	if err != nil {
		return nil, err
	}
	return c.processPage(r.Context(), info, nil)
}

// processPage shows info; form, when set, is the answer form as posted
// (with its problems).
func (c *console) processPage(ctx context.Context, info *process.Info, form *answerForm) (processPage, error) {
	now := c.now()
	page := processPage{Info: info, Temporal: c.temporalLink(info.ID), Now: now, Form: form, Cost: c.callsCost(info.Calls),
		Took:   timed{StartedAt: info.StartedAt, EndedAt: info.EndedAt, Open: open(info.Status)}.Took(now),
		Cancel: c.canceler != nil && info.Direct == nil && (info.Status == process.Running || info.Status == process.Waiting),
		Retry:  c.retrier != nil && (info.Status == process.Completed || info.Status == process.Failed)}
	if page.Form == nil && waiting(info) {
		page.Form = newAnswerForm(info, jsonv.Value{}, nil, "")
	}
	prog, err := c.program(ctx, info.ID)
	if err != nil && !errors.Is(err, process.ErrNotFound) {
		c.opts.Logger.Warn("console: no program", "process", info.ID, "err", err)
	}
	if prog == nil {
		return page, nil
	}
	marks := diagram.Marks{Done: info.Done, Current: info.Chunk, Failed: info.Status == process.Failed,
		Waiting: info.Status == process.Waiting, Links: true}
	var svg strings.Builder
	if err := diagram.SVG(&svg, prog, marks); err == nil {
		// diagram escapes every name it draws.
		page.Picture = template.HTML(svg.String())
	}
	page.Chunks = chunkViews(prog, info, now)
	if info.Status == process.Failed && len(info.Calls) > 0 {
		last := info.Calls[len(info.Calls)-1]
		if last.Chunk == info.Chunk && len(last.Turns) > 0 {
			page.Failure = last.Turns[len(last.Turns)-1].Problems
		}
	}
	return page, nil
}

// callsCost is what calls cost at the console's prices, each by its own
// model; "" when a call's model has no price.
func (c *console) callsCost(calls []process.ModelCall) string {
	if len(calls) == 0 {
		return ""
	}
	if total, ok := c.callsAmount(calls); ok {
		return c.opts.Prices.Format(total)
	}
	return ""
}

// callsAmount is what calls cost at the console's prices; ok is false
// when a call's model has no price, or the console has no prices.
func (c *console) callsAmount(calls []process.ModelCall) (total float64, ok bool) {
	if c.opts.Prices == nil {
		return 0, false
	}
	for _, call := range calls {
		amount, ok := c.opts.Prices.Cost(call.Model, call.Usage, false)
		if !ok {
			return 0, false
		}
		total += amount
	}
	return total, true
}

// chunkViews lays out what each chunk did, in execution order.
func chunkViews(prog *compile.Program, info *process.Info, now time.Time) []chunkView {
	out := make([]chunkView, len(prog.Chunks))
	for i := range prog.Chunks {
		ch := &prog.Chunks[i]
		cv := chunkView{N: i + 1, Name: ch.Name, Kind: ch.Kind, State: chunkState(ch.Name, info), Schema: ch.Schema,
			Thinking: info.Thinking.Lookup(ch.Name), Metrics: info.Metrics.Lookup(ch.Name)}
		cv.Took, cv.Running = took(info, ch.Name, "", now)
		for _, a := range info.Answers {
			if a.Chunk == ch.Name {
				cv.Answered = &a
			}
		}
		for j := range ch.Steps {
			sv := stepOf(&ch.Steps[j], info)
			// Only a SERVER chunk's actions have timings of their own.
			sv.Took, _ = took(info, ch.Name, sv.Qualified, now)
			cv.Steps = append(cv.Steps, sv)
		}
		for _, call := range info.Calls {
			if call.Chunk == ch.Name {
				cv.Calls = append(cv.Calls, callOf(call))
			}
		}
		out[i] = cv
	}
	return out
}

// took is how long chunk (or its step, when set) ran, by the process's
// timings: to its end, or to now while it runs (running). The last timing
// counts: a chunk runs once.
func took(info *process.Info, chunk, step string, now time.Time) (d string, running bool) {
	for i := len(info.Timings) - 1; i >= 0; i-- {
		t := info.Timings[i]
		if t.Chunk != chunk || t.Step != step {
			continue
		}
		if t.End != nil {
			return span(t.End.Sub(t.Start)), false
		}
		if info.Status == process.Failed || info.Status == process.Completed {
			return "", false // ended without its end recorded: cancelled
		}
		return span(now.Sub(t.Start)), true
	}
	return "", false
}

func chunkState(name string, info *process.Info) string {
	switch {
	case slices.Contains(info.Done, name):
		return "done"
	case name != info.Chunk:
		return "pending"
	case info.Status == process.Failed:
		return "failed"
	case info.Status == process.Waiting:
		return "waiting"
	}
	return "running"
}

func stepOf(s *compile.ProgramStep, info *process.Info) stepView {
	q := s.Qualified()
	sv := stepView{Name: s.Name, Qualified: q, Action: s.Action, FireAndForget: s.FireAndForget,
		Thinking: info.Thinking.Lookup(q), Metrics: info.Metrics.Lookup(q), ActionStatus: actionStatus(info, q)}
	for _, r := range s.References {
		sv.References = append(sv.References, r.String())
	}
	if v, err := info.State.At(s.State.Pointer()); err == nil {
		sv.Output, sv.HasOutput = v, true
		if s.Blocking {
			sv.Input, sv.Output = v.Lookup("input"), v.Lookup("output")
		}
	}
	for _, u := range info.StepUsage {
		if u.Step == q {
			sv.Usage = &u.Usage
		}
	}
	return sv
}

func callOf(call process.ModelCall) callView {
	cv := callView{System: call.System, Prompt: call.Prompt, Context: call.Context, Model: call.Model, Replayed: call.Replayed, Usage: call.Usage}
	for i, t := range call.Turns {
		cv.LatencyMs += t.LatencyMs
		cv.Turns = append(cv.Turns, turnView{N: i + 1, Answer: prettyText(t.Answer), Problems: t.Problems, ParseError: t.ParseError,
			Usage: t.Usage, LatencyMs: t.LatencyMs, Model: t.Model})
	}
	return cv
}

// prettyText indents a model's answer when it is JSON, and leaves it as
// written when it is not (a repair turn shows what could not be read).
func prettyText(s string) string {
	v, err := jsonv.Parse([]byte(s))
	if err != nil {
		return s
	}
	return string(jsonv.MarshalIndent(v, "  "))
}

// answerForm is the form that answers a waiting process.
type answerForm struct {
	ID, Chunk string
	Fields    template.HTML
	Context   jsonv.Value
	// From is the page the form was posted from (inbox or process), to
	// show it again there after a refusal.
	From string
	// Problems are the refused answer's, by path (Fields shows them at
	// their fields too); Message says why a post was not taken.
	Problems []schema.Invalid
	Message  string
}

func newAnswerForm(info *process.Info, value jsonv.Value, problems []schema.Invalid, message string) *answerForm {
	return &answerForm{ID: info.ID, Chunk: info.Waiting.Chunk, Context: info.Waiting.Context,
		Fields: schemaform.Render(info.Waiting.Schema, value, problems), Problems: problems, Message: message}
}

// inboxPage lists the processes that wait for a person, each with its
// form.
type inboxPage struct {
	Forms []inboxItem
	Pager pager
	Now   time.Time
}

type inboxItem struct {
	Info *process.Info
	Form *answerForm
}

func (inboxPage) title() string { return "Inbox" }

func (c *console) inbox(r *http.Request) (any, error) {
	return c.inboxPage(r.Context(), r.URL.Query(), nil)
}

// inboxPage reads the waiting processes, a page at a time (q's cursor);
// posted, when set, is the form of one of them as it was posted.
func (c *console) inboxPage(ctx context.Context, q url.Values, posted *answerForm) (inboxPage, error) {
	f := filter{Cursor: q.Get("cursor")}
	page, err := c.opts.Processes.List(ctx, process.ListOptions{Limit: listLimit, Status: process.Waiting, Cursor: f.Cursor})
	if err != nil {
		return inboxPage{}, err
	}
	data := inboxPage{Now: c.now()}
	ids := make([]string, 0, len(page.Processes))
	for _, s := range page.Processes {
		ids = append(ids, s.ID)
	}
	if f.Cursor == "" {
		// The batches' waiting items come on the first page, after the
		// processes; they are not among the listed processes.
		ids = append(ids, c.waitingItems(ctx)...)
	}
	for _, id := range ids {
		info, err := c.opts.Processes.Get(ctx, id)
		if err != nil || !waiting(info) {
			continue // answered, or gone, since it was listed
		}
		form := newAnswerForm(info, jsonv.Value{}, nil, "")
		if posted != nil && posted.ID == info.ID {
			form = posted
		}
		form.From = "inbox"
		data.Forms = append(data.Forms, inboxItem{Info: info, Form: form})
	}
	data.Pager = pagerOf("/inbox", f, page.Next, q, len(page.Processes))
	return data, nil
}

// waitingItems are the ids of the running batches' items that wait for a
// person, at most listLimit of them; none without Options.Batches that
// implements WaitingItems. A batch that cannot be read is logged and
// left out.
func (c *console) waitingItems(ctx context.Context) []string {
	w, ok := c.opts.Batches.(WaitingItems)
	if !ok {
		return nil
	}
	list, err := c.opts.Batches.ListBatches(ctx)
	if err != nil {
		c.opts.Logger.Warn("console: inbox: list the batches", "err", err)
		return nil
	}
	var ids []string
	for _, b := range list {
		if (b.Status != batch.StatusRunning && b.Status != batch.StatusHeld) || b.Waiting == 0 {
			continue
		}
		some, err := w.WaitingItems(ctx, b.ID)
		if err != nil {
			c.opts.Logger.Warn("console: inbox: the waiting items of a batch", "batch", b.ID, "err", err)
		}
		ids = append(ids, some...)
		if len(ids) >= listLimit {
			return ids[:listLimit]
		}
	}
	return ids
}

// answer takes a person's answer from a form: the answer is what the
// form says (schemaform.Parse), checked by the engine as the API's
// answers are. A refused answer shows the form again with each problem at
// its field, and the process keeps waiting; a taken one goes to the
// process's page.
func (c *console) answer(w http.ResponseWriter, r *http.Request) {
	if !c.postForm(w, r, durable.MaxPayloadSize) {
		return
	}
	ctx := r.Context()
	id := r.PathValue("id")
	info, err := c.opts.Processes.Get(ctx, id)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	from := r.PostFormValue("from")
	if !waiting(info) {
		c.showForm(w, r, info, from, http.StatusConflict, nil)
		return
	}
	value := schemaform.Parse(info.Waiting.Schema, r.PostForm)
	if as, ok := c.opts.Processes.(AnswersAs); ok {
		_, err = as.AnswerAs(ctx, id, value, c.who(r))
	} else {
		_, err = c.opts.Processes.Answer(ctx, id, value)
	}
	var refused *process.RefusedError
	var notWaiting *process.NotWaitingError
	var tooLarge *durable.TooLargeError
	switch {
	case errors.As(err, &refused):
		c.showForm(w, r, info, from, http.StatusUnprocessableEntity, newAnswerForm(info, value, refused.Problems(), "The answer does not fit; the process keeps waiting."))
	case errors.As(err, &notWaiting):
		info, _ := c.opts.Processes.Get(ctx, id)
		c.showForm(w, r, info, from, http.StatusConflict, nil)
	case errors.As(err, &tooLarge):
		c.showForm(w, r, info, from, http.StatusRequestEntityTooLarge, newAnswerForm(info, value, nil, err.Error()))
	case err != nil:
		c.fail(w, r, err)
	default:
		http.Redirect(w, r, "/processes/"+pathEscape(id), http.StatusSeeOther)
	}
}

// showForm shows the page a form was posted from again: the inbox, or
// the process's page.
func (c *console) showForm(w http.ResponseWriter, r *http.Request, info *process.Info, from string, status int, form *answerForm) {
	if info == nil {
		c.fail(w, r, &pageError{status: status, msg: "the process is gone"})
		return
	}
	if from == "inbox" {
		data, err := c.inboxPage(r.Context(), url.Values{}, form)
		if err != nil {
			c.fail(w, r, err)
			return
		}
		if form == nil {
			data.Forms = append([]inboxItem{{Info: info, Form: &answerForm{ID: info.ID, From: "inbox",
				Message: "The process " + string(info.Status) + " and waits for no answer."}}}, data.Forms...)
		}
		c.render(w, r, status, "inbox", data)
		return
	}
	page, err := c.processPage(r.Context(), info, form)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	c.render(w, r, status, "process", page)
}

// actionStatus is what fire-and-forget step q (qualified name) has come to:
// its attempts and last error when its run was read, else the view's word.
func actionStatus(info *process.Info, q string) string {
	for _, r := range info.ActionRuns {
		if r.Step != q {
			continue
		}
		n := fmt.Sprintf("%d attempts", r.Attempts)
		if r.Attempts == 1 {
			n = "1 attempt"
		}
		switch r.Status {
		case process.ActionCompleted:
			return "completed after " + n
		case process.ActionFailed:
			return "failed after " + n + ": " + r.LastError
		case process.ActionUnknown:
			return "ended, how is not known: " + r.LastError
		}
		s := "running, " + n + " so far"
		if r.LastError != "" {
			s += "; the last failed: " + r.LastError
		}
		return s
	}
	return info.Actions[q]
}
