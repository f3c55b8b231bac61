package api

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/worker"

	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/engine"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/process"
)

// Inline processes for the engine test: greet is one LLM chunk, so a
// start with a fitting first value completes without a model; doomed then
// runs an action that fails for good; approve starts with a person's
// chunk.
const (
	greetDoc   = `{"title":"Greet","type":"object","properties":{"greet":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}}`
	doomedDoc  = `{"title":"Doomed","properties":{"greet":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]},"send_Activity":{"type":"object"}}}`
	approveDoc = `{"title":"Approve","properties":{"approve_User":{"type":"object","properties":{"ok":{"type":"boolean"}}}}}`
)

func enc(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// TestOnTheEngine runs the API over the real process.Client on the
// embedded engine: a first value that breaks the first chunk is refused
// with its paths and nothing starts; a start too large for the engine is
// refused before it; finished processes refuse answers with 409; the list
// pages with cursors.
func TestOnTheEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	ctx := context.Background()
	eng, err := engine.Start(ctx, engine.Options{SearchAttributes: durable.SearchAttributes, DataDir: t.TempDir(), Logger: slogDiscard()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	w := worker.New(eng.Client(), durable.TaskQueue, worker.Options{})
	acts := &action.Registry{}
	acts.Register(action.Action{Name: "send_Activity", Run: func(context.Context, jsonv.Value) (jsonv.Value, error) {
		return jsonv.Value{}, action.NonRetryable(errors.New("the mail server refuses it"))
	}})
	shared := &durable.Activities{Actions: acts, Logger: slogDiscard()}
	durable.Register(w, shared)
	process.RegisterWorkflows(w, shared.Actions)
	for _, aw := range append(durable.ActionWorkers(eng.Client(), shared, worker.Options{}), w) {
		if err := aw.Start(); err != nil {
			t.Fatal(err)
		}
		defer aw.Stop()
	}
	pc := &process.Client{Temporal: eng.Client()}
	srv := httptest.NewServer(Handler(pc, quiet()))
	defer srv.Close()

	post := func(t *testing.T, path, body string) (int, map[string]any) {
		t.Helper()
		resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var buf bytes.Buffer
		buf.ReadFrom(resp.Body)
		var out map[string]any
		if err := json.Unmarshal(buf.Bytes(), &out); err != nil {
			t.Fatalf("%d: not JSON: %s", resp.StatusCode, buf.String())
		}
		return resp.StatusCode, out
	}
	// workflows lists every workflow of the namespace, as the engine sees
	// it: whatever Vibe may have started, processes or not.
	workflows := func(t *testing.T) []string {
		t.Helper()
		resp, err := eng.Client().ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{PageSize: 1000})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, ex := range resp.GetExecutions() {
			ids = append(ids, ex.GetExecution().GetWorkflowId())
		}
		return ids
	}
	start := func(t *testing.T, doc string) string {
		t.Helper()
		code, out := post(t, "/v1/processes", `{"process":`+doc+`,"first":{"greet":{"text":"hello"}}}`)
		if code != 201 {
			t.Fatalf("start: %d %v", code, out)
		}
		id := out["id"].(string)
		eng.Client().GetWorkflow(ctx, id, "").Get(ctx, nil) // until it ends
		return id
	}

	t.Run("refused before anything starts", func(t *testing.T) {
		tests := []struct {
			name, body string
			code       int
			msg        string
			paths      []string
		}{
			{"a first value that breaks the chunk", `{"process":` + greetDoc + `,"first":{"greet":{"text":5}}}`, 422,
				"the first value does not fit chunk LLM_greet: /greet/text: got number, want string", []string{"/first/greet/text"}},
			{"a first value without the step", `{"process":` + greetDoc + `,"first":{"hello":1}}`, 422,
				"missing property 'greet'", []string{"/first"}},
			{"a first value for a person's chunk", `{"process":` + approveDoc + `,"first":{"approve_User":{"ok":true}}}`, 422,
				"the process's first chunk USER_approve_User is not filled by a model, so it takes no first value", []string{}},
			{"a start that the engine's limit refuses once encoded", `{"process":` + greetDoc + `,"prompt":"` + strings.Repeat("<", 1<<20) + `"}`, 413,
				"the start of greet is 6.0 MiB, past the engine's limit of 2 MiB on one payload", []string{}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				code, out := post(t, "/v1/processes", tt.body)
				var paths []string
				for _, d := range out["details"].([]any) {
					paths = append(paths, d.(map[string]any)["path"].(string))
				}
				if code != tt.code || !strings.Contains(out["error"].(string), tt.msg) || fmt.Sprint(paths) != fmt.Sprint(tt.paths) {
					t.Errorf("%d %v", code, out)
				}
			})
		}
		if ids := workflows(t); len(ids) != 0 {
			t.Fatalf("started %v", ids)
		}
		// The engine lists what it started a moment later: start one
		// process, and once the engine lists it, it must be the only one.
		id := start(t, greetDoc)
		var ids []string
		deadline := time.Now().Add(30 * time.Second)
		for ids = workflows(t); len(ids) == 0 && time.Now().Before(deadline); ids = workflows(t) {
			time.Sleep(50 * time.Millisecond)
		}
		if len(ids) != 1 || ids[0] != id {
			t.Fatalf("the engine lists %v, want only %s", ids, id)
		}
	})

	t.Run("an input no step reads is named", func(t *testing.T) {
		for _, tt := range []struct{ input, want string }{
			{`{"k": 1, "j": 2}`, `[k j]`},
			{`null`, `<nil>`},
		} {
			code, out := post(t, "/v1/processes", `{"process":`+greetDoc+`,"first":{"greet":{"text":"hello"}},"input":`+tt.input+`}`)
			if code != 201 || fmt.Sprint(out["unread"]) != tt.want {
				t.Errorf("input %s: %d %v, want unread %s", tt.input, code, out, tt.want)
			}
			eng.Client().GetWorkflow(ctx, out["id"].(string), "").Get(ctx, nil)
		}
	})

	t.Run("answers to finished processes", func(t *testing.T) {
		for _, tc := range []struct {
			doc    string
			status process.Status
		}{{greetDoc, process.Completed}, {doomedDoc, process.Failed}} {
			id := start(t, tc.doc)
			code, out := post(t, "/v1/processes/"+id+"/answer", `{"ok":true}`)
			want := fmt.Sprintf("process %s is %s and waits for no answer", id, tc.status)
			if code != 409 || out["error"] != want {
				t.Errorf("%d %v, want 409 %q", code, out, want)
			}
			var nw *process.NotWaitingError
			if _, err := pc.Answer(ctx, id, mustJSON(t, `{}`)); !errors.As(err, &nw) || nw.Status != tc.status {
				t.Errorf("process.Client: %v", err)
			}
		}
		code, out := post(t, "/v1/processes/nope-00000000/answer", `{}`)
		if code != 404 {
			t.Errorf("an unknown process: %d %v", code, out)
		}
	})

	t.Run("paging", func(t *testing.T) {
		for len(workflows(t)) < 5 {
			start(t, greetDoc)
		}
		var all []string
		deadline := time.Now().Add(30 * time.Second)
		for len(all) < 5 && time.Now().Before(deadline) {
			page, err := pc.List(ctx, process.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			all = all[:0]
			for _, s := range page.Processes {
				all = append(all, s.ID)
			}
		}
		if len(all) != 5 {
			t.Fatalf("listed %v", all)
		}
		c := &Client{BaseURL: srv.URL}
		var paged []string
		var starts []time.Time
		cursor := ""
		for pages := 1; ; pages++ {
			page, err := c.List(ctx, process.ListOptions{Limit: 2, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Processes) > 2 || pages > 4 {
				t.Fatalf("page %d: %d processes", pages, len(page.Processes))
			}
			for _, s := range page.Processes {
				paged = append(paged, s.ID)
				starts = append(starts, s.StartedAt)
			}
			if cursor = page.Next; cursor == "" {
				break
			}
		}
		if fmt.Sprint(paged) != fmt.Sprint(all) {
			t.Errorf("paged %v, listed at once %v", paged, all)
		}
		if !slices.IsSortedFunc(starts, func(a, b time.Time) int { return b.Compare(a) }) {
			t.Errorf("not newest first: %v", starts)
		}
		// Cursors never given are refused at once, before the engine
		// (which would answer them with an internal error, retried).
		for _, cursor := range []string{"not base64!", "bm90IGEgdG9rZW4", enc(`[1]`), enc(`{"StartTime":5}`), enc(`{"RunID":true}`)} {
			start := time.Now()
			_, err := c.List(ctx, process.ListOptions{Limit: 2, Cursor: cursor})
			if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "not a cursor of this list") {
				t.Errorf("cursor %q: %v after %s", cursor, err, time.Since(start))
			}
		}
	})

	t.Run("retry, end times, days, who answered", func(t *testing.T) {
		before := time.Now().Add(-time.Second)
		id := start(t, greetDoc)
		again, err := pc.Retry(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if again.ID == id || again.Name != "greet" {
			t.Errorf("retried as %+v", again)
		}
		eng.Client().GetWorkflow(ctx, again.ID, "").Get(ctx, nil)
		old, err := pc.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		info, err := pc.Get(ctx, again.ID)
		if err != nil {
			t.Fatal(err)
		}
		// The same input: the same first value, so the same state.
		if info.Status != old.Status || string(jsonv.Marshal(info.State)) != string(jsonv.Marshal(old.State)) {
			t.Errorf("the retry %s %s, the original %s %s", info.Status, jsonv.Marshal(info.State), old.Status, jsonv.Marshal(old.State))
		}
		if info.EndedAt == nil || info.EndedAt.Before(info.StartedAt) || len(info.Timings) == 0 || info.Timings[0].End == nil {
			t.Errorf("ended at %v (started %v), timings %+v", info.EndedAt, info.StartedAt, info.Timings)
		}
		if _, err := pc.Retry(ctx, "greet-ffffffff"); !errors.Is(err, process.ErrNotFound) {
			t.Errorf("retry of no process: %v", err)
		}
		// The list's days: since a moment before, both; from tomorrow,
		// none; before then, none of these. The visibility store follows
		// the workflows by a moment.
		var since []string
		waitFor(t, func() bool {
			page, err := pc.List(ctx, process.ListOptions{Since: before})
			since = nil
			for _, s := range page.Processes {
				if s.EndedAt != nil && !s.EndedAt.Before(s.StartedAt) {
					since = append(since, s.ID)
				}
			}
			return err == nil && slices.Contains(since, id) && slices.Contains(since, again.ID)
		})
		if page, err := pc.List(ctx, process.ListOptions{Since: time.Now().Add(24 * time.Hour)}); err != nil || len(page.Processes) != 0 {
			t.Errorf("since tomorrow: %v %v", page.Processes, err)
		}
		if page, err := pc.List(ctx, process.ListOptions{Before: before}); err != nil || slices.ContainsFunc(page.Processes, func(s process.Summary) bool { return s.ID == id }) {
			t.Errorf("before the start: %v %v", page.Processes, err)
		}
		// An answer over the API is recorded with who sent it and when.
		code, out := post(t, "/v1/processes", `{"process":`+approveDoc+`}`)
		if code != 201 {
			t.Fatalf("start: %d %v", code, out)
		}
		waiting := out["id"].(string)
		waitFor(t, func() bool { info, err := pc.Get(ctx, waiting); return err == nil && info.Status == process.Waiting })
		if code, out := post(t, "/v1/processes/"+waiting+"/answer", `{"approve_User":{"ok":true}}`); code != 200 {
			t.Fatalf("answer: %d %v", code, out)
		}
		eng.Client().GetWorkflow(ctx, waiting, "").Get(ctx, nil)
		info, err = pc.Get(ctx, waiting)
		if err != nil || len(info.Answers) != 1 || info.Answers[0].By != "an API client on loopback (no token)" || info.Answers[0].Chunk != "USER_approve_User" ||
			info.Answers[0].At.Before(info.StartedAt) {
			t.Errorf("answers %+v %v", info.Answers, err)
		}
	})
}

// waitFor waits up to 30 s until ok.
func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !ok(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}
