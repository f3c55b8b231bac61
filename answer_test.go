package vibe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/augceo/vibe/api"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/engine"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/process"
)

// approve is a draft a model would write (given as the first value, so no
// model is needed), then a person's note on it.
const approve = `{"type": "object", "properties": {
  "draft": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
  "approve_User": {"type": "object", "references": ["draft"], "properties": {"note": {"type": "string"}}, "required": ["note"]}}}`

// TestAnswerBound: an answer up to durable.MaxAnswerSize is taken and the
// process completes; one past it — 1.6 MiB killed the waiting process
// before the bound — is refused with a *TooLargeError (HTTP 413) and the
// process goes on waiting, then takes a good answer. A start just under
// the engine's payload limit runs and takes its answer; one over it is
// refused.
func TestAnswerBound(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an embedded engine")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rt, err := Start(ctx, Options{Engine: engine.Options{DataDir: filepath.Join(t.TempDir(), "data"), NoSystemWorkers: true}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	doc, _ := jsonv.Parse([]byte(approve))
	first, _ := jsonv.Parse([]byte(`{"draft": {"text": "Hello"}}`))
	waiting := func() string {
		t.Helper()
		s, err := rt.Processes.Start(ctx, process.StartOptions{Document: doc, First: first})
		if err != nil {
			t.Fatal(err)
		}
		for info, err := range rt.Processes.Watch(ctx, s.ID, process.WatchOptions{}) {
			if err != nil {
				t.Fatal(err)
			}
			if info.Status == process.Waiting {
				return s.ID
			}
		}
		t.Fatal("the process did not wait")
		return ""
	}
	note := func(n int) jsonv.Value {
		v, _ := jsonv.Parse(fmt.Appendf(nil, `{"approve_User": {"note": %q}}`, strings.Repeat("x", n)))
		return v
	}
	srv := httptest.NewServer(api.Handler(rt.Processes, api.Options{Logger: slog.New(slog.DiscardHandler)}))
	defer srv.Close()

	// Just over the bound, and the 1.6 MiB that killed a process: refused,
	// through Go and through HTTP, and the process still waits.
	id := waiting()
	for _, n := range []int{durable.MaxAnswerSize, 1600 << 10} {
		_, err := rt.Processes.Answer(ctx, id, note(n))
		var tl *durable.TooLargeError
		if !errors.As(err, &tl) || tl.Limit != durable.MaxAnswerSize || !strings.Contains(err.Error(), "past the limit of 512 KiB on an answer") {
			t.Errorf("an answer of %d bytes: %v", n, err)
		}
		resp, err := http.Post(srv.URL+"/v1/processes/"+id+"/answer", "application/json", strings.NewReader(string(jsonv.Marshal(note(n)))))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("POST an answer of %d bytes: %s, want 413", n, resp.Status)
		}
		if info, err := rt.Processes.Get(ctx, id); err != nil || info.Status != process.Waiting {
			t.Fatalf("after an answer of %d bytes: %v %v", n, info, err)
		}
	}
	// A start just under the engine's payload limit runs (its prompt in
	// the workflow's input, its view and the model's context), and one
	// just over it is refused before anything starts.
	if _, err := rt.Processes.Start(ctx, process.StartOptions{Document: doc, First: first, Prompt: strings.Repeat("p", durable.MaxPayloadSize)}); !errors.As(err, new(*durable.TooLargeError)) {
		t.Errorf("a start past the payload limit: %v", err)
	}
	resp, err := http.Post(srv.URL+"/v1/processes", "application/json", strings.NewReader(fmt.Sprintf(`{"process": %s, "first": {"draft": {"text": "Hello"}}, "prompt": %q}`,
		approve, strings.Repeat("p", durable.MaxPayloadSize-64<<10))))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Errorf("a start just under the payload limit: %s", resp.Status)
	}
	big, err := rt.Processes.Start(ctx, process.StartOptions{Document: doc, First: first, Prompt: strings.Repeat("p", durable.MaxPayloadSize-64<<10)})
	if err != nil {
		t.Fatal(err)
	}
	for info, err := range rt.Processes.Watch(ctx, big.ID, process.WatchOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		if info.Status == process.Waiting {
			break
		}
		if info.Status != process.Running {
			t.Fatalf("a start just under the payload limit: %s", info.Status)
		}
	}
	if _, err := rt.Processes.Answer(ctx, big.ID, note(16)); err != nil {
		t.Fatalf("the answer to a large start: %v", err)
	}

	// Just under it: taken, and the process completes.
	under := durable.MaxAnswerSize - 1024
	if _, err := rt.Processes.Answer(ctx, id, note(under)); err != nil {
		t.Fatalf("an answer of %d bytes: %v", under, err)
	}
	for info, err := range rt.Processes.Watch(ctx, id, process.WatchOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		if info.Status == process.Completed {
			if got := len(info.State.Lookup("approve_User").Lookup("note").Str()); got != under {
				t.Errorf("the note kept %d bytes", got)
			}
			break
		}
		if info.Status == process.Failed {
			t.Fatalf("the process failed: %v", *info.Error)
		}
	}
}
