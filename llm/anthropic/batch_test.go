package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/augceo/vibe/internal/llmtest"
	"github.com/augceo/vibe/llm"
)

// batchRequests are n requests of schema, ids r0, r1, …, each with its own
// prompt.
func batchRequests(n int, schema string) []llm.BatchRequest {
	out := make([]llm.BatchRequest, n)
	for i := range out {
		req := request(schema)
		req.Messages = []llm.Message{{Role: llm.RoleUser, Content: fmt.Sprintf("Draft item %d.", i)}}
		out[i] = llm.BatchRequest{ID: fmt.Sprintf("r%d", i), Request: req}
	}
	return out
}

// echo answers each request with a JSON object naming its prompt.
func echo(_, body string) string {
	r := llmtest.Read(body)
	return fmt.Sprintf(`{"zeta":%q,"alpha":{"yy":1,"bb":"b"}}`, r.Prompts[0])
}

func testProvider(srv *llmtest.Anthropic, opts Options) *Provider {
	opts.Model, opts.BaseURL, opts.APIKey, opts.MaxRetries = "claude-test", srv.URL, "k", -1
	return New(opts)
}

// TestBatchRoundTrip submits a Message Batch, follows it to its end and
// reads its results: each the answer a direct call gets, usage and cache
// tokens included.
func TestBatchRoundTrip(t *testing.T) {
	srv := llmtest.NewAnthropic(t, echo, llmtest.Options{Cached: 0.5, CacheWrite: 0.25})
	p := testProvider(srv, Options{})
	ctx := context.Background()
	reqs := batchRequests(3, schemaText)
	id, err := p.SubmitBatch(ctx, llm.BatchSubmission{Key: "k1", Requests: reqs})
	if err != nil {
		t.Fatal(err)
	}
	srv.Batches.Hold()
	if st, _ := p.BatchStatus(ctx, id); st.Status != "in_progress" || st.Ended || st.Total != 3 || st.Succeeded != 0 {
		t.Errorf("held: %+v, want in_progress of 3", st)
	}
	srv.Batches.Release()
	st := llmtest.AwaitBatch(t, p, id)
	if st.Status != "ended" || st.Succeeded != 3 || st.Failed != 0 {
		t.Errorf("ended as %+v", st)
	}
	res, err := p.BatchResults(ctx, id, reqs)
	if err != nil {
		t.Fatal(err)
	}
	llmtest.CheckDirect(t, p, reqs, res)
	if u := res["r0"].Response.Usage; u.PromptTokens != 100 || u.CachedPromptTokens != 50 || u.CacheWriteTokens != 25 || u.CompletionTokens != 30 {
		t.Errorf("usage %+v", u)
	}
	if !strings.Contains(res["r2"].Response.Content, "Draft item 2.") {
		t.Errorf("r2 answered %s", res["r2"].Response.Content)
	}
	if srv.Requests() != 3 {
		t.Errorf("the server counted %d direct requests, want the 3 direct calls only", srv.Requests())
	}
	if srv.Batches.Created() != 1 || srv.Batches.ResultsRead() != 1 || srv.Batches.Uploads() != 0 {
		t.Errorf("batches %d, results read %d, uploads %d", srv.Batches.Created(), srv.Batches.ResultsRead(), srv.Batches.Uploads())
	}
}

// TestBatchParams checks the batch's body: each request's params the very
// bytes Complete sends — schema property order and cache breakpoint
// included — under its custom_id.
func TestBatchParams(t *testing.T) {
	for _, tc := range []struct {
		name, system string
		breakpoint   string
	}{
		{"system breakpoint", "You fill in JSON.", `"system":[{"text":"You fill in JSON.","cache_control":{"type":"ephemeral"},"type":"text"}]`},
		{"tool breakpoint", "", `"cache_control":{"type":"ephemeral"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewAnthropic(t, echo, llmtest.Options{})
			p := testProvider(srv, Options{CacheMinTokens: 1})
			ctx := context.Background()
			reqs := batchRequests(2, schemaText)
			for _, r := range reqs {
				r.Request.System = tc.system
			}
			if _, err := p.SubmitBatch(ctx, llm.BatchSubmission{Key: "params", Requests: reqs}); err != nil {
				t.Fatal(err)
			}
			sent := srv.Batches.Uploaded()
			if len(sent) != 1 {
				t.Fatalf("%d batch bodies", len(sent))
			}
			var body struct {
				Requests []struct {
					CustomID string          `json:"custom_id"`
					Params   json.RawMessage `json:"params"`
				} `json:"requests"`
			}
			if err := json.Unmarshal(sent[0], &body); err != nil {
				t.Fatal(err)
			}
			if len(body.Requests) != 2 {
				t.Fatalf("%d requests", len(body.Requests))
			}
			for i, r := range reqs {
				if _, err := p.Complete(ctx, r.Request); err != nil {
					t.Fatal(err)
				}
				direct := []byte(srv.Bodies()[i])
				got := body.Requests[i]
				if got.CustomID != r.ID {
					t.Errorf("request %d: custom_id %s", i, got.CustomID)
				}
				if !bytes.Equal(got.Params, direct) {
					t.Errorf("request %d's params differ from Complete's body:\n%s\n%s", i, got.Params, direct)
				}
				if !bytes.Contains(got.Params, []byte(`"input_schema":{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"object","properties":{"yy"`)) {
					t.Errorf("request %d: the schema's order is lost: %s", i, got.Params)
				}
				if !bytes.Contains(got.Params, []byte(tc.breakpoint)) {
					t.Errorf("request %d: no breakpoint %s in %s", i, tc.breakpoint, got.Params)
				}
			}
		})
	}
}

// TestBatchResubmit submits a batch again with Since: after an attempt cut
// off once the batch was created, the batch is found by its size and
// taken; with two of that size since then, which one is this attempt's
// cannot be told, and a new one is made.
func TestBatchResubmit(t *testing.T) {
	t.Run("cut off", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		srv := llmtest.NewAnthropic(t, echo, llmtest.Options{OnEvent: func(e llmtest.Event) {
			if e.Kind == llmtest.EventBatch {
				cancel()
			}
		}})
		p := testProvider(srv, Options{})
		// A batch of another size before it, which must not be taken.
		if _, err := p.SubmitBatch(context.Background(), llm.BatchSubmission{Key: "other", Requests: batchRequests(2, schemaText)}); err != nil {
			t.Fatal(err)
		}
		s := llm.BatchSubmission{Key: "again", Requests: batchRequests(3, schemaText), Since: time.Now()}
		if _, err := p.SubmitBatch(ctx, s); !errors.Is(err, context.Canceled) {
			t.Fatalf("the cut-off attempt: %v", err)
		}
		id, err := p.SubmitBatch(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		ids := srv.Batches.IDs()
		if srv.Batches.Created() != 2 || id != ids[1] {
			t.Errorf("got %s of %v; want the cut-off attempt's batch, none new", id, ids)
		}
		for r, n := range srv.Batches.Submitted() {
			if want := map[bool]int{true: 2, false: 1}[r < "r2"]; n != want {
				t.Errorf("request %s submitted %d times, want %d", r, n, want)
			}
		}
	})
	t.Run("ambiguous", func(t *testing.T) {
		srv := llmtest.NewAnthropic(t, echo, llmtest.Options{})
		p := testProvider(srv, Options{})
		since := time.Now()
		for _, key := range []string{"a", "b"} {
			if _, err := p.SubmitBatch(context.Background(), llm.BatchSubmission{Key: key, Requests: batchRequests(2, schemaText)}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := p.SubmitBatch(context.Background(), llm.BatchSubmission{Key: "c", Requests: batchRequests(2, schemaText), Since: since}); err != nil {
			t.Fatal(err)
		}
		if srv.Batches.Created() != 3 {
			t.Errorf("%d batches, want a new one", srv.Batches.Created())
		}
	})
}

// TestBatchFaults has a request error and another expire: the batch
// ends, each says why it has no answer, the rest are answered.
func TestBatchFaults(t *testing.T) {
	srv := llmtest.NewAnthropic(t, echo, llmtest.Options{})
	srv.Batches.Fail("r1", "the prompt is too long")
	srv.Batches.Expire("r2")
	p := testProvider(srv, Options{})
	ctx := context.Background()
	reqs := batchRequests(3, schemaText)
	id, err := p.SubmitBatch(ctx, llm.BatchSubmission{Key: "faults", Requests: reqs})
	if err != nil {
		t.Fatal(err)
	}
	st := llmtest.AwaitBatch(t, p, id)
	if st.Status != "ended" || st.Succeeded != 1 || st.Failed != 2 || st.Total != 3 {
		t.Errorf("ended as %+v", st)
	}
	res, err := p.BatchResults(ctx, id, reqs)
	if err != nil {
		t.Fatal(err)
	}
	if res["r0"].Response == nil {
		t.Errorf("r0: %+v", res["r0"])
	}
	if r := res["r1"]; r.Response != nil || r.Error != "anthropic: invalid_request_error: the prompt is too long" {
		t.Errorf("r1: %+v", r)
	}
	if r := res["r2"]; r.Response != nil || !strings.Contains(r.Error, "expired") {
		t.Errorf("r2: %+v", r)
	}
}

// TestBatchCancel cancels a batch with one request answered: it is
// canceling, then ended, the answered request's answer kept and the rest
// canceled; cancelling it again is no error.
func TestBatchCancel(t *testing.T) {
	srv := llmtest.NewAnthropic(t, echo, llmtest.Options{})
	srv.Batches.Pace(1)
	p := testProvider(srv, Options{})
	ctx := context.Background()
	reqs := batchRequests(3, schemaText)
	id, err := p.SubmitBatch(ctx, llm.BatchSubmission{Key: "cancel", Requests: reqs})
	if err != nil {
		t.Fatal(err)
	}
	p.BatchStatus(ctx, id) // r0 answered
	srv.Batches.Hold()
	if _, err := p.BatchResults(ctx, id, reqs); err == nil || !strings.Contains(err.Error(), "has not ended") {
		t.Errorf("results of a running batch: %v", err)
	}
	if err := p.CancelBatch(ctx, id); err != nil {
		t.Fatal(err)
	}
	if st, _ := p.BatchStatus(ctx, id); st.Status != "canceling" || st.Ended {
		t.Errorf("after the cancel: %+v", st)
	}
	srv.Batches.Release()
	st := llmtest.AwaitBatch(t, p, id)
	if st.Status != "ended" || st.Succeeded != 1 || st.Failed != 2 {
		t.Errorf("ended as %+v", st)
	}
	res, err := p.BatchResults(ctx, id, reqs)
	if err != nil {
		t.Fatal(err)
	}
	if res["r0"].Response == nil || !strings.Contains(res["r1"].Error, "canceled") || !strings.Contains(res["r2"].Error, "canceled") {
		t.Errorf("results %+v", res)
	}
	if err := p.CancelBatch(ctx, id); err != nil {
		t.Errorf("cancelling an ended batch: %v", err)
	}
	if err := p.CancelBatch(ctx, "msgbatch_none"); err == nil {
		t.Error("cancelling no batch is no error")
	}
}

// TestBatchRefused: a submission over the limits or with ids not unique is
// refused before anything is sent.
func TestBatchRefused(t *testing.T) {
	srv := llmtest.NewAnthropic(t, echo, llmtest.Options{})
	p := testProvider(srv, Options{})
	many := make([]llm.BatchRequest, 100_001)
	for i := range many {
		many[i] = llm.BatchRequest{ID: fmt.Sprint(i), Request: request(schemaText)}
	}
	dup := batchRequests(2, schemaText)
	dup[1].ID = "r0"
	for _, tc := range []struct {
		name string
		s    llm.BatchSubmission
		want string
	}{
		{"too many", llm.BatchSubmission{Key: "k", Requests: many}, "100001 requests, over the provider's limit of 100000"},
		{"duplicate ids", llm.BatchSubmission{Key: "k", Requests: dup}, `"r0" is not unique`},
		{"bad schema", llm.BatchSubmission{Key: "k", Requests: batchRequests(1, `[]`)}, "request r0: anthropic: the schema must be a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := p.SubmitBatch(context.Background(), tc.s)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
	if srv.Batches.Created() != 0 {
		t.Errorf("%d batches", srv.Batches.Created())
	}
	if l := p.BatchLimits(); l.MaxRequests != 100_000 || l.MaxBytes != 256<<20 {
		t.Errorf("limits %+v", l)
	}
}
