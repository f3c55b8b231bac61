package openai

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

// batchRequests are n requests of the test schema, ids r0, r1, …, each
// with its own prompt.
func batchRequests(n int) []llm.BatchRequest {
	out := make([]llm.BatchRequest, n)
	for i := range out {
		req := request()
		req.Messages = []llm.Message{{Role: llm.RoleUser, Content: fmt.Sprintf("Draft item %d.", i)}}
		out[i] = llm.BatchRequest{ID: fmt.Sprintf("r%d", i), Request: req}
	}
	return out
}

// echo answers each request with a JSON object naming its prompt, the
// optional "mid" left null (as a strict model fills it).
func echo(_, body string) string {
	r := llmtest.Read(body)
	return fmt.Sprintf(`{"zeta":%q,"alpha":{"yy":1,"bb":"b"},"mid":null}`, r.Prompts[0])
}

func testProvider(srv *llmtest.Server, opts Options) *Provider {
	opts.Model, opts.BaseURL, opts.APIKey, opts.MaxRetries = "gpt-test", srv.URL, "k", -1
	return New(opts)
}

// TestBatchRoundTrip submits a batch, follows it to its end and reads its
// results: each the answer a direct call gets, read the same way, in
// every mode.
func TestBatchRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"json schema", Options{}},
		{"strict", Options{Strict: true}},
		{"tool", Options{Mode: ModeTool}},
		{"max tokens", Options{MaxTokens: 300}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewServer(t, echo, llmtest.Options{Cached: 0.5})
			p := testProvider(srv, tc.opts)
			ctx := context.Background()
			reqs := batchRequests(3)
			id, err := p.SubmitBatch(ctx, llm.BatchSubmission{Key: "k1", Requests: reqs})
			if err != nil {
				t.Fatal(err)
			}
			if st, _ := p.BatchStatus(ctx, id); st.Status != "in_progress" || st.Ended || st.Total != 3 {
				t.Errorf("first poll: %+v, want in_progress of 3", st)
			}
			st := llmtest.AwaitBatch(t, p, id)
			if st.Status != "completed" || st.Succeeded != 3 || st.Failed != 0 {
				t.Errorf("ended as %+v", st)
			}
			res, err := p.BatchResults(ctx, id, reqs)
			if err != nil {
				t.Fatal(err)
			}
			llmtest.CheckDirect(t, p, reqs, res)
			if c := res["r1"].Response.Content; tc.opts.Strict == strings.Contains(c, `"mid"`) {
				t.Errorf("strict %v: content %s", tc.opts.Strict, c)
			}
			if u := res["r0"].Response.Usage; u.CachedPromptTokens != 50 || u.PromptTokens != 100 {
				t.Errorf("usage %+v", u)
			}
			if srv.Requests() != 3 {
				t.Errorf("the server counted %d direct requests, want the 3 direct calls only", srv.Requests())
			}
			if srv.Batches.Uploads() != 1 || srv.Batches.Created() != 1 || srv.Batches.ResultsRead() != 1 {
				t.Errorf("uploads %d, batches %d, results read %d", srv.Batches.Uploads(), srv.Batches.Created(), srv.Batches.ResultsRead())
			}
		})
	}
}

// TestBatchRequestFile checks the uploaded request file: one line per
// request, each body the very bytes Complete sends for it — property order
// of the schema kept — under its custom_id, the metadata holding the key.
func TestBatchRequestFile(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		path []string // where the schema is
	}{
		{"json schema", Options{}, []string{"response_format", "json_schema", "schema"}},
		{"tool", Options{Mode: ModeTool, Strict: true}, []string{"tools", "0", "function", "parameters"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewWith(t, echo)
			p := testProvider(srv, tc.opts)
			ctx := context.Background()
			reqs := batchRequests(2)
			if _, err := p.SubmitBatch(ctx, llm.BatchSubmission{Key: "file-test", Requests: reqs}); err != nil {
				t.Fatal(err)
			}
			files := srv.Batches.Uploaded()
			if len(files) != 1 {
				t.Fatalf("%d files uploaded", len(files))
			}
			lines := bytes.Split(bytes.TrimSuffix(files[0], []byte("\n")), []byte("\n"))
			if len(lines) != 2 {
				t.Fatalf("%d lines: %s", len(lines), files[0])
			}
			for i, r := range reqs {
				p.Complete(ctx, r.Request)
				direct := []byte(srv.Bodies()[i])
				var l struct {
					CustomID string          `json:"custom_id"`
					Method   string          `json:"method"`
					URL      string          `json:"url"`
					Body     json.RawMessage `json:"body"`
				}
				if err := json.Unmarshal(lines[i], &l); err != nil {
					t.Fatal(err)
				}
				if l.CustomID != r.ID || l.Method != "POST" || l.URL != "/v1/chat/completions" {
					t.Errorf("line %d: %s %s %s", i, l.CustomID, l.Method, l.URL)
				}
				if !bytes.Equal(l.Body, direct) {
					t.Errorf("line %d's body differs from Complete's:\n%s\n%s", i, l.Body, direct)
				}
				if got := keyOrder(t, l.Body, append(tc.path, "properties")...); got != "zeta,alpha,mid" {
					t.Errorf("schema properties in order %q", got)
				}
			}
		})
	}
}

// TestBatchResubmit submits a batch again with Since after an attempt cut
// off at each step: what the attempt made is found and used, nothing is
// uploaded or created twice, and each request is submitted once.
func TestBatchResubmit(t *testing.T) {
	for _, cut := range []string{llmtest.EventUpload, llmtest.EventBatch, ""} {
		t.Run("after "+cut, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			srv := llmtest.NewServer(t, echo, llmtest.Options{OnEvent: func(e llmtest.Event) {
				if e.Kind == cut {
					cancel() // the client is gone before it hears the answer
				}
			}})
			p := testProvider(srv, Options{})
			since := time.Now()
			s := llm.BatchSubmission{Key: "again", Requests: batchRequests(3), Since: since}
			// An unrelated earlier batch of another key, which must not be
			// taken.
			if _, err := p.SubmitBatch(context.Background(), llm.BatchSubmission{Key: "other", Requests: batchRequests(3)}); err != nil {
				t.Fatal(err)
			}
			first, err := p.SubmitBatch(ctx, s)
			if cut != "" && !errors.Is(err, context.Canceled) {
				t.Fatalf("the cut-off attempt: %v", err)
			}
			if cut == "" && err != nil {
				t.Fatal(err)
			}
			id, err := p.SubmitBatch(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			if cut == "" && id != first {
				t.Errorf("resubmitted as %s, want %s", id, first)
			}
			if srv.Batches.Uploads() != 2 || srv.Batches.Created() != 2 {
				t.Errorf("%d uploads, %d batches; want 2 each (one of them the other key's)", srv.Batches.Uploads(), srv.Batches.Created())
			}
			for r, n := range srv.Batches.Submitted() {
				if n != 2 { // once in each key's batch
					t.Errorf("request %s submitted %d times", r, n)
				}
			}
			ids := srv.Batches.IDs()
			if id != ids[len(ids)-1] {
				t.Errorf("got batch %s, want the key's %s", id, ids[len(ids)-1])
			}
		})
	}
	t.Run("before since", func(t *testing.T) {
		srv := llmtest.NewWith(t, echo)
		p := testProvider(srv, Options{})
		s := llm.BatchSubmission{Key: "old", Requests: batchRequests(1)}
		if _, err := p.SubmitBatch(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		// What an attempt made before Since is not this attempt's.
		s.Since = time.Now().Add(2 * time.Second)
		if _, err := p.SubmitBatch(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		if srv.Batches.Uploads() != 2 || srv.Batches.Created() != 2 {
			t.Errorf("%d uploads, %d batches; want 2 each", srv.Batches.Uploads(), srv.Batches.Created())
		}
	})
}

// TestBatchFaults has a request fail and another expire: the batch ends
// expired, each says why it has no answer, the rest are answered.
func TestBatchFaults(t *testing.T) {
	srv := llmtest.NewWith(t, echo)
	srv.Batches.Fail("r1", "the request is bad")
	srv.Batches.Expire("r2")
	p := testProvider(srv, Options{})
	ctx := context.Background()
	reqs := batchRequests(3)
	id, err := p.SubmitBatch(ctx, llm.BatchSubmission{Key: "faults", Requests: reqs})
	if err != nil {
		t.Fatal(err)
	}
	st := llmtest.AwaitBatch(t, p, id)
	if st.Status != "expired" || st.Succeeded != 1 || st.Failed != 2 {
		t.Errorf("ended as %+v", st)
	}
	res, err := p.BatchResults(ctx, id, reqs)
	if err != nil {
		t.Fatal(err)
	}
	if res["r0"].Response == nil {
		t.Errorf("r0: %+v", res["r0"])
	}
	if r := res["r1"]; r.Response != nil || !strings.Contains(r.Error, "HTTP 400: the request is bad") {
		t.Errorf("r1: %+v", r)
	}
	if r := res["r2"]; r.Response != nil || !strings.Contains(r.Error, "expired") {
		t.Errorf("r2: %+v", r)
	}
	if srv.Batches.ResultsRead() != 2 {
		t.Errorf("%d files read, want the output and the error file", srv.Batches.ResultsRead())
	}
}

// TestBatchFailed has a whole batch fail: its status says why, and it has
// no results.
func TestBatchFailed(t *testing.T) {
	srv := llmtest.NewWith(t, echo)
	p := testProvider(srv, Options{})
	ctx := context.Background()
	id, err := p.SubmitBatch(ctx, llm.BatchSubmission{Key: "failing", Requests: batchRequests(2)})
	if err != nil {
		t.Fatal(err)
	}
	srv.Batches.FailBatch(id, "the organization is over its limit")
	st := llmtest.AwaitBatch(t, p, id)
	if st.Status != "failed" || !strings.Contains(st.Error, "over its limit") {
		t.Errorf("ended as %+v", st)
	}
	if res, err := p.BatchResults(ctx, id, nil); err != nil || len(res) != 0 {
		t.Errorf("results %v, %v", res, err)
	}
}

// TestBatchCancel cancels a batch with one request answered: it is
// cancelling, then cancelled, the answered request's answer kept and the
// rest cancelled; cancelling it again is no error.
func TestBatchCancel(t *testing.T) {
	srv := llmtest.NewWith(t, echo)
	srv.Batches.Pace(1)
	p := testProvider(srv, Options{})
	ctx := context.Background()
	reqs := batchRequests(3)
	id, err := p.SubmitBatch(ctx, llm.BatchSubmission{Key: "cancel", Requests: reqs})
	if err != nil {
		t.Fatal(err)
	}
	p.BatchStatus(ctx, id) // in_progress
	p.BatchStatus(ctx, id) // r0 answered
	srv.Batches.Hold()
	if _, err := p.BatchResults(ctx, id, reqs); err == nil || !strings.Contains(err.Error(), "has not ended") {
		t.Errorf("results of a running batch: %v", err)
	}
	if err := p.CancelBatch(ctx, id); err != nil {
		t.Fatal(err)
	}
	if st, _ := p.BatchStatus(ctx, id); st.Status != "cancelling" || st.Ended {
		t.Errorf("after the cancel: %+v", st)
	}
	srv.Batches.Release()
	st := llmtest.AwaitBatch(t, p, id)
	if st.Status != "cancelled" || st.Succeeded != 1 || st.Failed != 2 {
		t.Errorf("ended as %+v", st)
	}
	res, err := p.BatchResults(ctx, id, reqs)
	if err != nil {
		t.Fatal(err)
	}
	if res["r0"].Response == nil || !strings.Contains(res["r1"].Error, "cancelled") || !strings.Contains(res["r2"].Error, "cancelled") {
		t.Errorf("results %+v", res)
	}
	if err := p.CancelBatch(ctx, id); err != nil {
		t.Errorf("cancelling an ended batch: %v", err)
	}
	if srv.Batches.Cancels() != 2 {
		t.Errorf("%d cancels", srv.Batches.Cancels())
	}
	if err := p.CancelBatch(ctx, "batch_none"); err == nil {
		t.Error("cancelling no batch is no error")
	}
}

// TestBatchRefused: a submission over the limits, with ids not unique or
// not valid, or without a key is refused before anything is sent.
func TestBatchRefused(t *testing.T) {
	srv := llmtest.NewWith(t, echo)
	p := testProvider(srv, Options{})
	many := make([]llm.BatchRequest, 50_001)
	for i := range many {
		many[i] = llm.BatchRequest{ID: fmt.Sprint(i), Request: request()}
	}
	dup := batchRequests(3)
	dup[2].ID = "r0"
	bad := batchRequests(1)
	bad[0].ID = "r 0"
	for _, tc := range []struct {
		name string
		s    llm.BatchSubmission
		want string
	}{
		{"too many", llm.BatchSubmission{Key: "k", Requests: many}, "50001 requests, over the provider's limit of 50000"},
		{"duplicate ids", llm.BatchSubmission{Key: "k", Requests: dup}, `"r0" is not unique`},
		{"invalid id", llm.BatchSubmission{Key: "k", Requests: bad}, `id "r 0"`},
		{"no key", llm.BatchSubmission{Requests: batchRequests(1)}, "batch key"},
		{"long key", llm.BatchSubmission{Key: strings.Repeat("k", 65), Requests: batchRequests(1)}, "batch key"},
		{"no requests", llm.BatchSubmission{Key: "k"}, "no requests"},
		{"nil request", llm.BatchSubmission{Key: "k", Requests: []llm.BatchRequest{{ID: "a"}}}, "no request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := p.SubmitBatch(context.Background(), tc.s)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
	if srv.Batches.Uploads() != 0 || srv.Batches.Created() != 0 {
		t.Errorf("%d uploads, %d batches", srv.Batches.Uploads(), srv.Batches.Created())
	}
	if l := p.BatchLimits(); l.MaxRequests != 50_000 || l.MaxBytes != 200<<20 {
		t.Errorf("limits %+v", l)
	}
}
