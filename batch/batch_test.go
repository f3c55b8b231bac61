package batch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/internal/llmtest"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/process"
)

// TestWireProtocol runs 1,000 items at K=32 against a model at the OpenAI
// wire protocol: ⌈1000/32⌉ = 32 requests; each item's output is what the
// model answered for it; one item's broken part costs one more request,
// for that item alone; the action runs once per item.
func TestWireProtocol(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	const n, k = 1000, 32
	model := llmtest.NewServer(t, llmtest.Multiplexed(func(step, prompt string, repair bool) string {
		if prompt == "comment 500" && step == "assess" && !repair {
			return `{"sentiment":"furious"}` // breaks the enum
		}
		return llmtest.Verdict(step, prompt, repair)
	}), llmtest.Options{})
	rec := &recorder{}
	c := stack(t, model.URL, rec.actions())

	var results []batch.Result
	sum, err := c.Run(context.Background(), strings.NewReader(llmtest.Comments(n)), func(r batch.Result) error {
		results = append(results, r)
		return nil
	}, batch.Options{Process: moderate(t), ID: "wire", Size: k, Concurrency: 8})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := model.Requests(), (n+k-1)/k+1; got != want {
		t.Errorf("%d model requests, want %d: %d batch calls and one repair %v", got, want, (n+k-1)/k, callSizes(model.Bodies()))
	}
	if sum.Done != n || sum.Failed != 0 || sum.Requests != (n+k-1)/k+1 {
		t.Errorf("summary %+v", sum)
	}
	checkVerdicts(t, results, n, "wire")
	if rec.total != n || len(rec.calls) != n {
		t.Errorf("the action ran %d times for %d keys, want %d once each", rec.total, len(rec.calls), n)
	}
	repairs := 0
	for _, b := range model.Bodies() {
		if r := llmtest.Read(b); r.Repair {
			repairs++
			if len(r.Prompts) != 1 || r.Prompts[0] != "comment 500" || !strings.Contains(b, "furious") {
				t.Errorf("the repair request is not about item 500 alone: %.300s", b)
			}
		}
	}
	if repairs != 1 {
		t.Errorf("%d repair requests, want 1", repairs)
	}
	st, err := c.Status(context.Background(), "wire")
	if err != nil {
		t.Fatal(err)
	}
	if st.Items != n || st.Done != n || st.Requests != (n+k-1)/k+1 || st.Groups != (n+k-1)/k {
		t.Errorf("status %+v", st)
	}
	// Items are listed with their batch, not among processes.
	page, err := c.Processes.List(context.Background(), process.ListOptions{})
	if err != nil || len(page.Processes) != 0 {
		t.Errorf("processes listed: %v, %v", page.Processes, err)
	}
	// An item reads like a process.
	info, err := c.Processes.Get(context.Background(), batch.ItemID("wire", 500))
	if err != nil {
		t.Fatal(err)
	}
	if got := info.State.Lookup("llmContext1").Lookup("assess").Lookup("sentiment").Str(); got != "positive" || len(info.Calls) != 1 || len(info.Calls[0].Turns) != 2 {
		t.Errorf("item 500: sentiment %q, calls %s", got, jsonv.Marshal(mustJSON(t, info.Calls)))
	}
}

func mustJSON(t *testing.T, v any) jsonv.Value {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jsonv.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// endless is an input that never ends: "comment N" lines, one per Read,
// counted.
type endless struct {
	mu    sync.Mutex
	lines int
}

func (e *endless) Read(p []byte) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.lines++
	return copy(p, fmt.Sprintf("%q\n", fmt.Sprintf("comment %d", e.lines))), nil
}

func (e *endless) read() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.lines
}

// TestBackPressure: while a model holds every call, a batch over an
// endless input reads no more than (C+1)×K lines.
func TestBackPressure(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	const k, conc = 4, 2
	block := make(chan struct{})
	model := llmtest.NewServer(t, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{Block: block})
	t.Cleanup(func() { close(block) })
	c := stack(t, model.URL, (&recorder{}).actions())
	in := &endless{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Run(ctx, in, func(batch.Result) error { return nil }, batch.Options{Process: moderate(t), Size: k, Concurrency: conc})
		done <- err
	}()
	deadline := time.Now().Add(time.Minute)
	for model.Requests() < conc {
		if time.Now().After(deadline) {
			t.Fatalf("%d calls reached the model, want %d", model.Requests(), conc)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(time.Second) // time to read on, were it to
	if got, limit := in.read(), (conc+1)*k; got > limit {
		t.Errorf("%d lines read while every call is held, want at most (C+1)×K = %d", got, limit)
	} else {
		t.Logf("%d lines read while the model holds %d calls (limit %d)", got, model.Requests(), limit)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run after cancel: %v", err)
	}
}

// TestPersonInBatch: an item at a person's step waits inside its group
// while its siblings go on; it is read and answered by its id as any
// process is, a bad answer is refused by path and the item keeps waiting,
// and an answered item completes before its siblings are answered.
func TestPersonInBatch(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	model := llmtest.NewServer(t, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{})
	rec := &recorder{}
	c := stack(t, model.URL, rec.actions())
	ctx := t.Context()
	type ran struct {
		sum     *batch.Summary
		results []batch.Result
		err     error
	}
	done := make(chan ran, 1)
	go func() {
		var r ran
		r.sum, r.err = c.Run(ctx, strings.NewReader(llmtest.Comments(4)), func(res batch.Result) error { r.results = append(r.results, res); return nil },
			batch.Options{Process: reviewProcess(t), ID: "review", Size: 4})
		done <- r
	}()
	// waitFor watches item id until it has status want; an item whose
	// group has not told the batch of its lines yet is not found, and
	// looked for again.
	waitFor := func(id string, want process.Status) *process.Info {
		t.Helper()
		for range 500 {
			for info, err := range c.Processes.Watch(ctx, id, process.WatchOptions{Interval: 20 * time.Millisecond}) {
				if err != nil && !errors.Is(err, process.ErrNotFound) {
					t.Fatalf("%s: %v", id, err)
				}
				if info != nil && info.Status == want {
					return info
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("%s never %s", id, want)
		return nil
	}
	for line := 1; line <= 4; line++ {
		info := waitFor(batch.ItemID("review", line), process.Waiting)
		if info.Waiting == nil || info.Waiting.Chunk != "USER_userContext1" || info.Process != "review" {
			t.Fatalf("item %d waits for %+v", line, info.Waiting)
		}
	}
	two := batch.ItemID("review", 2)
	var refused *process.RefusedError
	if _, err := c.Processes.Answer(ctx, two, mustParse(t, `{"confirm":{"approve":"maybe"}}`)); !errors.As(err, &refused) || !strings.Contains(err.Error(), "/confirm/approve") {
		t.Fatalf("a bad answer: %v", err)
	}
	if _, err := c.Processes.Answer(ctx, two, mustParse(t, `{"confirm":{"approve":"yes"}}`)); err != nil {
		t.Fatal(err)
	}
	if info := waitFor(two, process.Completed); info.State.Lookup("serverContext1").Lookup("record").IsNull() {
		t.Errorf("item 2 completed without its record: %s", jsonv.Marshal(info.State))
	}
	if info, err := c.Processes.Get(ctx, batch.ItemID("review", 1)); err != nil || info.Status != process.Waiting {
		t.Errorf("item 1 after item 2's answer: %+v %v", info, err)
	}
	if st, err := c.Status(ctx, "review"); err != nil || st.Waiting != 3 {
		t.Errorf("the batch's status with 3 items waiting: %+v %v", st, err)
	}
	if ids, err := c.Waiting(ctx, "review"); err != nil || !slices.Equal(ids, []string{batch.ItemID("review", 1), batch.ItemID("review", 3), batch.ItemID("review", 4)}) {
		t.Errorf("the items waiting: %v %v", ids, err)
	}
	if _, err := c.Waiting(ctx, "no-such-batch"); !errors.Is(err, batch.ErrNotFound) {
		t.Errorf("the items waiting in no batch: %v", err)
	}
	if err := c.Processes.Cancel(ctx, batch.ItemID("review", 1)); !errors.Is(err, process.ErrHostedCancel) {
		t.Errorf("cancel of an item: %v", err)
	}
	var notWaiting *process.NotWaitingError
	if _, err := c.Processes.Answer(ctx, two, mustParse(t, `{"confirm":{"approve":"no"}}`)); !errors.As(err, &notWaiting) || notWaiting.Status != process.Completed {
		t.Errorf("a second answer to item 2: %v", err)
	}
	if p, err := c.Processes.Program(ctx, two); err != nil || len(p.Chunks) != 3 {
		t.Errorf("item 2's program: %v", err)
	}
	for _, line := range []int{1, 3, 4} {
		if _, err := c.Processes.Answer(ctx, batch.ItemID("review", line), mustParse(t, `{"confirm":{"approve":"no"}}`)); err != nil {
			t.Fatal(err)
		}
	}
	r := <-done
	if r.err != nil || r.sum.Done != 4 || len(r.results) != 4 {
		t.Fatalf("the batch: %+v %v", r.sum, r.err)
	}
	for _, res := range r.results {
		if !strings.Contains(string(res.Output), `"userContext1":{"confirm":{"approve":`) {
			t.Errorf("line %d: %s", res.Line, res.Output)
		}
	}
	if rec.total != 4 || len(rec.calls) != 4 {
		t.Errorf("the record action ran %d times with %d keys, want 4", rec.total, len(rec.calls))
	}
	if _, err := c.Processes.Get(ctx, batch.ItemID("review", 9)); !errors.Is(err, process.ErrNotFound) {
		t.Errorf("a line past the batch: %v", err)
	}
}

// TestNotAnItem: a line that is no item (not JSON) has no process in its
// group, though the group holds its line: reading it, its program or
// answering it is "no such process" (the group's typed refusal, not its
// text), not an engine error.
func TestNotAnItem(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	ctx := context.Background()
	model := llmtest.NewServer(t, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{})
	c := stack(t, model.URL, (&recorder{}).actions())
	sum, err := c.Run(ctx, strings.NewReader(llmtest.Comments(3)+"{not json\n"), func(batch.Result) error { return nil }, batch.Options{Process: moderate(t), ID: "bad-line", Size: 4})
	if err != nil || sum.Done != 3 || sum.Failed != 1 {
		t.Fatalf("the batch: %+v %v", sum, err)
	}
	id := batch.ItemID("bad-line", 4)
	if _, err := c.Processes.Get(ctx, id); !errors.Is(err, process.ErrNotFound) {
		t.Errorf("get of a line that is no item: %v", err)
	}
	if _, err := c.Processes.Program(ctx, id); !errors.Is(err, process.ErrNotFound) {
		t.Errorf("program of a line that is no item: %v", err)
	}
	if _, err := c.Processes.Answer(ctx, id, mustParse(t, `{}`)); !errors.Is(err, process.ErrNotFound) {
		t.Errorf("answer to a line that is no item: %v", err)
	}
	if _, err := c.Processes.Get(ctx, batch.ItemID("bad-line", 3)); err != nil {
		t.Errorf("get of an item of the same group: %v", err)
	}
}

// TestActionRetriedAlone: a group runs its items' calls of a step's action
// in one activity, each under its own key; a call that fails is retried
// alone, and no sibling's call runs again for it. One that fails for good
// fails its item only.
func TestActionRetriedAlone(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	model := llmtest.NewServer(t, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{})
	var mu sync.Mutex
	calls := map[string]int{}
	acts := &action.Registry{}
	acts.Register(action.Action{Name: "record", Retry: &temporal.RetryPolicy{InitialInterval: time.Millisecond, MaximumAttempts: 3},
		Run: func(ctx context.Context, in jsonv.Value) (jsonv.Value, error) {
			key := action.IdempotencyKey(ctx)
			mu.Lock()
			calls[key]++
			n := calls[key]
			mu.Unlock()
			switch {
			case strings.Contains(key, "-3:") && n == 1:
				return jsonv.Value{}, errors.New("the ledger is busy") // retried
			case strings.Contains(key, "-5:"):
				return jsonv.Value{}, action.NonRetryable(errors.New("no such ledger"))
			}
			return jsonv.ObjectValue(jsonv.Member{Name: "recorded", Value: jsonv.IntValue(int64(n))}), nil
		}})
	c := stack(t, model.URL, acts)
	var results []batch.Result
	sum, err := c.Run(t.Context(), strings.NewReader(llmtest.Comments(8)), func(r batch.Result) error { results = append(results, r); return nil },
		batch.Options{Process: moderate(t), ID: "alone", Size: 8})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Done != 7 || sum.Failed != 1 || !strings.Contains(results[4].Error, "no such ledger") {
		t.Fatalf("summary %+v, line 5: %+v", sum, results[4])
	}
	for line := 1; line <= 8; line++ {
		key := action.Key(batch.ItemID("alone", line), "serverContext1.record")
		want := 1
		if line == 3 {
			want = 2
		}
		if calls[key] != want {
			t.Errorf("line %d's action ran %d times, want %d", line, calls[key], want)
		}
	}
}

// TestRecordContinues: a batch's record continues as new when its history
// grows past ContinueAfter, and its counts, its lines and its status come
// through exact.
func TestRecordContinues(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	defer func(n int) { batch.ContinueAfter = n }(batch.ContinueAfter)
	batch.ContinueAfter = 25
	model := llmtest.NewServer(t, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{})
	rec := &recorder{}
	c := stack(t, model.URL, rec.actions())
	ctx := t.Context()
	sum, err := c.Run(ctx, strings.NewReader(llmtest.Comments(40)), func(batch.Result) error { return nil },
		batch.Options{Process: moderate(t), ID: "long", Size: 2, Concurrency: 4})
	if err != nil || sum.Done != 40 {
		t.Fatalf("%+v %v", sum, err)
	}
	var st batch.Status // the record's result, once it has taken the end
	err = c.Processes.Temporal.GetWorkflow(ctx, "long", "").Get(ctx, &st)
	if err != nil || st.Status != batch.StatusCompleted || st.Items != 40 || st.Done != 40 || st.Groups != 20 || st.Requests != 20 {
		t.Fatalf("status %+v %v", st, err)
	}
	it := c.Processes.Temporal.GetWorkflowHistory(ctx, "long", "", false, 0)
	first, err := it.Next()
	if err != nil {
		t.Fatal(err)
	}
	if first.GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId() == "" {
		t.Error("the record never continued as new")
	}
	// The last run still knows every group's lines.
	if info, err := c.Processes.Get(ctx, batch.ItemID("long", 1)); err != nil || info.Status != process.Completed {
		t.Errorf("line 1 after the record continued: %+v %v", info, err)
	}
}
