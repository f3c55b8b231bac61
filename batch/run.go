package batch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/grpc/codes"

	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/internal/diskspace"
	"github.com/augceo/vibe/internal/execution"
	"github.com/augceo/vibe/internal/wfid"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/process"
)

// Defaults of Options.
const (
	// DefaultSize is K where nothing else chooses it — calibration, the
	// items over the calls at once, the output token limit (auto) — and
	// the items of a group: compile.DefaultMaxItems.
	DefaultSize = compile.DefaultMaxItems
	// DefaultProviderConcurrency bounds the groups in flight with provider
	// batches (CallOptions.ProviderBatch): as many as one provider batch
	// holds, up to this.
	DefaultProviderConcurrency = 1024
)

// Options configures Run. The zero value of each field is a sensible
// default; Process must name what to run.
type Options struct {
	// Process names the process, pipeline or inline schema every item
	// runs, and the system text; its Prompt is the prompt of items that
	// give none. Input and First are not used.
	Process process.StartOptions
	// ID names the batch; "" makes a fresh one (<process>-<hex>). The same
	// id over the same input finds what already ran.
	ID string
	// File names the input in errors ("comments.jsonl:7: …"); "" is
	// "input".
	File string
	// Size is K, the items of one model call of each LLM chunk (within
	// the provider's limits); 0 is auto: chosen per chunk from its
	// calibration, the items over the calls that may run at once and the
	// output token limit (Summary.Sizes says which and why). A batch that
	// ran before keeps the sizes of its first run (Status.Calls), whatever
	// this one asks, and Note says so.
	Size int
	// Concurrency is C, the model calls in flight that the run plans for
	// (the worker's limiter holds them to its own limit); 0 is the
	// limiter's, or llm.DefaultConcurrency. The groups in flight are as
	// many as keep C calls busy, and input is read no further than one
	// group of lines ahead of them.
	Concurrency int
	// Call shapes the model calls; Window is GroupInput.Window.
	Call   CallOptions
	Window time.Duration
	// After is the last line already written by an earlier run of the
	// same batch: results up to it are not emitted again, and groups that
	// lie wholly before it are not even looked up.
	After int
	// Progress, when set, is called after each group's results are
	// emitted, with the totals so far.
	Progress func(Summary) `json:"-"`
	// Stop, when closed, ends the run in good order: no more input is
	// read, no group starts, and the groups already in flight finish and
	// have their results emitted, in order; then Run returns ErrStopped.
	// A group is only started whole, so a later run with the same id and
	// After at the last line emitted goes on where this one stopped.
	// Cancelling the context instead stops at once, leaving the groups in
	// flight to the engine. Nil never stops.
	Stop <-chan struct{} `json:"-"`
	// Total is the input's lines when the caller knows them before
	// reading (a file's), for the batch's status to show how many items
	// there are while they are still read (Status.Total); 0: unknown.
	Total int `json:"total,omitempty"`
	// Digest is the input's digest (Digest) when the caller knows it
	// before reading, recorded with the batch (Status.Digest).
	Digest string `json:"digest,omitempty"`
	// Audit, when above 0, is the share of items whose LLM chunks are
	// asked alone too, and compared with their answers among others: an
	// item whose answers differ takes the one alone, and when the
	// agreement is significantly below 0.98 K halves for the rest of the
	// run (see AuditCount).
	Audit float64 `json:"audit,omitempty"`
	// Note, when set, is told what the run chose that was not asked of
	// it: the group size of the batch's first run, kept.
	Note func(string) `json:"-"`
	// Unreachable, when set, is called when a group's workflow cannot be
	// reached — the engine is down or being restarted — with the error;
	// Run waits for it, trying again every few seconds, for at most
	// MaxUnreachable, without writing a result for the group's items.
	Unreachable func(err error) `json:"-"`
	// RetryFailed asks again the items of a batch that ran before which
	// failed for their own reason (a line that is no item fails again as
	// it did): each group that has such items runs again under its id, its
	// completed items kept as they were, not asked again. Groups wholly
	// before After are not looked up, so a run that is to write every
	// result again gives After 0. Summary.Retried counts the items asked
	// again.
	RetryFailed bool `json:"retryFailed,omitempty"`
}

// MaxUnreachable is how long Run waits for an engine it cannot reach
// before it gives up with the error, its groups' lines unwritten (a later
// run with the same id goes on): 10 minutes, time enough for a server's
// restart.
const MaxUnreachable = 10 * time.Minute

// ErrStopped is Run's error when Options.Stop ended it before the end of
// its input; the summary says what was emitted.
var ErrStopped = errors.New("stopped before the end of the input")

// ErrCancelled is Run's error when the batch was cancelled
// (Client.Cancel) while it ran: it reads no further.
var ErrCancelled = errors.New("the batch was cancelled")

// SystemicError is the error of a run stopped at an item that failed for
// a reason not its own (Result.Systemic): no line from Line on is
// written, and running the same batch again goes on from there, asking
// that item again. Cause is what the item's failure said.
type SystemicError struct {
	ID    string
	Line  int
	Cause string
	// Refused is set when waiting does not mend it (no model, a key or
	// model the endpoint refuses).
	Refused bool
}

func (e *SystemicError) Error() string {
	return fmt.Sprintf("batch %s stopped at line %d, which failed for a reason not its own: %s; no item is marked failed for it", e.ID, e.Line, e.Cause)
}

// Summary is what a run did.
type Summary struct {
	ID string `json:"id"`
	// Size is the items of a group, and Sizes each LLM chunk's K and why.
	Size  int         `json:"size"`
	Sizes []ChunkSize `json:"sizes,omitempty"`
	// Audits are what this run's audits came to, by chunk (Options.Audit),
	// their calls not in Requests and Usage; Halved what the audit's test
	// did to K.
	Audits []AuditCount `json:"audits,omitempty"`
	Halved []string     `json:"halved,omitempty"`
	// Lines counts the result lines emitted (Done + Failed).
	Lines    int           `json:"lines"`
	Done     int           `json:"done"`
	Failed   int           `json:"failed"`
	Requests int           `json:"requests"`
	Usage    llm.Usage     `json:"usage"`
	Elapsed  time.Duration `json:"elapsed"`
	// Retried counts the items that had failed in an earlier run and were
	// asked again (Options.RetryFailed).
	Retried int `json:"retried,omitempty"`
	// Unread names what of the items' inputs no step reads, in the order
	// first met (compile.Program.UnreadInput): "" for inputs that are no
	// object.
	Unread []string `json:"unread,omitempty"`
	// FireAndForget are the qualified names of the process's
	// fire-and-forget steps: each item that reaches one starts its action
	// in a workflow of its own (process.FireAndForgetID), which the batch
	// does not wait for (Client.Actions, Client.AwaitActions do).
	FireAndForget []string `json:"fireAndForget,omitempty"`
}

// Run runs a batch over in, a JSONL stream (ParseLine), and emits one
// result per line in input order. It reads as it goes: at most C groups
// of K lines are in flight, and it stops reading while they are; each
// group is a workflow (GroupID) that runs its items' processes. Lines
// that are no item get a failed result naming the line and the JSON
// path; the other items go on. Groups that ran before under the same id
// are not run again: their results are read back. Run returns when every
// line has its result, or when Options.Stop is closed and the groups in
// flight have theirs; a failed item is in the summary, not an error. An
// item that failed for a reason not its own (Result.Systemic: no model, an
// endpoint that refuses or stayed down) stops the run instead, with a
// *SystemicError: it and the lines after it are not written, and the
// next run asks its group again.
func (c *Client) Run(ctx context.Context, in io.Reader, emit func(Result) error, opts Options) (*Summary, error) {
	began := time.Now()
	start, err := c.prepare(ctx, opts)
	if err != nil {
		return nil, err
	}
	if opts.ID == "" {
		opts.ID = wfid.New(start.Name)
	}
	if err := CheckID(opts.ID); err != nil {
		return nil, err
	}
	calls := c.limiterCalls(opts)
	sizes := c.sizes(opts, start, calls)
	size := groupOf(opts, sizes, calls)
	if opts.File == "" {
		opts.File = "input"
	}
	wopts := client.StartWorkflowOptions{ID: opts.ID, TypedSearchAttributes: batchAttribute(opts.ID), Memo: map[string]any{durable.MemoProcess: start.Name}}
	rec := RecordInput{Status: recordStatus(opts, start, size, sizes, began)}
	// A new batch's record is made here, as this run cuts it; one that
	// earlier runs made says how they cut it.
	created, err := c.startNew(ctx, wopts, BatchName, rec)
	if err != nil {
		return nil, fmt.Errorf("start batch %s: %w", opts.ID, err)
	}
	if !created {
		if size, sizes, err = c.resume(ctx, opts, start, wopts, rec, size, sizes); err != nil {
			return nil, err
		}
	}
	if opts.Call.ProviderBatch {
		_, err = c.startOrAttach(ctx, client.StartWorkflowOptions{ID: ProviderID(opts.ID), TypedSearchAttributes: batchAttribute(opts.ID),
			Memo: map[string]any{durable.MemoProcess: start.Name}}, ProviderName, ProviderInput{Batch: opts.ID, Call: opts.Call, ModelQueue: start.ModelQueue})
		if err != nil {
			return nil, fmt.Errorf("start batch %s's provider batches: %w", opts.ID, err)
		}
	}
	opts.Call.Sizes = callSizes(sizes)
	conc := opts.Concurrency
	switch {
	case opts.Call.ProviderBatch && conc <= 0:
		// As many groups as one provider batch holds: their calls wait
		// together, for the provider, not one another.
		conc = min(MaxProviderRequests/size, DefaultProviderConcurrency)
	case conc <= 0 || opts.Size <= 0:
		// As many groups as keep the calls at once busy.
		perGroup := (size + minK(sizes) - 1) / minK(sizes)
		conc = max(1, (calls+perGroup-1)/perGroup)
	}

	sum := &Summary{ID: opts.ID, Size: size, Sizes: sizes, FireAndForget: fireAndForget(start.Program)}
	var aud *auditor
	if opts.Audit > 0 {
		aud = newAuditor(opts.Audit, 0, sizes)
	}
	written := make(chan struct{}, 1)  // a group's results were written
	var inflight atomic.Int64          // groups started and not yet written
	slots := make(chan struct{}, conc) // a slot per group in flight
	queue := make(chan *pending, conc+1)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg        sync.WaitGroup
		writeErr  error
		cancelled atomic.Bool
		split     bool // a group's calls were split
	)
	wg.Add(1)
	// The first item that failed not for itself: nothing from it on is
	// written.
	var systemic *SystemicError
	go func() { // the writer: results in input order
		defer wg.Done()
		for p := range queue {
			<-p.done
			err := p.err
			for _, r := range p.res.Results {
				if err != nil || r.Line <= opts.After || systemic != nil {
					continue
				}
				if r.Systemic != "" {
					systemic = &SystemicError{ID: opts.ID, Line: r.Line, Cause: r.Error, Refused: r.Systemic != durable.ErrTypeEndpointDown}
					cancelled.Store(true) // no more groups start
					continue
				}
				if r, err = c.complete(ctx, r, opts.Unreachable); err != nil {
					break // unwritten, not failed: a later run writes it
				}
				if r.Status == StatusCompleted {
					sum.Done++
				} else {
					sum.Failed++
				}
				sum.Lines++
				err = emit(r)
			}
			sum.Requests += p.res.Requests
			sum.Usage = sum.Usage.Add(p.res.Usage)
			sum.Retried += p.retried
			sum.Audits = mergeAudits(sum.Audits, p.res.Audits)
			split = split || len(p.res.Splits) > 0
			if aud != nil {
				aud.take(p.res.Audits)
				sum.Halved = aud.decisions()
			}
			if p.res.Cancelled {
				cancelled.Store(true)
			}
			inflight.Add(-1)
			select {
			case written <- struct{}{}:
			default:
			}
			<-slots
			if err != nil && writeErr == nil {
				writeErr = err
				cancel()
			}
			if writeErr == nil && opts.Progress != nil {
				s := *sum
				s.Elapsed = time.Since(began)
				opts.Progress(s)
			}
		}
	}()

	lr := newLineReader(in, opts.File)
	groups, lines := 0, 0
	var readErr error
	var unread []string
	stopping := func() bool {
		select {
		case <-opts.Stop:
			return true
		default:
			return cancelled.Load()
		}
	}
	stopped := false
	for eof := false; !eof && ctx.Err() == nil; {
		var items []Item
		for len(items) < size && !stopping() {
			it, err := lr.next()
			if err != nil {
				readErr = err
			}
			if it == nil {
				eof = true
				break
			}
			if aud != nil {
				it.Audit = aud.audits(it.Line)
			}
			items = append(items, *it)
			unread = addUnread(unread, start.Program, *it)
		}
		// A group cut short by the stop does not start: its id would name
		// lines it does not hold.
		if stopped = stopping(); stopped || readErr != nil || len(items) == 0 {
			break
		}
		lines = items[len(items)-1].Line
		gin := GroupInput{Batch: opts.ID, Index: groups, Name: start.Name, Program: start.Program, Prompt: start.Prompt,
			System: start.System, Items: items, Call: opts.Call, Window: opts.Window, ModelQueue: start.ModelQueue}
		gin.Actions = groupActions(size)
		if c.Processes.Registered != nil {
			// The queues name the actions as the runtime's registry
			// resolves them; a client without one (vibe batch through a
			// serve) cannot tell the serve's names, and leaves the calls
			// on the group's queue.
			gin.ActionQueues = start.ActionQueues
		}
		// While an audit's test decides, two groups at a time: a K that
		// does not hold is found before most items were asked at it.
		for aud != nil && aud.deciding() && inflight.Load() >= 2 && ctx.Err() == nil && !stopping() {
			select {
			case <-written:
			case <-ctx.Done():
			case <-opts.Stop:
			}
		}
		if aud != nil {
			gin.Call.Sizes = callSizes(aud.now())
		}
		groups++
		select { // wait for a slot: back-pressure
		case slots <- struct{}{}:
		case <-ctx.Done():
		case <-opts.Stop:
		}
		if stopped = stopping(); stopped || ctx.Err() != nil {
			break
		}
		p := &pending{done: make(chan struct{})}
		inflight.Add(1)
		queue <- p
		if lines <= opts.After {
			close(p.done) // written by an earlier run
			continue
		}
		go func() {
			defer close(p.done)
			p.res, p.retried, p.err = c.runGroup(ctx, gin, opts.RetryFailed, opts.Unreachable)
		}()
	}
	close(queue)
	wg.Wait()
	sum.Elapsed, sum.Unread = time.Since(began), unread
	switch {
	case writeErr != nil:
		return sum, writeErr
	case systemic != nil:
		return sum, systemic
	case readErr != nil:
		return sum, readErr
	case ctx.Err() != nil:
		return sum, ctx.Err()
	case cancelled.Load():
		return sum, ErrCancelled
	case stopped:
		return sum, ErrStopped // the batch has not ended: no End
	}
	err = untilReachable(ctx, opts.Unreachable, func() error {
		return c.temporal().SignalWorkflow(ctx, opts.ID, "", SignalEnd, End{Groups: groups, Items: lines})
	})
	if err != nil && !execution.IsNotFound(err) { // not found: it ended on an earlier run
		return sum, fmt.Errorf("end batch %s: %w", opts.ID, err)
	}
	if opts.Call.ProviderBatch {
		err = untilReachable(ctx, opts.Unreachable, func() error {
			return c.temporal().SignalWorkflow(ctx, ProviderID(opts.ID), "", SignalProviderEnd, nil)
		})
		if err != nil && !execution.IsNotFound(err) {
			return sum, fmt.Errorf("end batch %s's provider batches: %w", opts.ID, err)
		}
	}
	if split {
		c.rememberSplits(ctx, opts.ID, start)
	}
	return sum, nil
}

// resume attaches this run to the record of batch id that earlier runs
// made (Options.ID): another input under its id is refused; with
// Options.RetryFailed an ended record starts again; and the batch is cut
// into groups, and its calls into sizes, as at its first run — cut
// another way, a group's id would name other lines than it holds.
func (c *Client) resume(ctx context.Context, opts Options, start durable.Start, wopts client.StartWorkflowOptions, rec RecordInput, size int, sizes []ChunkSize) (int, []ChunkSize, error) {
	if err := c.CheckInput(ctx, opts); err != nil {
		return 0, nil, err
	}
	if _, err := c.startOrAttach(ctx, wopts, BatchName, rec); err != nil {
		return 0, nil, fmt.Errorf("start batch %s: %w", opts.ID, err)
	}
	if opts.RetryFailed {
		if err := c.reopen(ctx, opts.ID, start.Name); err != nil {
			return 0, nil, fmt.Errorf("start batch %s again: %w", opts.ID, err)
		}
	}
	st, err := c.record(ctx, opts.ID)
	if err != nil {
		return 0, nil, fmt.Errorf("start batch %s: %w", opts.ID, err)
	}
	if st.Size != 0 && st.Size != size {
		if opts.Note != nil && opts.Size > 0 {
			opts.Note(fmt.Sprintf("batch %s keeps the group size of its first run, %d items (this run asked for %d)", opts.ID, st.Size, opts.Size))
		}
		size = st.Size
	}
	if st.Calls != nil {
		sizes = keptSizes(st.Calls, sizes)
	} else if st.Size != 0 {
		// A record from before call sizes were kept: one call per group.
		for i := range sizes {
			sizes[i] = ChunkSize{Chunk: sizes[i].Chunk, K: st.Size, Why: "kept from the batch's first run"}
		}
	}
	return size, sizes, nil
}

// rememberSplits keeps, for the chunks of batch id whose calls could not be
// answered whole, the size that passed, where the calibrations keep such
// things (CalibrationStore.Remember): later batches on the model ask no
// more of it.
func (c *Client) rememberSplits(ctx context.Context, id string, start durable.Start) {
	m, ok := c.Calibrations.(interface {
		Remember(chunk string, schema jsonv.Value, system string, passed int, why string) error
	})
	if !ok {
		return
	}
	st, err := c.record(ctx, id)
	if err != nil {
		return
	}
	for _, sp := range st.Splits {
		for _, ch := range start.Program.Chunks {
			if ch.Name == sp.Chunk {
				_ = m.Remember(ch.Name, ch.Schema, start.System, sp.To, fmt.Sprintf("calls of %d: %s", sp.From, sp.Reason))
			}
		}
	}
}

// recordStatus is the status a batch's record starts with: the group size
// and each chunk's call size it is cut into, the input's digest, and, for
// one that sends its calls through provider batches, an empty Provider,
// so that Client.Status looks them up for it alone.
func recordStatus(opts Options, start durable.Start, size int, sizes []ChunkSize, began time.Time) Status {
	st := Status{ID: opts.ID, Process: start.Name, Size: size, Calls: callSizes(sizes), Digest: opts.Digest,
		Total: max(opts.Total, 0), StartedAt: began.UTC()}
	if opts.Call.ProviderBatch {
		st.Provider = &ProviderState{}
	}
	return st
}

// keptSizes are the call sizes a batch's record kept from its first run,
// in place of sizes, said so.
func keptSizes(kept map[string]int, sizes []ChunkSize) []ChunkSize {
	out := make([]ChunkSize, len(sizes))
	for i, s := range sizes {
		out[i] = s
		if k, ok := kept[s.Chunk]; ok && k != s.K {
			out[i] = ChunkSize{Chunk: s.Chunk, K: k, Why: "kept from the batch's first run"}
		}
	}
	return out
}

// minK is the smallest K of sizes (DefaultSize for none).
func minK(sizes []ChunkSize) int {
	k := 0
	for _, s := range sizes {
		if k == 0 || s.K < k {
			k = s.K
		}
	}
	if k == 0 {
		return DefaultSize
	}
	return k
}

// pending is a group in flight, in the writer's queue.
type pending struct {
	done chan struct{}
	res  GroupResult
	err  error
	// retried counts the group's items asked again (Options.RetryFailed).
	retried int
}

// runGroup runs a group, or reads back the one that ran under its id. A
// group that cannot run gives each of its lines a failed result; an engine
// that cannot be reached is waited for (unreachable is told), up to
// MaxUnreachable, and then is runGroup's error: no line is said to have
// failed for it. A group that ran before and stopped at an item that
// failed for a reason not its own runs again; with retry, so does one
// with items that failed for their own reason, its completed items kept
// (Item.Kept), and retried counts the items asked again.
func (c *Client) runGroup(ctx context.Context, in GroupInput, retry bool, unreachable func(error)) (res GroupResult, retried int, err error) {
	fail := func(err error) (GroupResult, int, error) {
		if ctx.Err() != nil {
			return res, 0, ctx.Err()
		}
		res = GroupResult{Index: in.Index, Results: make([]Result, len(in.Items))}
		for i, it := range in.Items {
			res.Results[i] = Result{Line: it.Line, Status: StatusFailed, Error: fmt.Sprintf("group %s: %s", GroupID(in.Batch, in.Index), durable.ErrorText(err))}
		}
		return res, 0, nil
	}
	if err := durable.CheckPayloadSize("the group's items", in); err != nil {
		return fail(fmt.Errorf("%w; give fewer items per group", err))
	}
	wopts := client.StartWorkflowOptions{ID: GroupID(in.Batch, in.Index), TypedSearchAttributes: batchAttribute(in.Batch),
		Memo: map[string]any{durable.MemoProcess: in.Name}}
	err = untilReachable(ctx, unreachable, func() error {
		retried = 0
		run, ended, err := c.startOrFind(ctx, wopts, GroupName, in, false)
		if err == nil {
			res = GroupResult{}
			err = run.Get(ctx, &res)
		}
		if err != nil || !ended {
			return err
		}
		again := in
		switch {
		case systemicIn(res):
			// An earlier run stopped at an item of this group that failed
			// for a reason not its own: the group is asked again.
		case retry:
			var n int
			if again, n, err = c.keep(ctx, in, res, unreachable); err != nil || n == 0 {
				return err
			}
			retried = n
		default:
			return nil
		}
		again.Again = &GroupCounts{}
		for _, r := range res.Results {
			if r.Status == StatusCompleted {
				again.Again.Done++
			} else {
				again.Again.Failed++
			}
		}
		if run, _, err = c.startOrFind(ctx, wopts, GroupName, again, true); err == nil {
			res = GroupResult{}
			err = run.Get(ctx, &res)
		}
		return err
	})
	switch {
	case err == nil:
		return res, retried, nil
	case ctx.Err() != nil:
		return res, 0, ctx.Err()
	case Unreachable(err):
		return res, 0, fmt.Errorf("group %s: %w", GroupID(in.Batch, in.Index), err)
	}
	if _, ok := errors.AsType[*temporal.WorkflowExecutionError](err); ok {
		err = errors.New(durable.ErrorText(err))
	}
	return fail(err)
}

// keep is group in to run again for its items that failed for their own
// reason in res, its run before: each completed item is kept
// (Item.Kept), its output read in full. n counts the items asked again, 0
// when none failed so; a line that is no item fails again as it did, and
// is not counted.
func (c *Client) keep(ctx context.Context, in GroupInput, res GroupResult, unreachable func(error)) (again GroupInput, n int, err error) {
	again = in
	again.Items = slices.Clone(in.Items)
	for i := range again.Items {
		it := &again.Items[i]
		if it.Error != "" || i >= len(res.Results) || res.Results[i].Line != it.Line {
			continue
		}
		r := res.Results[i]
		if r.Status != StatusCompleted {
			n++
			continue
		}
		if r, err = c.complete(ctx, r, unreachable); err != nil {
			return in, 0, err
		}
		if r.Status == StatusCompleted {
			it.Kept = &r
		} else {
			n++ // its output could not be read: it is asked again
		}
	}
	if n > 0 && durable.CheckPayloadSize("the group's items", again) != nil {
		// Past the engine's limit with the outputs kept: the whole group
		// is asked again.
		n = 0
		for _, it := range in.Items {
			if it.Error == "" {
				n++
			}
		}
		return in, n, nil
	}
	return again, n, nil
}

// reopen starts the record of batch id again when it has ended (completed
// or failed; a cancelled batch stays so), with its counts and its groups'
// lines, for groups to run again and report to it (Options.RetryFailed):
// it ends again once the run's input ends.
func (c *Client) reopen(ctx context.Context, id, name string) error {
	st, err := c.record(ctx, id)
	if err != nil {
		return err
	}
	if st.Status != StatusCompleted && st.Status != StatusFailed {
		return nil
	}
	v, err := durable.Query(ctx, c.temporal(), id, QueryLines)
	var lines []Lines
	if err == nil {
		err = v.Get(&lines)
	}
	if err != nil {
		return fmt.Errorf("read its groups' lines: %w", err)
	}
	groups := make([]int, st.Groups)
	for i := range groups {
		groups[i] = i
	}
	st.Status, st.Ended, st.FinishedAt, st.Waiting = "running", false, nil, 0
	if st.Provider != nil {
		st.Provider = &ProviderState{}
	}
	_, _, err = c.startOrFind(ctx, client.StartWorkflowOptions{ID: id, TypedSearchAttributes: batchAttribute(id),
		Memo: map[string]any{durable.MemoProcess: name}}, BatchName, RecordInput{Status: *st, Started: groups, Finished: slices.Clone(groups), Lines: lines}, true)
	return err
}

// systemicIn reports whether an item of res failed for a reason not its
// own (Result.Systemic).
func systemicIn(res GroupResult) bool {
	for _, r := range res.Results {
		if r.Systemic != "" {
			return true
		}
	}
	return false
}

// untilReachable calls f until it returns an error that is not
// Unreachable, or none: while the engine cannot be reached it tries again
// every few seconds, telling notify once, for at most MaxUnreachable; then
// the error says how long it waited.
func untilReachable(ctx context.Context, notify func(error), f func() error) error {
	var down time.Time // when the engine stopped answering
	for wait := time.Second; ; wait = min(2*wait, 5*time.Second) {
		err := f()
		if !Unreachable(err) || ctx.Err() != nil {
			return err
		}
		if down.IsZero() {
			down = time.Now()
			if notify != nil {
				notify(err)
			}
		} else if time.Since(down) > MaxUnreachable {
			return fmt.Errorf("the engine has not answered for %s: %w", MaxUnreachable, err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Unreachable reports whether err says the engine could not be reached or
// did not answer in time — it is down, or being restarted — or that its
// disk is full, rather than that the call itself failed: such a call may
// succeed when tried again.
func Unreachable(err error) bool {
	if err == nil {
		return false
	}
	if _, ok := errors.AsType[*temporal.WorkflowExecutionError](err); ok {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || diskspace.Is(err) {
		return true // a full disk: the engine writes again once space is freed
	}
	switch serviceerror.ToStatus(err).Code() {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.Aborted, codes.ResourceExhausted:
		return true
	}
	return false
}

// Check checks what Run checks before it reads a line: that the process
// opts name compiles, fits the worker's actions and is within the engine's
// payload limit, and that the group size is
// within compile.MaxBatchItems. Its errors are Run's (a schema.ErrorList
// for a process that does not compile). Runner.Start checks so before it
// takes a batch, so that one Run would refuse is refused at once.
func (c *Client) Check(ctx context.Context, opts Options) error {
	_, err := c.prepare(ctx, opts)
	return err
}

// prepare is the process every item of a batch runs: a direct server call
// runs as a process whose action is awaited (compile.Program.AwaitedDirect).
func (c *Client) prepare(ctx context.Context, opts Options) (durable.Start, error) {
	start, direct, err := c.Processes.Prepare(ctx, opts.Process)
	if err != nil {
		return durable.Start{}, err
	}
	if direct {
		// Each item's model fill goes in the group's multiplexed calls, and
		// its action is called once, awaited, under the item's key.
		start.Program = start.Program.AwaitedDirect()
	}
	if err := durable.CheckPayloadSize("the process "+start.Name, start.Program); err != nil {
		return durable.Start{}, err
	}
	if opts.Size > compile.MaxBatchItems {
		return durable.Start{}, fmt.Errorf("a call of %d items is over the limit of %d", opts.Size, compile.MaxBatchItems)
	}
	// A chunk one item of which is past the provider's limits — nesting,
	// properties that do not shrink with K — can never be asked: refused
	// before any item is.
	for _, ch := range start.Program.Chunks {
		if ch.Kind != compile.LLM || ch.Loop != nil {
			continue
		}
		if _, err := compile.Batches(ch.Schema, 1, opts.Call.Limits, compile.MultiplexOptions{Inline: opts.Call.Inline}); err != nil {
			return durable.Start{}, fmt.Errorf("%s: %s can never be asked of this provider: %w", start.Name, ch.Name, err)
		}
	}
	return start, nil
}
