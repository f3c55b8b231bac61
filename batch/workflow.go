package batch

import (
	"encoding/json"
	"slices"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/process"
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
}

// Item is one input line of a batch.
type Item struct {
	Line   int         `json:"line"`
	Prompt string      `json:"prompt,omitempty"`
	Input  jsonv.Value `json:"input,omitzero"`
	// Error, when set, is why the line is no item (not JSON, a field of
	// the wrong kind): its result says so and no process starts for it.
	Error string `json:"error,omitempty"`
}

// GroupResult is what a group did: a result per line, in order, and the
// group's model calls.
type GroupResult struct {
	Index    int       `json:"index"`
	Results  []Result  `json:"results"`
	Usage    llm.Usage `json:"usage"`
	Requests int       `json:"requests"`
}

// GroupReport is what a group tells its batch (SignalGroup): that it
// started with Items lines, and when Finished what they came to.
type GroupReport struct {
	Index    int       `json:"index"`
	Items    int       `json:"items"`
	Finished bool      `json:"finished,omitempty"`
	Done     int       `json:"done,omitempty"`
	Failed   int       `json:"failed,omitempty"`
	Usage    llm.Usage `json:"usage,omitzero"`
	Requests int       `json:"requests,omitempty"`
}

// Workflows holds the batch runtime's workflow functions.
type Workflows struct{}

// item states in a group.
type itemState int

const (
	starting itemState = iota // started, not heard of yet
	running                   // between chunks the group fills
	asking                    // asked for a chunk, not yet sent
	inflight                  // its chunk is being filled
	waiting                   // waits for a person
	done
)

// group is one group's interpreter.
type group struct {
	in      GroupInput
	id      string
	sel     workflow.Selector
	futures []workflow.ChildWorkflowFuture
	state   []itemState
	context []jsonv.Value // what each asking item sent
	chunk   []int         // the chunk each asking item asked for
	byID    map[string]int
	res     GroupResult
	open    int // items not done
	// The window: open while a timer runs; lastAsk is when the newest ask
	// came, gen tells a live timer from a cancelled one.
	timerOn  bool
	windowUp bool
	gen      int
	cancel   workflow.CancelFunc
	lastAsk  time.Time
}

// Group runs a group of a batch: a process per item (a child workflow,
// ItemID), whose LLM chunks it fills for all its items at once — when
// every item still running has asked for one, or Window after the first
// asked — with one multiplexed call (Activities.Fill), and hands each
// item its part. Items run their server and person chunks on their own.
// It returns when every item has finished.
func (w *Workflows) Group(ctx workflow.Context, in GroupInput) (GroupResult, error) {
	n := len(in.Items)
	g := &group{in: in, id: workflow.GetInfo(ctx).WorkflowExecution.ID, sel: workflow.NewSelector(ctx),
		futures: make([]workflow.ChildWorkflowFuture, n), state: make([]itemState, n), context: make([]jsonv.Value, n),
		chunk: make([]int, n), byID: make(map[string]int, n), res: GroupResult{Index: in.Index, Results: make([]Result, n)}}
	if in.Window <= 0 {
		g.in.Window = DefaultWindow
	}
	g.report(ctx, GroupReport{Index: in.Index, Items: n})
	fills := workflow.GetSignalChannel(ctx, process.SignalFill)
	waits := workflow.GetSignalChannel(ctx, process.SignalWaiting)
	g.sel.AddReceive(fills, func(c workflow.ReceiveChannel, _ bool) {
		var r process.FillRequest
		c.Receive(ctx, &r)
		if i, ok := g.byID[r.Item]; ok && g.state[i] != done {
			g.state[i], g.chunk[i], g.context[i] = asking, r.Chunk, r.Context
			g.lastAsk = workflow.Now(ctx)
		}
	})
	g.sel.AddReceive(waits, func(c workflow.ReceiveChannel, _ bool) {
		var r process.FillRequest
		c.Receive(ctx, &r)
		if i, ok := g.byID[r.Item]; ok && g.state[i] != done {
			g.state[i] = waiting
		}
	})
	for i, it := range in.Items {
		g.start(ctx, i, it)
	}
	for g.open > 0 {
		g.sel.Select(ctx)
		g.dispatch(ctx)
	}
	rep := GroupReport{Index: in.Index, Items: n, Finished: true, Usage: g.res.Usage, Requests: g.res.Requests}
	for _, r := range g.res.Results {
		if r.Status == StatusCompleted {
			rep.Done++
		} else {
			rep.Failed++
		}
	}
	g.report(ctx, rep)
	g.trim()
	return g.res, nil
}

// start starts item i's process, or records why the line is no item.
func (g *group) start(ctx workflow.Context, i int, it Item) {
	id := ItemID(g.in.Batch, it.Line)
	g.res.Results[i] = Result{Line: it.Line, ID: id}
	if it.Error != "" {
		g.res.Results[i] = Result{Line: it.Line, Status: StatusFailed, Error: it.Error}
		g.state[i] = done
		return
	}
	g.byID[id] = i
	g.open++
	prompt := it.Prompt
	if prompt == "" {
		prompt = g.in.Prompt
	}
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:            id,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		Memo:                  map[string]any{process.MemoProcess: g.in.Name},
		TypedSearchAttributes: temporal.NewSearchAttributes(process.ProcessAttribute.ValueSet(g.in.Name),
			process.StatusAttribute.ValueSet(string(process.Running)), process.BatchAttribute.ValueSet(g.in.Batch)),
	})
	g.futures[i] = workflow.ExecuteChildWorkflow(cctx, process.WorkflowName, process.Start{
		Name: g.in.Name, Program: g.in.Program, Prompt: prompt, Input: it.Input, System: g.in.System, Instance: id, Group: g.id,
	})
	g.sel.AddFuture(g.futures[i], func(f workflow.Future) {
		var v process.View
		err := f.Get(ctx, &v)
		g.state[i] = done
		g.open--
		r := &g.res.Results[i]
		if err != nil {
			r.Status, r.Error = StatusFailed, process.ErrorText(err)
			return
		}
		r.Status, r.Output = StatusCompleted, output(v.State)
	})
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
	var ask []int
	for i, s := range g.state {
		if s == asking {
			ask = append(ask, i)
		}
	}
	if len(ask) == 0 {
		return
	}
	// An item not yet heard of is waited for, when the process starts with
	// a model's chunk: it is only slow to start, and asks at once.
	if g.in.Program.Chunks[0].Kind == compile.LLM && slices.Contains(g.state, starting) {
		return
	}
	ready := g.windowUp || !slices.Contains(g.state, running) && !slices.Contains(g.state, starting)
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
		if !slices.Contains(chunks, g.chunk[i]) {
			chunks = append(chunks, g.chunk[i])
		}
	}
	slices.Sort(chunks)
	for _, c := range chunks {
		var items []int
		for _, i := range ask {
			if g.chunk[i] == c {
				items = append(items, i)
			}
		}
		g.fill(ctx, c, items)
	}
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
		in.Items[k] = FillItem{ID: g.res.Results[i].ID, Prompt: prompt, Context: g.context[i]}
		g.state[i] = inflight
		g.context[i] = jsonv.Value{}
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: process.FillTimeout,
		HeartbeatTimeout: process.HeartbeatTimeout, RetryPolicy: process.FillRetry})
	g.sel.AddFuture(workflow.ExecuteActivity(actx, FillName, in), func(f workflow.Future) {
		var out FillOutput
		err := f.Get(ctx, &out)
		g.res.Usage = g.res.Usage.Add(out.Usage)
		g.res.Requests += out.Requests
		for k, i := range items {
			filled := process.Filled{Chunk: c}
			switch {
			case err != nil:
				filled.Error = process.ErrorText(err)
			case k < len(out.Items):
				filled.Output, filled.Error = out.Items[k].Output, out.Items[k].Error
			default:
				filled.Error = "the batch call gave no answer for this item"
			}
			if g.state[i] == inflight {
				g.state[i] = running
			}
			g.futures[i].SignalChildWorkflow(ctx, process.SignalFilled, filled)
		}
	})
}

// report tells the batch what the group did; a batch that is gone (its
// record finished or was never started) is not the group's concern.
func (g *group) report(ctx workflow.Context, r GroupReport) {
	_ = workflow.SignalExternalWorkflow(ctx, g.in.Batch, "", SignalGroup, r).Get(ctx, nil)
}

// trim keeps the result within the engine's payload limit: past it, the
// outputs are left to be read from each item's process.
func (g *group) trim() {
	if process.CheckPayloadSize("a group's result", g.res) == nil {
		return
	}
	for i := range g.res.Results {
		g.res.Results[i].Output = nil
	}
}
