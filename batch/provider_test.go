package batch_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/internal/llmtest"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/llm/anthropic"
	"github.com/augceo/vibe/llm/openai"
)

// wire is a test model at one provider's wire, with its Batch API.
type wire struct {
	name     string
	provider llm.Provider
	batches  *llmtest.Batches
	direct   func() int // direct model requests
}

// wires are the two providers' test models, answering each item's part
// with part.
func wires(t *testing.T, part func(step, prompt string, repair bool) string) []wire {
	oa := llmtest.NewServer(t, llmtest.Multiplexed(part), llmtest.Options{})
	an := llmtest.NewAnthropic(t, llmtest.Multiplexed(part), llmtest.Options{})
	return []wire{
		{"openai", openai.New(openai.Options{Model: "m", BaseURL: oa.URL, APIKey: "k", MaxRetries: -1}), oa.Batches, oa.Requests},
		{"anthropic", anthropic.New(anthropic.Options{Model: "m", BaseURL: an.URL, APIKey: "k", MaxRetries: -1}), an.Batches, an.Requests},
	}
}

// providerCall are quick provider-batch options for tests: the clock
// is the polls.
var providerCall = batch.CallOptions{ProviderBatch: true, ProviderPoll: 20 * time.Millisecond, ProviderWindow: 2 * time.Second}

// TestProviderBatch runs 1,000 items at K=32 through each provider's
// Batch API: one provider batch of 32 requests, no direct call, every
// output what the direct path gives, each action once.
func TestProviderBatch(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	const n, k = 1000, 32
	for _, w := range wires(t, llmtest.Verdict) {
		t.Run(w.name, func(t *testing.T) {
			rec := &recorder{}
			c := stackWith(t, w.provider, rec.actions())
			var results []batch.Result
			sum, err := c.Run(context.Background(), strings.NewReader(llmtest.Comments(n)), func(r batch.Result) error {
				results = append(results, r)
				return nil
			}, batch.Options{Process: moderate(t), ID: "pb-" + w.name, Size: k, Call: providerCall})
			if err != nil {
				t.Fatal(err)
			}
			calls := (n + k - 1) / k
			if got := w.direct(); got != 0 {
				t.Errorf("%d direct model requests, want 0", got)
			}
			if got := w.batches.Created(); got != 1 {
				t.Errorf("%d provider batches, want 1", got)
			}
			sub := w.batches.Submitted()
			if len(sub) != calls {
				t.Errorf("%d requests in provider batches, want %d", len(sub), calls)
			}
			for id, times := range sub {
				if times != 1 {
					t.Errorf("request %s submitted %d times", id, times)
				}
			}
			if sum.Done != n || sum.Failed != 0 || sum.Requests != calls {
				t.Errorf("summary %+v", sum)
			}
			if b := sum.Usage.Batched; b == nil || b.PromptTokens != sum.Usage.PromptTokens || b.CompletionTokens != sum.Usage.CompletionTokens {
				t.Errorf("usage %+v: all of it should be batched", sum.Usage)
			}
			checkVerdicts(t, results, n, "")
			if rec.total != n || len(rec.calls) != n {
				t.Errorf("the action ran %d times for %d keys, want %d once each", rec.total, len(rec.calls), n)
			}
			st, err := c.Status(context.Background(), "pb-"+w.name)
			if err != nil {
				t.Fatal(err)
			}
			if st.Provider == nil || st.Provider.Submitted != 1 || st.Provider.Requests != calls || len(st.Provider.Flights) != 0 {
				t.Errorf("provider state %+v", st.Provider)
			}
		})
	}
}

// TestProviderBatchFaults: a provider batch fails 3 requests and leaves 2
// unanswered until it expires; those items' calls go in a second provider
// batch and complete, with new request ids — nothing submitted twice.
// With ProviderFallback they go direct instead.
func TestProviderBatchFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	const n, k = 160, 16
	for _, fallback := range []bool{false, true} {
		t.Run(fmt.Sprintf("fallback=%v", fallback), func(t *testing.T) {
			model := llmtest.NewServer(t, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{})
			rec := &recorder{}
			c := stack(t, model.URL, rec.actions())
			model.Batches.Hold()
			created := model.Batches.Await(llmtest.EventBatch)
			call := providerCall
			call.ProviderFallback = fallback
			// The test counts the calls of all 10 groups in the first
			// provider batch: a longer quiet time than providerCall's, for a
			// busy machine whose groups hand their calls seconds apart.
			call.ProviderWindow = 6 * time.Second
			type done struct {
				sum *batch.Summary
				err error
			}
			ended := make(chan done, 1)
			var results []batch.Result
			go func() {
				sum, err := c.Run(context.Background(), strings.NewReader(llmtest.Comments(n)), func(r batch.Result) error {
					results = append(results, r)
					return nil
				}, batch.Options{Process: moderate(t), ID: "faults", Size: k, Call: call})
				ended <- done{sum, err}
			}()
			select {
			case <-created:
			case <-time.After(time.Minute):
				t.Fatal("no provider batch was created")
			}
			var ids []string
			for id := range model.Batches.Submitted() {
				ids = append(ids, id)
			}
			if len(ids) != n/k {
				t.Fatalf("%d requests in the first provider batch, want %d", len(ids), n/k)
			}
			slices.Sort(ids)
			for _, id := range ids[:3] {
				model.Batches.Fail(id, "the server had an error processing this request")
			}
			model.Batches.Expire(ids[3:5]...)
			model.Batches.Release()
			var d done
			select {
			case d = <-ended:
			case <-time.After(2 * time.Minute):
				t.Fatal("the batch did not end")
			}
			if d.err != nil {
				t.Fatal(d.err)
			}
			if d.sum.Done != n || d.sum.Failed != 0 {
				t.Errorf("summary %+v", d.sum)
			}
			for i, r := range results {
				if r.Line != i+1 || r.Status != batch.StatusCompleted {
					t.Fatalf("line %d: %+v", i+1, r)
				}
			}
			for id, times := range model.Batches.Submitted() {
				if times != 1 {
					t.Errorf("request %s submitted %d times", id, times)
				}
			}
			if fallback {
				if model.Batches.Created() != 1 || model.Requests() != 5 {
					t.Errorf("%d provider batches and %d direct requests, want 1 and the 5 unanswered", model.Batches.Created(), model.Requests())
				}
			} else if model.Batches.Created() != 2 || len(model.Batches.Submitted()) != n/k+5 || model.Requests() != 0 {
				t.Errorf("%d provider batches with %d requests, and %d direct requests; want 2 with %d, none direct",
					model.Batches.Created(), len(model.Batches.Submitted()), model.Requests(), n/k+5)
			}
			if rec.total != n {
				t.Errorf("the action ran %d times, want %d", rec.total, n)
			}
		})
	}
}

// TestProviderBatchCancel: cancelling a Vibe batch whose calls wait in a
// provider batch cancels the provider batch; the run stops.
func TestProviderBatchCancel(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	model := llmtest.NewServer(t, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{})
	c := stack(t, model.URL, (&recorder{}).actions())
	model.Batches.Hold()
	created := model.Batches.Await(llmtest.EventBatch)
	ended := make(chan error, 1)
	go func() {
		_, err := c.Run(context.Background(), strings.NewReader(llmtest.Comments(64)), func(batch.Result) error { return nil },
			batch.Options{Process: moderate(t), ID: "cancelled", Size: 16, Call: providerCall})
		ended <- err
	}()
	var ev llmtest.Event
	select {
	case ev = <-created:
	case <-time.After(time.Minute):
		t.Fatal("no provider batch was created")
	}
	if err := c.Cancel(context.Background(), "cancelled"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ended:
		if !errors.Is(err, batch.ErrCancelled) {
			t.Errorf("Run: %v, want ErrCancelled", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the run did not stop")
	}
	// The provider-batch workflow cancels at the provider after the run
	// has stopped; the clock stays held until it has (a step of a batch
	// still in progress would complete it).
	deadline := time.Now().Add(time.Minute)
	for model.Batches.Cancels() == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	model.Batches.Release()
	for model.Batches.Status(ev.ID) != "cancelled" && time.Now().Before(deadline) {
		model.Batches.Advance(ev.ID)
		time.Sleep(50 * time.Millisecond)
	}
	if model.Batches.Cancels() != 1 || model.Batches.Status(ev.ID) != "cancelled" {
		t.Errorf("%d cancels; provider batch %s is %q, want cancelled", model.Batches.Cancels(), ev.ID, model.Batches.Status(ev.ID))
	}
	var (
		st  batch.Status
		err error
	)
	for time.Now().Before(deadline) {
		var s *batch.Status
		if s, err = c.Status(context.Background(), "cancelled"); err == nil {
			st = *s
			if st.Provider != nil && st.Provider.Cancelled {
				break
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil || st.Status != "canceled" || st.Provider == nil || !st.Provider.Cancelled {
		t.Errorf("status %+v, %v", st, err)
	}
}

// TestProviderBatchCancelSubmitting: a Vibe batch cancelled while its
// provider batch is being submitted — made at the provider, its id not yet
// back in the workflow — still cancels that provider batch: the
// cancellation waits for the submission instead of forgetting it.
func TestProviderBatchCancelSubmitting(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	var c *batch.Client
	cancelled := make(chan error, 1)
	model := llmtest.NewServer(t, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{OnEvent: func(e llmtest.Event) {
		if e.Kind == llmtest.EventBatch {
			// The batch is made; its creation's answer waits for the cancel.
			cancelled <- c.Cancel(context.Background(), "cancel-submitting")
		}
	}})
	c = stack(t, model.URL, (&recorder{}).actions())
	model.Batches.Hold()
	_, err := c.Run(context.Background(), strings.NewReader(llmtest.Comments(32)), func(batch.Result) error { return nil },
		batch.Options{Process: moderate(t), ID: "cancel-submitting", Size: 16, Call: providerCall})
	if !errors.Is(err, batch.ErrCancelled) {
		t.Errorf("Run: %v, want ErrCancelled", err)
	}
	if err := <-cancelled; err != nil {
		t.Fatal(err)
	}
	ids := model.Batches.IDs()
	if len(ids) != 1 {
		t.Fatalf("provider batches %v, want one", ids)
	}
	deadline := time.Now().Add(time.Minute)
	for model.Batches.Cancels() == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := model.Batches.Cancels(); n != 1 {
		t.Errorf("%d cancels of provider batch %s (%s), want 1", n, ids[0], model.Batches.Status(ids[0]))
	}
}
