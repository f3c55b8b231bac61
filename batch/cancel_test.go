package batch_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/augceo/vibe/api"
	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/internal/llmtest"
	"github.com/augceo/vibe/llm/openai"
	"go.temporal.io/sdk/client"
)

// getJSON reads url's JSON answer into v, and returns its status code.
func getJSON(t *testing.T, ctx context.Context, url string, v any) int {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Errorf("GET %s: %v", url, err)
	}
	return resp.StatusCode
}

// heldAfter is a model at the OpenAI wire that answers its first n
// requests (through model) and holds every later one until the client
// gives it up: a call in flight when a batch is cancelled.
func heldAfter(t *testing.T, model *llmtest.Server, n int32) (base string, held <-chan struct{}) {
	target, err := url.Parse(model.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	var seen atomic.Int32
	holding := make(chan struct{}, 1)
	gone := make(chan struct{}) // the test ended: nothing is held longer
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if seen.Add(1) <= n {
			proxy.ServeHTTP(w, r)
			return
		}
		select {
		case holding <- struct{}{}:
		default:
		}
		select {
		case <-r.Context().Done():
		case <-gone:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(gone) })
	return srv.URL, holding
}

// TestCancelledBatch: a batch's record counts its model calls as they are
// answered, not when a group ends: while its items wait for a person it
// shows the call that filled them; cancelled, it keeps those, the calls of
// a fill that was in flight that were answered and sent, and what its
// items came to; and its results are read at once, each line failed as
// cancelled.
func TestCancelledBatch(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	for _, tt := range []struct {
		name string
		opts batch.Options
		// answered is how many requests the model answers; the next is
		// held until the batch is cancelled. With waits, the items wait
		// for a person by then.
		answered int32
		waits    bool
		// requests and prompt are the record's count of requests and
		// prompt tokens (100 per answered request) once cancelled.
		requests int
		prompt   int64
	}{
		{"items waiting for a person", batch.Options{Size: 4}, 1, true, 1, 100},
		// Auto K: 4 items over 2 calls at once are K = 2, one group of
		// them, whose fill is two calls.
		{"a fill in flight, one of its two calls answered", batch.Options{Total: 4, Concurrency: 2}, 1, false, 2, 100},
	} {
		t.Run(tt.name, func(t *testing.T) {
			model := llmtest.NewServer(t, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{})
			base, held := heldAfter(t, model, tt.answered)
			c := stack(t, base, (&recorder{}).actions())
			ctx := t.Context()
			opts := tt.opts
			opts.Process, opts.ID = reviewProcess(t), "cancelled"
			ended := make(chan error, 1)
			go func() {
				_, err := c.Run(ctx, strings.NewReader(llmtest.Comments(4)), func(batch.Result) error { return nil }, opts)
				ended <- err
			}()
			if tt.waits {
				for {
					ids, err := c.Waiting(ctx, "cancelled")
					if err == nil && len(ids) == 4 {
						break
					}
					time.Sleep(20 * time.Millisecond)
				}
				// The group's report of what its fill spent reaches the
				// record as a signal, a moment after the items wait: the
				// status is read until it has come (a record that never
				// counts it fails here, at the bound).
				wctx, cancel := context.WithTimeout(ctx, time.Minute)
				st, err := c.Status(wctx, "cancelled")
				for err == nil && st.Requests == 0 && wctx.Err() == nil {
					time.Sleep(20 * time.Millisecond)
					st, err = c.Status(wctx, "cancelled")
				}
				cancel()
				if err != nil || st.Waiting != 4 || st.Requests != 1 || st.Usage.PromptTokens != 100 {
					t.Errorf("while its items wait: %+v %v; want the request that filled them and its tokens", st, err)
				}
			} else {
				<-held
			}
			if err := c.Cancel(ctx, "cancelled"); err != nil {
				t.Fatal(err)
			}
			if err := <-ended; !errors.Is(err, batch.ErrCancelled) {
				t.Errorf("Run: %v, want ErrCancelled", err)
			}
			st, err := c.Status(ctx, "cancelled")
			if err != nil || st.Status != "canceled" || st.Requests != tt.requests || st.Usage.PromptTokens != tt.prompt || st.Failed != 4 {
				t.Errorf("cancelled: %+v %v; want %d requests, %d prompt tokens, 4 items failed", st, err, tt.requests, tt.prompt)
			}
			rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			var lines []batch.Result
			err = c.Results(rctx, "cancelled", batch.ResultsOptions{}, func(r batch.Result) error { lines = append(lines, r); return nil })
			if err != nil || len(lines) != 4 {
				t.Fatalf("results: %d lines, %v", len(lines), err)
			}
			for _, r := range lines {
				if r.Status != batch.StatusFailed || !strings.Contains(r.Error, "cancel") {
					t.Errorf("line %d: %+v", r.Line, r)
				}
			}
			// Through a server, as vibe serve answers it: the status and
			// the results, which end with their last line.
			srv := httptest.NewServer(api.Handler(c.Processes, api.Options{Logger: quiet(),
				Batches: &batch.Runner{Client: c, Dir: t.TempDir(), Logger: quiet()}}))
			defer srv.Close()
			var got batch.Status
			if code := getJSON(t, rctx, srv.URL+"/v1/batches/cancelled", &got); code != http.StatusOK || got.Status != "canceled" || got.Requests != tt.requests || got.Usage.PromptTokens != tt.prompt || got.Failed != 4 {
				t.Errorf("GET /v1/batches/cancelled: %d %+v", code, got)
			}
			req, err := http.NewRequestWithContext(rctx, http.MethodGet, srv.URL+"/v1/batches/cancelled/results", nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK || strings.Count(string(body), "\n") != 4 || strings.Count(string(body), `"status":"failed"`) != 4 {
				t.Errorf("GET /v1/batches/cancelled/results: %d %v\n%s", resp.StatusCode, err, body)
			}
		})
	}
}

// TestGroupOfAGoneBatch: a group whose batch's record is gone (cancelled,
// or never made) ends cancelled, each line failed as such, and none of
// its items' actions runs — though its first model call may have gone
// out with its report to the record.
func TestGroupOfAGoneBatch(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	ctx := context.Background()
	model := llmtest.NewServer(t, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{})
	rec := &recorder{}
	c, eng := stackOn(t, openai.New(openai.Options{Model: "m", BaseURL: model.URL, APIKey: "k", MaxRetries: -1}), rec.actions())
	start, _, err := c.Processes.Prepare(ctx, moderate(t))
	if err != nil {
		t.Fatal(err)
	}
	in := batch.GroupInput{Batch: "gone", Name: start.Name, Program: start.Program, ModelQueue: start.ModelQueue,
		Items: []batch.Item{{Line: 1, Prompt: "a comment"}, {Line: 2, Prompt: "another"}}}
	run, err := eng.Client().ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: batch.GroupID("gone", 0), TaskQueue: durable.TaskQueue}, batch.GroupName, in)
	if err != nil {
		t.Fatal(err)
	}
	var res batch.GroupResult
	if err := run.Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
	if !res.Cancelled || len(res.Results) != 2 {
		t.Fatalf("result %+v, want cancelled with 2 lines", res)
	}
	for _, r := range res.Results {
		if r.Status != batch.StatusFailed || !strings.Contains(r.Error, "batch gone was cancelled (or had finished) before this group began") {
			t.Errorf("line %d: %+v", r.Line, r)
		}
	}
	if rec.total != 0 {
		t.Errorf("%d actions ran for a batch that is gone", rec.total)
	}
}
