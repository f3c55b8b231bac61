package batch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
)

// Provider batches: with CallOptions.ProviderBatch, a group does not call
// the model for a chunk itself. It hands the chunk's calls to its batch's
// provider-batch workflow (Workflows.ProviderBatches, ProviderID), which
// gathers the calls of every group that is ready into one provider batch
// (llm.BatchAPI: OpenAI's Batch API, Anthropic's Message Batches), submits
// it, and waits for it on a workflow timer — nothing runs while it waits.
// When the provider batch has ended it tells each group, and the group
// reads its calls' answers (Activities.Collect): each item's part is
// checked and repaired on its own as on the direct path. Calls the
// provider did not answer (failed, expired, cancelled) go again in a later
// provider batch, or as direct calls with CallOptions.ProviderFallback.

// Defaults of the provider-batch options.
const (
	// DefaultProviderWindow is how long the provider-batch workflow waits,
	// once no group has handed it a call for that long, before it submits
	// what it holds; MaxProviderWait bounds the wait from the first call
	// it holds, however steadily calls come.
	DefaultProviderWindow = 3 * time.Second
	MaxProviderWait       = time.Minute
	// DefaultProviderPoll is the first wait between two looks at a
	// provider batch; each wait is half as long again as the one before,
	// up to MaxProviderPoll (or 20 times the first, if that is less).
	DefaultProviderPoll = 15 * time.Second
	MaxProviderPoll     = 5 * time.Minute
	// ProviderAttempts bounds the provider batches an item's call goes in:
	// a call still unanswered after that many fails, or goes direct with
	// CallOptions.ProviderFallback.
	ProviderAttempts = 3
	// MaxProviderRequests bounds the requests of one provider batch: the
	// lower of OpenAI's (50,000) and Anthropic's (100,000) limits. A
	// provider batch is also cut at half the engine's payload limit of its
	// calls' inputs (durable.MaxPayloadSize).
	MaxProviderRequests = 50_000
)

// ProviderID is the workflow id of a batch's provider-batch workflow.
func ProviderID(batch string) string { return batch + "-p" }

// requestID is the custom_id of call n of a group's fill key: the same
// for the same work, within Anthropic's [A-Za-z0-9_-]{1,64}.
func requestID(key string, n int) string {
	h := sha256.Sum256([]byte(key + "/" + strconv.Itoa(n)))
	return "r" + hex.EncodeToString(h[:20])
}

// submissionKey names the seq-th provider batch of a batch
// (llm.BatchSubmission.Key).
func submissionKey(batch string, seq int) string {
	h := sha256.Sum256([]byte(batch))
	return fmt.Sprintf("vibe-%s-%d", hex.EncodeToString(h[:10]), seq)
}

// ProviderRequest is a group's chunk to fill through a provider batch
// (SignalProviderRequest): its key (the group's id and the fill's
// number), the group, the fill, and the model requests it makes.
type ProviderRequest struct {
	Key   string    `json:"key"`
	Group string    `json:"group"`
	Fill  FillInput `json:"fill"`
	Calls int       `json:"calls"`
}

// ProviderDone tells a group that the provider batch that held its fill
// Key ended (SignalProviderDone): ID is the provider batch's id, "" when
// it was never made, and Error why not or why it failed as a whole. Final
// says that sending the fill again cannot help.
type ProviderDone struct {
	Key   string `json:"key"`
	ID    string `json:"id,omitempty"`
	Error string `json:"error,omitempty"`
	Final bool   `json:"final,omitempty"`
}

// Flight is one provider batch: its key, the provider's id once
// submitted, and the fills it holds.
type Flight struct {
	Key      string    `json:"key"`
	ID       string    `json:"id,omitempty"`
	Fills    []FillRef `json:"fills"`
	Requests int       `json:"requests"`
	Status   string    `json:"status,omitempty"`
	// Answered counts the requests the provider has answered or failed so
	// far, as it last said.
	Answered int        `json:"answered,omitempty"`
	Polls    int        `json:"polls,omitempty"`
	Since    *time.Time `json:"since,omitempty"` // when it was submitted
}

// FillRef is a fill held in a provider batch: its key and group.
type FillRef struct {
	Key   string `json:"key"`
	Group string `json:"group"`
}

// ProviderInput starts a batch's provider-batch workflow, or carries it
// over a continue-as-new.
type ProviderInput struct {
	Batch   string            `json:"batch"`
	Call    CallOptions       `json:"call,omitzero"`
	Pending []ProviderRequest `json:"pending,omitempty"`
	Flights []Flight          `json:"flights,omitempty"`
	Seq     int               `json:"seq,omitempty"`
	Ended   bool              `json:"ended,omitempty"`
	// Submitted counts the provider batches submitted and Requests their
	// requests, over the workflow's whole life.
	Submitted int `json:"submitted,omitempty"`
	Requests  int `json:"requests,omitempty"`
	// ModelQueue is the task queue of the submissions, looks and
	// cancellations of the provider batches (GroupInput.ModelQueue of the
	// batch's groups): only a worker with the batch's model, whose
	// provider's Batch API they call, takes them. "" is the workflow's own
	// queue, as for one started before they were routed.
	ModelQueue string `json:"modelQueue,omitempty"`
}

// ProviderState is what QueryProvider answers: the provider batches of a
// Vibe batch.
type ProviderState struct {
	Pending   int      `json:"pending"` // fills waiting to be submitted
	Flights   []Flight `json:"flights"` // provider batches not yet ended
	Submitted int      `json:"submitted"`
	Requests  int      `json:"requests"`
	// Cancelled says the batch was cancelled, and with it the provider
	// batches it had in flight.
	Cancelled bool `json:"cancelled,omitempty"`
}

// providerBatches is the state of a provider-batch workflow.
type providerBatches struct {
	in       ProviderInput
	sel      workflow.Selector
	busy     int       // activities and timers whose futures are pending
	first    time.Time // when the oldest pending fill came
	last     time.Time // when the newest came
	timerOn  bool
	windowUp bool
	// submits are the submissions in flight, by flight key: a
	// cancellation waits for them, to cancel what they made.
	submits map[string]workflow.Future
}

// ProviderBatches is a batch's provider-batch workflow: it gathers the
// calls its groups hand it (SignalProviderRequest) into provider batches,
// submits each (Activities.Submit) and records its id before anything else
// happens, looks at it on a timer with backoff (Activities.Status), and
// once it has ended tells every group that had calls in it
// (SignalProviderDone). It ends when told the batch's input ended
// (SignalProviderEnd) and nothing is pending; cancelled, it cancels the
// provider batches it has in flight.
func (w *Workflows) ProviderBatches(ctx workflow.Context, in ProviderInput) (ProviderState, error) {
	pb := &providerBatches{in: in, sel: workflow.NewSelector(ctx)}
	if err := workflow.SetQueryHandler(ctx, QueryProvider, func() (ProviderState, error) { return pb.state(), nil }); err != nil {
		return pb.state(), err
	}
	reqs := workflow.GetSignalChannel(ctx, SignalProviderRequest)
	ends := workflow.GetSignalChannel(ctx, SignalProviderEnd)
	take := func(r ProviderRequest) {
		if len(pb.in.Pending) == 0 {
			pb.first = workflow.Now(ctx)
		}
		pb.last = workflow.Now(ctx)
		pb.in.Pending = append(pb.in.Pending, r)
	}
	pb.sel.AddReceive(reqs, func(c workflow.ReceiveChannel, _ bool) {
		var r ProviderRequest
		c.Receive(ctx, &r)
		take(r)
	})
	pb.sel.AddReceive(ends, func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(ctx, nil)
		pb.in.Ended = true
	})
	pb.sel.AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) {})
	// Provider batches carried over a continue-as-new (which waits for
	// every submission to be recorded) are looked at again.
	for _, f := range pb.in.Flights {
		pb.poll(ctx, f.Key)
	}
	for {
		if ctx.Err() != nil {
			pb.cancel(ctx)
			st := pb.state()
			st.Cancelled = true
			return st, nil
		}
		if len(pb.in.Pending) > 0 {
			pb.dispatch(ctx)
		}
		if pb.in.Ended && len(pb.in.Pending) == 0 && len(pb.in.Flights) == 0 && pb.busy == 0 {
			return pb.state(), nil
		}
		if info := workflow.GetInfo(ctx); pb.busy == 0 && len(pb.in.Pending) == 0 &&
			(info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() >= ContinueAfter) {
			for {
				var r ProviderRequest
				if !reqs.ReceiveAsync(&r) {
					break
				}
				take(r)
			}
			if ends.ReceiveAsync(nil) {
				pb.in.Ended = true
			}
			return pb.state(), workflow.NewContinueAsNewError(ctx, ProviderName, pb.in)
		}
		pb.sel.Select(ctx)
	}
}

// state is the workflow's ProviderState.
func (pb *providerBatches) state() ProviderState {
	return ProviderState{Pending: len(pb.in.Pending), Flights: pb.in.Flights, Submitted: pb.in.Submitted, Requests: pb.in.Requests}
}

// window is the quiet time before pending fills are submitted.
func (pb *providerBatches) window() time.Duration {
	if pb.in.Call.ProviderWindow > 0 {
		return pb.in.Call.ProviderWindow
	}
	return DefaultProviderWindow
}

// dispatch submits the pending fills once no group has handed one for the
// window (or MaxProviderWait after the first), or as soon as they fill a
// provider batch; else it arms the window's timer.
func (pb *providerBatches) dispatch(ctx workflow.Context) {
	now := workflow.Now(ctx)
	calls := 0
	for _, r := range pb.in.Pending {
		calls += r.Calls
	}
	quiet, waited := now.Sub(pb.last), now.Sub(pb.first)
	if !pb.windowUp && calls < MaxProviderRequests && quiet < pb.window() && waited < MaxProviderWait {
		if !pb.timerOn {
			pb.timerOn = true
			pb.busy++
			d := min(pb.window()-quiet, MaxProviderWait-waited)
			pb.sel.AddFuture(workflow.NewTimer(ctx, d), func(workflow.Future) {
				pb.busy--
				pb.timerOn = false
				if n := workflow.Now(ctx); n.Sub(pb.last) >= pb.window() || n.Sub(pb.first) >= MaxProviderWait {
					pb.windowUp = true
				}
			})
		}
		return
	}
	pb.windowUp = false
	// Cut the pending fills into provider batches within the limits.
	var f *Flight
	size := 0
	for _, r := range pb.in.Pending {
		n := r.size()
		if f == nil || f.Requests+r.Calls > MaxProviderRequests || (size > 0 && size+n > durable.MaxPayloadSize/2) {
			pb.in.Flights = append(pb.in.Flights, Flight{Key: submissionKey(pb.in.Batch, pb.in.Seq)})
			pb.in.Seq++
			f, size = &pb.in.Flights[len(pb.in.Flights)-1], 0
		}
		f.Fills = append(f.Fills, FillRef{Key: r.Key, Group: r.Group})
		f.Requests += r.Calls
		size += n
	}
	fills := pb.in.Pending
	pb.in.Pending = nil
	for i := range pb.in.Flights {
		if pb.in.Flights[i].ID == "" && pb.in.Flights[i].Status == "" {
			pb.in.Flights[i].Status = "submitting"
			pb.submitWith(ctx, pb.in.Flights[i].Key, fills)
		}
	}
}

// submitWith runs the submission of the flight key with those of fills
// it holds.
func (pb *providerBatches) submitWith(ctx workflow.Context, key string, fills []ProviderRequest) {
	in := SubmitInput{Key: key}
	f := pb.flight(key)
	byKey := make(map[string]bool, len(f.Fills))
	for _, r := range f.Fills {
		byKey[r.Key] = true
	}
	for _, r := range fills {
		if byKey[r.Key] {
			in.Fills = append(in.Fills, r)
		}
	}
	// A submission is not cut off by the batch's cancellation: the
	// provider may have made the batch already, and cancel needs its id to
	// cancel it there.
	sctx, _ := workflow.NewDisconnectedContext(ctx)
	opts := durable.FillOptions()
	opts.RetryPolicy = providerRetry
	opts.TaskQueue = pb.in.ModelQueue
	actx := workflow.WithActivityOptions(sctx, opts)
	pb.busy++
	fut := workflow.ExecuteActivity(actx, SubmitName, in)
	if pb.submits == nil {
		pb.submits = map[string]workflow.Future{}
	}
	pb.submits[key] = fut
	pb.sel.AddFuture(fut, func(fu workflow.Future) {
		pb.busy--
		delete(pb.submits, key)
		var out SubmitOutput
		err := fu.Get(ctx, &out)
		f := pb.flight(key)
		if f == nil {
			return
		}
		if err != nil || out.ID == "" {
			msg := "the provider batch was not made: its calls could not be built"
			if err != nil {
				msg = "the provider batch could not be submitted: " + durable.ErrorText(err)
			}
			pb.finish(ctx, key, ProviderDone{Error: msg, Final: err != nil && isFinal(err)})
			return
		}
		f.ID, f.Status = out.ID, "submitted"
		now := workflow.Now(ctx)
		f.Since = &now
		pb.in.Submitted++
		pb.in.Requests += f.Requests
		pb.poll(ctx, key)
	})
}

// poll looks at flight key's provider batch after its next wait, and
// again until it has ended.
func (pb *providerBatches) poll(ctx workflow.Context, key string) {
	f := pb.flight(key)
	first := pb.in.Call.ProviderPoll
	if first <= 0 {
		first = DefaultProviderPoll
	}
	wait := first
	for range f.Polls {
		wait = wait * 3 / 2
	}
	wait = min(wait, MaxProviderPoll, 20*first)
	pb.busy++
	pb.sel.AddFuture(workflow.NewTimer(ctx, wait), func(fu workflow.Future) {
		// Looked up again: appending flights may have moved them, and this
		// one may have ended meanwhile.
		f := pb.flight(key)
		if fu.Get(ctx, nil) != nil || f == nil {
			pb.busy--
			return
		}
		actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 5 * time.Minute,
			HeartbeatTimeout: durable.HeartbeatTimeout, RetryPolicy: providerRetry, TaskQueue: pb.in.ModelQueue})
		pb.sel.AddFuture(workflow.ExecuteActivity(actx, StatusName, f.ID), func(fu workflow.Future) {
			pb.busy--
			f := pb.flight(key)
			if f == nil {
				return
			}
			f.Polls++
			var st llm.BatchStatus
			if err := fu.Get(ctx, &st); err != nil {
				pb.finish(ctx, key, ProviderDone{ID: f.ID, Error: "the provider batch could not be read: " + durable.ErrorText(err)})
				return
			}
			f.Status, f.Answered = st.Status, st.Succeeded+st.Failed
			if !st.Ended {
				pb.poll(ctx, key)
				return
			}
			pb.finish(ctx, key, ProviderDone{ID: f.ID, Error: st.Error})
		})
	})
}

// finish tells every group of flight key that it ended, and forgets it.
func (pb *providerBatches) finish(ctx workflow.Context, key string, done ProviderDone) {
	f := pb.flight(key)
	for _, r := range f.Fills {
		d := done
		d.Key = r.Key
		// A group that is gone (cancelled, or finished) is not waiting.
		_ = workflow.SignalExternalWorkflow(ctx, r.Group, "", SignalProviderDone, d).Get(ctx, nil)
	}
	for i := range pb.in.Flights {
		if pb.in.Flights[i].Key == key {
			pb.in.Flights = append(pb.in.Flights[:i], pb.in.Flights[i+1:]...)
			break
		}
	}
}

// cancel cancels the provider batches in flight, once the workflow was
// cancelled, and tells their groups. A flight still being submitted is
// waited for first: the provider may have made its batch already.
func (pb *providerBatches) cancel(ctx workflow.Context) {
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	actx := workflow.WithActivityOptions(dctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute,
		HeartbeatTimeout: durable.HeartbeatTimeout, RetryPolicy: providerRetry, TaskQueue: pb.in.ModelQueue})
	for _, f := range pb.in.Flights {
		if fu, ok := pb.submits[f.Key]; ok && f.ID == "" {
			var out SubmitOutput
			if fu.Get(dctx, &out) == nil {
				f.ID = out.ID
			}
		}
		if f.ID != "" {
			_ = workflow.ExecuteActivity(actx, CancelName, f.ID).Get(dctx, nil)
		}
		for _, r := range f.Fills {
			_ = workflow.SignalExternalWorkflow(dctx, r.Group, "", SignalProviderDone,
				ProviderDone{Key: r.Key, ID: f.ID, Error: "the batch was cancelled", Final: true}).Get(dctx, nil)
		}
	}
	for _, r := range pb.in.Pending {
		_ = workflow.SignalExternalWorkflow(dctx, r.Group, "", SignalProviderDone,
			ProviderDone{Key: r.Key, Error: "the batch was cancelled", Final: true}).Get(dctx, nil)
	}
	pb.in.Flights, pb.in.Pending = nil, nil
}

// flight is the flight of key, nil when it is gone.
func (pb *providerBatches) flight(key string) *Flight {
	for i := range pb.in.Flights {
		if pb.in.Flights[i].Key == key {
			return &pb.in.Flights[i]
		}
	}
	return nil
}

// providerRetry retries the calls of a provider's Batch API that failed
// past the client's own retries.
var providerRetry = &temporal.RetryPolicy{InitialInterval: 2 * time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 10}

// errTypeNoBatchAPI is the error type of a provider batch on a worker
// whose model provider has none.
const errTypeNoBatchAPI = "NoBatchAPI"

// isFinal reports whether a submission's error says that submitting again
// cannot help: the activity's error was not to be retried (no Batch API,
// a request the provider refuses).
func isFinal(err error) bool {
	var ae *temporal.ApplicationError
	return errors.As(err, &ae) && ae.NonRetryable()
}

// size is about how many bytes r takes in an activity's input: its
// schema, its items' prompts and contexts.
func (r ProviderRequest) size() int {
	n := len(jsonv.Marshal(r.Fill.Schema)) + len(r.Fill.System) + len(r.Key) + 256
	for _, it := range r.Fill.Items {
		n += len(it.ID) + len(it.Prompt) + len(jsonv.Marshal(it.Context)) + 64
	}
	return n
}

// SubmitInput is a provider batch to submit: its key and the fills it
// holds.
type SubmitInput struct {
	Key   string            `json:"key"`
	Fills []ProviderRequest `json:"fills,omitempty"`
}

// SubmitOutput is a submitted provider batch.
type SubmitOutput struct {
	ID       string `json:"id"`
	Requests int    `json:"requests"`
}

// batchAPI is the worker's provider's Batch API.
func (a *Activities) batchAPI() (llm.BatchAPI, error) {
	if a.Provider == nil {
		return nil, durable.FillError(durable.ErrNoProvider)
	}
	api, ok := llm.BatchAPIOf(a.Provider)
	if !ok {
		return nil, temporal.NewNonRetryableApplicationError("the worker's model provider has no Batch API (OpenAI's or Anthropic's): run the batch without provider batches", errTypeNoBatchAPI, nil)
	}
	return api, nil
}

// Submit is the activity that submits a provider batch: each fill's calls
// become its requests, each under an id derived from the fill's key and
// the call's number. Submitting is idempotent: an attempt after one that
// was cut off finds what that one made (llm.BatchSubmission.Since).
func (a *Activities) Submit(ctx context.Context, in SubmitInput) (*SubmitOutput, error) {
	api, err := a.batchAPI()
	if err != nil {
		return nil, err
	}
	s := llm.BatchSubmission{Key: in.Key}
	if info := activity.GetInfo(ctx); info.Attempt > 1 {
		// The provider's clock may differ from ours by a little.
		s.Since = info.ScheduledTime.Add(-2 * time.Minute)
	}
	for _, f := range in.Fills {
		calls, err := plan(f.Fill)
		if err != nil {
			continue // Collect says why, for each of the fill's items
		}
		for n, c := range calls {
			s.Requests = append(s.Requests, llm.BatchRequest{ID: requestID(f.Key, n), Request: c.req})
		}
	}
	if len(s.Requests) == 0 {
		return &SubmitOutput{}, nil // each fill's items get its error from Collect
	}
	defer durable.KeepAliveWith(ctx, func() any { return nil })()
	id, err := api.SubmitBatch(ctx, s)
	if err != nil {
		return nil, durable.FillError(err)
	}
	a.logger().Info("provider batch submitted", "key", in.Key, "id", id, "requests", len(s.Requests), "attempt", activity.GetInfo(ctx).Attempt)
	return &SubmitOutput{ID: id, Requests: len(s.Requests)}, nil
}

// Status is the activity that looks at a provider batch.
func (a *Activities) Status(ctx context.Context, id string) (*llm.BatchStatus, error) {
	api, err := a.batchAPI()
	if err != nil {
		return nil, err
	}
	defer durable.KeepAliveWith(ctx, func() any { return nil })()
	st, err := api.BatchStatus(ctx, id)
	if err != nil {
		return nil, durable.FillError(err)
	}
	return st, nil
}

// Cancel is the activity that cancels a provider batch.
func (a *Activities) Cancel(ctx context.Context, id string) error {
	api, err := a.batchAPI()
	if err != nil {
		return err
	}
	defer durable.KeepAliveWith(ctx, func() any { return nil })()
	if err := api.CancelBatch(ctx, id); err != nil {
		return durable.FillError(err)
	}
	a.logger().Info("provider batch cancelled", "id", id)
	return nil
}

// CollectInput is a group's fill to read from its ended provider batch.
type CollectInput struct {
	Key  string       `json:"key"`
	Done ProviderDone `json:"done"`
	Fill FillInput    `json:"fill"`
}

// Collect is the activity that reads a group's fill from its provider
// batch: each call's answer is taken as Fill takes a direct call's — each
// item's part checked on its own and repaired alone, by a direct call —
// and the items of a call the batch did not answer are marked Unanswered,
// with why.
func (a *Activities) Collect(ctx context.Context, in CollectInput) (*FillOutput, error) {
	out := &FillOutput{Items: make([]ItemFill, len(in.Fill.Items))}
	calls, err := plan(in.Fill)
	if err != nil {
		for i := range out.Items {
			out.Items[i].Error = err.Error()
		}
		return out, nil
	}
	var results map[string]llm.BatchResult
	if in.Done.ID != "" {
		api, err := a.batchAPI()
		if err != nil {
			return nil, err
		}
		reqs := make([]llm.BatchRequest, len(calls))
		for n, c := range calls {
			reqs[n] = llm.BatchRequest{ID: requestID(in.Key, n), Request: c.req}
		}
		if results, err = api.BatchResults(ctx, in.Done.ID, reqs); err != nil {
			return nil, durable.FillError(err)
		}
	}
	sent := durable.CountSent(ctx, a.Provider) // the repairs, direct
	defer durable.KeepAliveWith(ctx, sent.Details)()
	opts := llm.Options{Logger: a.logger(), Metrics: a.Metrics, Process: in.Fill.Group, MaxRepairs: a.MaxRepairs}
	if err := take(ctx, sent, in.Key, in.Done, in.Fill, calls, results, opts, out); err != nil {
		return nil, err
	}
	out.Requests += sent.Earlier()
	return out, nil
}

// take reads the answers of fill's calls from results, the answers of
// the provider batch done names by request id, into out: each call's
// answer is taken as Fill takes a direct call's — each item's part
// checked on its own and repaired alone, by a direct call through p — and
// the items of a call the batch did not answer are marked Unanswered,
// with why.
func take(ctx context.Context, p llm.Provider, key string, done ProviderDone, fill FillInput, calls []call, results map[string]llm.BatchResult, opts llm.Options, out *FillOutput) error {
	for n, c := range calls {
		r, ok := results[requestID(key, n)]
		if !ok || r.Response == nil {
			why := r.Error
			switch {
			case why != "":
			case done.Error != "":
				why = done.Error
			case done.ID == "":
				why = "the provider batch was not made"
			default:
				why = "the provider batch " + done.ID + " has no answer for it"
			}
			for i := c.first; i < c.first+c.count; i++ {
				out.Items[i] = ItemFill{Error: fmt.Sprintf("chunk %s: %s", fill.Chunk, why), Unanswered: true}
			}
			continue
		}
		resp := *r.Response
		llm.RecordBatched(ctx, p, done.ID, c.req, &resp)
		resp.Usage = resp.Usage.AsBatched()
		if err := absorb(ctx, p, fill, c, &resp, opts, out, &sync.Mutex{}); err != nil {
			return err
		}
	}
	return nil
}
