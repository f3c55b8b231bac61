package batch

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/replay/record"
)

// DefaultWindow is how long a group waits, once no more of its items ask
// for a chunk, for the others still running before it asks the model for
// those that did. Items that all reach a chunk — the first one, or the
// next after their actions — are sent at once; the window only keeps an
// item whose action takes long from holding up its siblings for good.
const DefaultWindow = 5 * time.Second

// GroupInput is one group of a batch: up to K items of one process.
type GroupInput struct {
	Batch   string           `json:"batch"`
	Index   int              `json:"index"`
	Name    string           `json:"name"`
	Program *compile.Program `json:"program"`
	// Prompt is the prompt of an item that gives none (a pipeline's own);
	// System the system text of every call.
	Prompt string      `json:"prompt,omitempty"`
	System string      `json:"system,omitempty"`
	Items  []Item      `json:"items"`
	Call   CallOptions `json:"call,omitzero"`
	// Window is DefaultWindow when 0.
	Window time.Duration `json:"window,omitempty"`
	// Actions bounds the actions the group's items run at once; 0 means
	// DefaultActions.
	Actions int `json:"actions,omitempty"`
	// Again, set when the group runs again because its run before stopped
	// at an item that failed for a reason not its own, or to ask its
	// failed items again (Options.RetryFailed), are that run's counts: the
	// batch's record takes this run's in their place.
	Again *GroupCounts `json:"again,omitempty"`
	// ModelQueue is the task queue of the group's model calls — its
	// multiplexed ones and its items' own (durable.Start.ModelQueue of the
	// batch's process) —; "" is the group's own, as for a group started
	// before model calls were routed.
	ModelQueue string `json:"modelQueue,omitempty"`
	// ActionQueues are the task queues of the items' actions, by the name
	// their steps call them (durable.Start.ActionQueues of the batch's
	// process): only a worker that has an action takes its calls. Nil
	// runs them on the group's own queue, as a group started before the
	// items' actions were routed, or by a client that knows no worker's
	// actions (Client.Processes without Registered), does.
	ActionQueues map[string]string `json:"actionQueues,omitempty"`
}

// GroupCounts are the items of a group's run that completed and failed.
type GroupCounts struct {
	Done   int `json:"done"`
	Failed int `json:"failed"`
}

// Item is one input line of a batch.
type Item struct {
	Line   int         `json:"line"`
	Prompt string      `json:"prompt,omitempty"`
	Input  jsonv.Value `json:"input,omitzero"`
	// Error, when set, is why the line is no item (not JSON, a field of
	// the wrong kind): its result says so and no process starts for it.
	Error string `json:"error,omitempty"`
	// Audit asks the item's LLM chunks alone too (Options.Audit).
	Audit bool `json:"audit,omitempty"`
	// Kept, set when the group runs again to ask its failed items again
	// (Options.RetryFailed), is the item's result of the run before, which
	// completed: it is kept, and the item is not run again.
	Kept *Result `json:"kept,omitempty"`
}

// GroupResult is what a group did: a result per line, in order, and the
// group's model calls.
type GroupResult struct {
	Index    int       `json:"index"`
	Results  []Result  `json:"results"`
	Usage    llm.Usage `json:"usage"`
	Requests int       `json:"requests"`
	// Model is the model that answered the group's calls, as the provider
	// named it ("" when none was made).
	Model string `json:"model,omitempty"`
	// Cancelled says the batch was cancelled (Client.Cancel) before or
	// while the group ran: a run stops reading its input.
	Cancelled bool `json:"cancelled,omitempty"`
	// Splits are the chunks whose calls could not be answered whole, each
	// with the size asked and the size that passed (mergeSplits).
	Splits []Split `json:"splits,omitempty"`
	// Audits are what the group's audits came to, by chunk.
	Audits []AuditCount `json:"audits,omitempty"`
}

// GroupReport is what a group tells its batch (SignalGroup): that it
// started with Items lines, and when Finished what they came to.
type GroupReport struct {
	Index int `json:"index"`
	Items int `json:"items"`
	// First and Last are the input lines of the group's first and last
	// items: the batch finds an item's group by its line (QueryGroup).
	First    int          `json:"first,omitempty"`
	Last     int          `json:"last,omitempty"`
	Finished bool         `json:"finished,omitempty"`
	Done     int          `json:"done,omitempty"`
	Failed   int          `json:"failed,omitempty"`
	Usage    llm.Usage    `json:"usage,omitzero"`
	Requests int          `json:"requests,omitempty"`
	Model    string       `json:"model,omitempty"`
	Splits   []Split      `json:"splits,omitempty"`
	Audits   []AuditCount `json:"audits,omitempty"`
	// Changed counts the items whose answers a replay found changed
	// (Status.Changed).
	Changed int `json:"changed,omitempty"`
	// Spent marks a report of what a running group's calls have spent so
	// far (Usage, Requests, Model), sent after each fill: the record shows
	// it until the group's final report takes its place.
	Spent bool `json:"spent,omitempty"`
	// Again are the counts of the group's run before, which these replace
	// (GroupInput.Again).
	Again *GroupCounts `json:"again,omitempty"`
}

// Workflows holds the batch runtime's workflow functions; they need the
// worker's actions only for their retry policies and timeouts.
type Workflows struct {
	Actions *action.Registry
}

// item states in a group.
type itemState int

const (
	running  itemState = iota // between chunks the group fills, or at its action
	asking                    // asked for a chunk, not yet sent
	acting                    // asked for its action, not yet sent
	inflight                  // its chunk is being filled
	waiting                   // waits for a person
	done
)

// DefaultActions bounds the actions a group's items run at once.
const DefaultActions = 16

// group is one group's driver: its items' interpreters run as coroutines,
// and it fills their LLM chunks together.
type group struct {
	in      GroupInput
	id      string
	started time.Time
	sel     workflow.Selector
	items   []member // by the group's lines, in order
	byID    map[string]int
	poke    workflow.Channel // an item changed its state
	slots   workflow.Channel // a slot per action that may run at once
	acts    *action.Registry
	res     GroupResult
	open    int // items not done
	// The window: open while a timer runs; lastAsk is when the newest ask
	// came, gen tells a live timer from a cancelled one.
	timerOn  bool
	windowUp bool
	gen      int
	cancel   workflow.CancelFunc
	lastAsk  time.Time
	// Fills handed to the provider batches (CallOptions.ProviderBatch),
	// by key; pseq numbers them.
	prov map[string]*provFill
	pseq int
	// live: the group reports what its calls spend as they are answered
	// (liveUsage).
	live bool
	// waited: an item began to wait for a person since the group's
	// records were last kept (keepWaiting).
	waited bool
	// reported: the batch's record took the group's first report;
	// recordGone: it could not, for the record is gone.
	reported, recordGone bool
}

// member is one line of a group: its item's process and where it stands.
type member struct {
	r     *process.Interpreter // nil for a line that is no item
	state itemState
	// What the item asked for while asking (a chunk, with the context it
	// sent) or acting (an action), and where it waits for the answer.
	chunk   int
	context jsonv.Value
	call    durable.ActionInput
	reply   workflow.Settable
}

// provFill is a fill a group handed to its batch's provider batches: the
// input, the group's items it is for (parallel to in.Items), and the
// provider batches it has been in.
type provFill struct {
	in      FillInput
	items   []int
	attempt int
}

// Group runs a group of a batch: each item's process (ItemID) is
// interpreted in this workflow, as one of its coroutines — the same
// interpreter as a process's own workflow (process.Interpreter), so every
// semantic of a process holds per item — and the group is their Host. It
// fills their LLM chunks for all its items at once — when every item
// still running has asked for one, or Window after the first asked — with
// one multiplexed call (Activities.Fill), and hands each item its part; an
// item's actions run as activities of their own, under the item's
// idempotency key, at most Actions at a time. An item waiting for a
// person waits here (UpdateItemAnswer) while its siblings go on, and each
// item is read by its id (QueryItem). It returns when every item has
// finished.
func (w *Workflows) Group(ctx workflow.Context, in GroupInput) (GroupResult, error) {
	n := len(in.Items)
	g := &group{in: in, id: workflow.GetInfo(ctx).WorkflowExecution.ID, started: workflow.GetInfo(ctx).WorkflowStartTime, sel: workflow.NewSelector(ctx),
		items: make([]member, n), byID: make(map[string]int, n), poke: workflow.NewBufferedChannel(ctx, n+1), acts: w.Actions,
		res: GroupResult{Index: in.Index, Results: make([]Result, n)}}
	if in.Window <= 0 {
		g.in.Window = DefaultWindow
	}
	g.live = workflow.GetVersion(ctx, liveUsage, workflow.DefaultVersion, 1) >= 1
	g.slots = workflow.NewBufferedChannel(ctx, g.actions())
	if err := g.handlers(ctx); err != nil {
		return g.res, err
	}
	first := GroupReport{Index: in.Index, Items: n, First: in.Items[0].Line, Last: in.Items[n-1].Line}
	if workflow.GetVersion(ctx, reportAlongChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		if err := g.report(ctx, first).Get(ctx, nil); err != nil {
			return g.gone(), nil
		}
		g.reported = true
	} else {
		// The items' first model calls go with the report, not after its
		// answer; their actions wait for it (dispatch). A record gone
		// cancels what the group began.
		var cancel workflow.CancelFunc
		ctx, cancel = workflow.WithCancel(ctx)
		g.sel.AddFuture(g.report(ctx, first), func(f workflow.Future) {
			if f.Get(ctx, nil) != nil {
				g.recordGone = true
				cancel()
				return
			}
			g.reported = true
		})
	}
	g.sel.AddReceive(g.poke, func(c workflow.ReceiveChannel, _ bool) {
		for c.ReceiveAsync(nil) {
		}
	})
	if in.Call.ProviderBatch {
		g.prov = map[string]*provFill{}
		g.sel.AddReceive(workflow.GetSignalChannel(ctx, SignalProviderDone), func(c workflow.ReceiveChannel, _ bool) {
			var d ProviderDone
			c.Receive(ctx, &d)
			g.collect(ctx, d)
		})
	}
	for i, it := range in.Items {
		g.start(ctx, i, it)
	}
	for g.open > 0 || !g.reported {
		g.sel.Select(ctx)
		if g.recordGone {
			return g.gone(), nil
		}
		g.dispatch(ctx)
		g.keepWaiting(ctx)
	}
	rep := GroupReport{Index: in.Index, Items: n, Finished: true, Usage: g.res.Usage, Requests: g.res.Requests, Model: g.res.Model, Splits: g.res.Splits, Audits: g.res.Audits, Again: in.Again}
	for _, r := range g.res.Results {
		if r.Status == StatusCompleted {
			rep.Done++
		} else {
			rep.Failed++
		}
	}
	_ = g.report(ctx, rep).Get(ctx, nil)
	durable.Keep(ctx, func() []record.Record { return g.records(ctx) })
	g.res.Cancelled = ctx.Err() != nil
	g.trim()
	return g.res, nil
}

// gone is the group's result when the batch's record is gone: it was
// cancelled (or finished, and the group's lines are new to it). The
// group's items do not count; none of their actions ran.
func (g *group) gone() GroupResult {
	g.res.Cancelled = true
	for i, it := range g.in.Items {
		g.res.Results[i] = Result{Line: it.Line, Status: StatusFailed, Error: fmt.Sprintf("batch %s was cancelled (or had finished) before this group began", g.in.Batch)}
	}
	return g.res
}

// handlers answer for the group's items by their ids: their views and
// programs, and a person's answer to one.
func (g *group) handlers(ctx workflow.Context) error {
	item := func(id string) (*process.Interpreter, error) {
		if i, ok := g.byID[id]; ok && g.items[i].r != nil {
			return g.items[i].r, nil
		}
		return nil, durable.NotHosted(process.ErrNotFound, id)
	}
	err := workflow.SetQueryHandler(ctx, durable.QueryItem, func(id string) (process.Info, error) {
		if kept, ok := g.kept(id); ok {
			return kept, nil
		}
		r, err := item(id)
		if err != nil {
			return process.Info{}, err
		}
		return process.Info{ID: id, Process: r.Name(), View: r.View(), StartedAt: g.started}, nil
	})
	if err != nil {
		return err
	}
	err = workflow.SetQueryHandler(ctx, QueryWaiting, func() ([]string, error) {
		var ids []string
		for i, m := range g.items {
			if m.state == waiting && m.r != nil {
				ids = append(ids, g.res.Results[i].ID)
			}
		}
		return ids, nil
	})
	if err != nil {
		return err
	}
	err = workflow.SetQueryHandler(ctx, durable.QueryItemProgram, func(id string) (*compile.Program, error) {
		if _, ok := g.kept(id); ok {
			return g.in.Program, nil
		}
		r, err := item(id)
		if err != nil {
			return nil, err
		}
		return r.Program(), nil
	})
	if err != nil {
		return err
	}
	return workflow.SetUpdateHandlerWithOptions(ctx, durable.UpdateItemAnswer,
		// by, who sent the answer, is optional as it is for a process's own
		// workflow (process.Client.AnswerAs).
		func(ctx workflow.Context, id string, answer jsonv.Value, by string) (process.View, error) {
			r, err := item(id)
			if err != nil {
				return process.View{}, err
			}
			return r.Accept(ctx, answer, by)
		},
		workflow.UpdateHandlerOptions{Validator: func(id string, answer jsonv.Value, by string) error {
			r, err := item(id)
			if err != nil {
				return err
			}
			return r.Validate(answer, by)
		}})
}

// start runs item i's process as a coroutine, or records why the line is
// no item.
func (g *group) start(ctx workflow.Context, i int, it Item) {
	id := ItemID(g.in.Batch, it.Line)
	g.res.Results[i] = Result{Line: it.Line, ID: id}
	if it.Error != "" {
		g.res.Results[i] = Result{Line: it.Line, Status: StatusFailed, Error: it.Error}
		g.items[i].state = done
		return
	}
	if it.Kept != nil { // completed in the group's run before
		g.res.Results[i] = *it.Kept
		g.res.Results[i].Line, g.res.Results[i].ID = it.Line, id
		g.items[i].state = done
		g.byID[id] = i
		return
	}
	g.byID[id] = i
	g.open++
	prompt := it.Prompt
	if prompt == "" {
		prompt = g.in.Prompt
	}
	r := process.NewInterpreter(id, durable.Start{Name: g.in.Name, Program: g.in.Program, Prompt: prompt, Input: it.Input, System: g.in.System, Instance: id,
		ModelQueue: g.in.ModelQueue, ActionQueues: g.in.ActionQueues})
	g.items[i].r = r
	workflow.Go(ctx, func(ctx workflow.Context) {
		err := r.Run(ctx, &itemHost{g: g, i: i})
		g.items[i].state = done
		g.open--
		res := &g.res.Results[i]
		if err != nil {
			res.Status, res.Error, res.Systemic = StatusFailed, durable.ErrorText(err), durable.Systemic(err)
		} else {
			res.Status, res.Output = StatusCompleted, output(r.View().State)
		}
		g.poke.Send(ctx, nil)
	})
}

// kept is what is known of item id when it was kept from the group's run
// before (Item.Kept): completed, with its output and input as its state.
func (g *group) kept(id string) (process.Info, bool) {
	i, ok := g.byID[id]
	if !ok || g.items[i].r != nil || g.in.Items[i].Kept == nil {
		return process.Info{}, false
	}
	it := g.in.Items[i]
	state, err := jsonv.Parse(it.Kept.Output)
	if err != nil || state.Object() == nil {
		state = jsonv.ObjectValue()
	}
	if !it.Input.IsNull() {
		state.Object().Set("input", it.Input)
	}
	return process.Info{ID: id, Process: g.in.Name, View: process.View{Status: process.Completed, Done: []string{}, State: state}, StartedAt: g.started}, true
}

// itemHost is the group as one item's Host.
type itemHost struct {
	g *group
	i int
}

// Fill asks the group for the item's part of the group's call for chunk
// idx, and waits for it. A chunk with a loop is asked alone: its attempts
// differ per item.
func (h *itemHost) Fill(ctx workflow.Context, idx int, in durable.FillInput) (durable.FillOutput, error) {
	g := h.g
	if g.in.Program.Chunks[idx].Loop != nil {
		return durable.ExecuteFill(ctx, in)
	}
	f, set := workflow.NewFuture(ctx)
	m := &g.items[h.i]
	m.state, m.chunk, m.context, m.reply = asking, idx, in.Context, set
	g.lastAsk = workflow.Now(ctx)
	g.poke.Send(ctx, nil)
	var out durable.FillOutput
	err := f.Get(ctx, &out)
	return out, err
}

// Action has the group run the item's action together with its
// siblings' calls of the same step (one activity, each call with its own
// idempotency key and result), and waits for its result. A call that
// failed and may succeed later is retried alone, as a process's own action
// is (ExecuteAction): a sibling's call is never run again for it.
func (h *itemHost) Action(ctx workflow.Context, in durable.ActionInput) (jsonv.Value, error) {
	g := h.g
	f, set := workflow.NewFuture(ctx)
	m := &g.items[h.i]
	m.state, m.call, m.reply = acting, in, set
	g.poke.Send(ctx, nil)
	var res durable.ActionResult
	err := f.Get(ctx, &res)
	switch {
	case err == nil && res.Error == "":
		return res.Output, nil
	case err == nil && res.NonRetryable:
		return jsonv.Value{}, temporal.NewNonRetryableApplicationError(res.Error, res.Type, nil)
	}
	// Alone, with the action's own retries, in one of the group's slots.
	g.slots.Send(ctx, nil)
	defer g.slots.Receive(ctx, nil)
	return durable.ExecuteAction(ctx, g.acts, in)
}

// Status keeps the group's state of the item: one waiting for a person is
// not waited for by its siblings' calls.
func (h *itemHost) Status(ctx workflow.Context, s process.Status) {
	g := h.g
	switch {
	case s == process.Waiting:
		g.items[h.i].state = waiting
		g.waited = true
	case s == process.Running && g.items[h.i].state == waiting:
		g.items[h.i].state = running
	default:
		return
	}
	g.poke.Send(ctx, nil)
}

// output is an item's output: its process state but for its input.
func output(state jsonv.Value) json.RawMessage {
	out := state.Clone()
	if o := out.Object(); o != nil {
		o.Delete("input")
	}
	return jsonv.Marshal(out)
}

// dispatch sends the chunks asked for when no item is still running, or
// the window since the first ask is up; else it opens the window.
func (g *group) dispatch(ctx workflow.Context) {
	var ask, act []int
	for i, m := range g.items {
		switch m.state {
		case asking:
			ask = append(ask, i)
		case acting:
			act = append(act, i)
		}
	}
	if !g.reported {
		act = nil // an action runs once the record has the group
	}
	if len(ask) == 0 && len(act) == 0 {
		return
	}
	ready := g.windowUp || !slices.ContainsFunc(g.items, func(m member) bool { return m.state == running })
	if !ready {
		if !g.timerOn {
			g.arm(ctx, g.in.Window)
		}
		return
	}
	if g.timerOn {
		g.cancel()
		g.timerOn = false
	}
	g.gen++
	g.windowUp = false
	// One call per chunk asked for, in program order.
	var chunks []int
	for _, i := range ask {
		if !slices.Contains(chunks, g.items[i].chunk) {
			chunks = append(chunks, g.items[i].chunk)
		}
	}
	slices.Sort(chunks)
	for _, c := range chunks {
		var items []int
		for _, i := range ask {
			if g.items[i].chunk == c {
				items = append(items, i)
			}
		}
		g.fill(ctx, c, items)
	}
	// One activity per step whose action is asked for.
	var steps []string
	for _, i := range act {
		if !slices.Contains(steps, g.items[i].call.Step) {
			steps = append(steps, g.items[i].call.Step)
		}
	}
	for _, step := range steps {
		var items []int
		for _, i := range act {
			if g.items[i].call.Step == step {
				items = append(items, i)
			}
		}
		for _, part := range g.split(items) {
			g.act(ctx, part)
		}
	}
}

// split cuts the items acting at one step into parts whose calls fit one
// activity's input well within the engine's payload limit (half of it):
// big inputs go in more activities, never in one the engine refuses.
func (g *group) split(items []int) [][]int {
	var parts [][]int
	var part []int
	size := 0
	for _, i := range items {
		c := &g.items[i].call
		n := len(jsonv.Marshal(c.Input)) + len(jsonv.Marshal(c.Output)) + len(c.Process) + len(c.Step) + len(c.Action) + len(c.Queue) + len(c.Key) + 64*len(c.Arguments) + 128
		if len(part) > 0 && size+n > durable.MaxPayloadSize/2 {
			parts, part, size = append(parts, part), nil, 0
		}
		part = append(part, i)
		size += n
	}
	return append(parts, part)
}

// act runs the items' calls of one step's action in one activity
// (durable.ExecuteActions), at most the group's Actions at a time, and
// hands each item its result.
func (g *group) act(ctx workflow.Context, items []int) {
	in := durable.ActionsInput{Calls: make([]durable.ActionInput, len(items)), Concurrency: g.actions()}
	for k, i := range items {
		m := &g.items[i]
		in.Calls[k] = m.call
		m.call, m.state = durable.ActionInput{}, running
	}
	g.sel.AddFuture(durable.ExecuteActions(ctx, g.acts, in), func(f workflow.Future) {
		var out []durable.ActionResult
		err := f.Get(ctx, &out)
		for k, i := range items {
			if err == nil && k >= len(out) {
				err = errors.New("the actions' activity gave no result for this call")
			}
			var r durable.ActionResult
			if err == nil {
				r = out[k]
			}
			g.items[i].reply.Set(r, err)
			g.items[i].reply = nil
		}
	})
}

// actions is how many actions of the group's items run at once.
func (g *group) actions() int {
	if g.in.Actions > 0 {
		return g.in.Actions
	}
	return DefaultActions
}

// arm starts the window's timer: when it fires, the window is up if no
// item asked since it was armed for the window's length; else it runs on
// for what is left.
func (g *group) arm(ctx workflow.Context, d time.Duration) {
	g.timerOn = true
	gen := g.gen
	tctx, cancel := workflow.WithCancel(ctx)
	g.cancel = cancel
	g.sel.AddFuture(workflow.NewTimer(tctx, d), func(f workflow.Future) {
		if gen != g.gen || f.Get(ctx, nil) != nil {
			return
		}
		if quiet := workflow.Now(ctx).Sub(g.lastAsk); quiet < g.in.Window {
			g.arm(ctx, g.in.Window-quiet)
			return
		}
		g.windowUp = true
	})
}

// fill asks the model for chunk c of items, in one activity, and hands
// each item its part.
func (g *group) fill(ctx workflow.Context, c int, items []int) {
	ch := &g.in.Program.Chunks[c]
	in := FillInput{Group: g.id, ProcessName: g.in.Name, Chunk: ch.Name, StepContext: ch.StepContext(), System: g.in.System,
		Schema: ch.Schema, Call: g.in.Call, Items: make([]FillItem, len(items))}
	for k, i := range items {
		it := g.in.Items[i]
		prompt := it.Prompt
		if prompt == "" {
			prompt = g.in.Prompt
		}
		m := &g.items[i]
		in.Items[k] = FillItem{ID: g.res.Results[i].ID, Prompt: prompt, Context: m.context, Audit: it.Audit}
		m.state, m.context = inflight, jsonv.Value{}
	}
	if g.in.Call.ProviderBatch {
		g.handOver(ctx, in, items, 1)
		return
	}
	g.direct(ctx, in, items)
}

// direct fills in for items with one activity (FillName) that calls the
// model itself.
func (g *group) direct(ctx workflow.Context, in FillInput, items []int) {
	opts := g.fillOptions()
	opts.TaskQueue = g.in.ModelQueue
	actx := workflow.WithActivityOptions(ctx, opts)
	g.sel.AddFuture(workflow.ExecuteActivity(actx, FillName, in), func(f workflow.Future) {
		var out FillOutput
		err := f.Get(ctx, &out)
		g.spent(err, &out)
		g.deliver(ctx, items, &out, err)
	})
}

// deliver hands each of items its part of out, or err.
func (g *group) deliver(ctx workflow.Context, items []int, out *FillOutput, err error) {
	g.res.Usage = g.res.Usage.Add(out.Usage)
	g.res.Requests += out.Requests
	g.res.Splits = mergeSplits(g.res.Splits, out.Splits, out.Passed)
	if out.Audit.Chunk != "" {
		g.res.Audits = mergeAudits(g.res.Audits, []AuditCount{out.Audit})
	}
	for k, i := range items {
		var part durable.FillOutput
		var perr error
		switch {
		case err != nil:
			perr = err
		case k < len(out.Items) && out.Items[k].Error != "":
			perr = temporal.NewNonRetryableApplicationError(out.Items[k].Error, ErrTypeGroupFill, nil)
		case k < len(out.Items):
			part = out.Items[k].Output
			if g.res.Model == "" {
				g.res.Model = part.Model
			}
		default:
			perr = temporal.NewNonRetryableApplicationError("the batch call gave no answer for this item", ErrTypeGroupFill, nil)
		}
		m := &g.items[i]
		if m.state == inflight {
			m.state = running
		}
		m.reply.Set(part, perr)
		m.reply = nil
	}
	g.progress(ctx)
}

// handOver hands the fill in for items to the batch's provider batches
// (SignalProviderRequest); the answer comes as a SignalProviderDone
// (collect). If they cannot be reached, the fill goes direct.
func (g *group) handOver(ctx workflow.Context, in FillInput, items []int, attempt int) {
	key := fmt.Sprintf("%s.f%d", g.id, g.pseq)
	g.pseq++
	g.prov[key] = &provFill{in: in, items: items, attempt: attempt}
	calls := 1
	if b, err := in.batches(); err == nil {
		calls = len(b)
	}
	req := ProviderRequest{Key: key, Group: g.id, Fill: in, Calls: calls}
	g.sel.AddFuture(workflow.SignalExternalWorkflow(ctx, ProviderID(g.in.Batch), "", SignalProviderRequest, req), func(f workflow.Future) {
		if f.Get(ctx, nil) != nil {
			delete(g.prov, key)
			g.direct(ctx, in, items)
		}
	})
}

// collect reads the fill of a provider batch that ended (Activities.
// Collect) and hands each item its part; the items it did not answer are
// handed over again, go direct (CallOptions.ProviderFallback), or fail
// once they have been in ProviderAttempts provider batches.
func (g *group) collect(ctx workflow.Context, d ProviderDone) {
	pf, ok := g.prov[d.Key]
	if !ok {
		return // told twice
	}
	delete(g.prov, d.Key)
	opts := durable.FillOptions()
	// It calls the provider's Batch API: on the group's model's queue,
	// as its other model calls; a group from before replays on its own.
	if workflow.GetVersion(ctx, CollectModelQueueChange, workflow.DefaultVersion, 1) != workflow.DefaultVersion {
		opts.TaskQueue = g.in.ModelQueue
	}
	actx := workflow.WithActivityOptions(ctx, opts)
	g.sel.AddFuture(workflow.ExecuteActivity(actx, CollectName, CollectInput{Key: d.Key, Done: d, Fill: pf.in}), func(f workflow.Future) {
		var out FillOutput
		err := f.Get(ctx, &out)
		if err != nil {
			g.deliver(ctx, pf.items, &out, err)
			return
		}
		var again FillInput
		var items, agains []int
		var parts []ItemFill
		for k, it := range out.Items {
			if it.Unanswered && (g.in.Call.ProviderFallback || (!d.Final && pf.attempt < ProviderAttempts)) {
				again.Items = append(again.Items, pf.in.Items[k])
				agains = append(agains, pf.items[k])
				continue
			}
			items = append(items, pf.items[k])
			parts = append(parts, it)
		}
		out.Items = parts
		g.deliver(ctx, items, &out, nil)
		if len(agains) == 0 {
			return
		}
		in := pf.in
		in.Items = again.Items
		if g.in.Call.ProviderFallback {
			g.direct(ctx, in, agains)
		} else {
			g.handOver(ctx, in, agains, pf.attempt+1)
		}
	})
}

// report tells the batch's record what the group did; its future's error
// says the record is gone (it was cancelled, or finished).
func (g *group) report(ctx workflow.Context, r GroupReport) workflow.Future {
	return workflow.SignalExternalWorkflow(ctx, g.in.Batch, "", SignalGroup, r)
}

// records are the replay records of the group's items, each with its
// batch and line.
func (g *group) records(ctx workflow.Context) []record.Record {
	now := workflow.Now(ctx)
	var recs []record.Record
	for i, m := range g.items {
		if m.r == nil {
			continue
		}
		rec := m.r.Record(now)
		rec.Batch, rec.Line = g.in.Batch, g.in.Items[i].Line
		recs = append(recs, rec)
	}
	return recs
}

// keepWaiting keeps the group's records, each item as far as it got,
// when an item began to wait for a person since they were last kept: a
// replay takes the waiting item up to there, and its siblings, before
// the group ends (its records at its end replace these). Items that
// begin to wait together are kept once.
func (g *group) keepWaiting(ctx workflow.Context) {
	if !g.waited {
		return
	}
	g.waited = false
	if workflow.GetVersion(ctx, durable.KeepWaitingChange, workflow.DefaultVersion, 1) == 1 {
		durable.Keep(ctx, func() []record.Record { return g.records(ctx) })
	}
}

// trim keeps the result within the engine's payload limit: past it, the
// outputs are left to be read from each item's process.
func (g *group) trim() {
	if durable.CheckPayloadSize("a group's result", g.res) == nil {
		return
	}
	for i := range g.res.Results {
		g.res.Results[i].Output = nil
	}
}
