package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/augceo/vibe/llm"
)

// fakeModel answers each request with a numbered answer that names the step,
// so that tests can tell answers apart.
type fakeModel struct {
	mu    sync.Mutex
	calls int
	err   error
}

func (f *fakeModel) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	f.calls++
	return &llm.Response{
		Content: fmt.Sprintf(`{"step":%q,"n":%d}`, req.Name, f.calls),
		Model:   "fake-1",
		Usage:   llm.Usage{PromptTokens: int64(10 * f.calls), CompletionTokens: int64(f.calls)},
		Latency: time.Duration(f.calls) * time.Millisecond,
	}, nil
}

func request(name, user string) *llm.Request {
	return &llm.Request{
		Name:     name,
		System:   "You fill in JSON.",
		Messages: []llm.Message{{Role: llm.RoleUser, Content: user}},
		Schema:   json.RawMessage(`{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"integer"}}}`),
	}
}

func TestRecordThenReplay(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	rec, err := Record(&fakeModel{}, path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	reqs := []*llm.Request{
		request("step1", "a"),
		request("step2", "b"),
		request("step1", "a"), // the same request again: a second answer
		request("step1", "c"),
	}
	var recorded []*llm.Response
	for _, req := range reqs {
		resp, err := rec.Complete(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		recorded = append(recorded, resp)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	// Every prompt and answer is in it: the owner's alone.
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the recording's mode: %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	if _, err := rec.Complete(ctx, reqs[0]); err == nil {
		t.Error("a closed recorder answered")
	}

	rp, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, req := range reqs {
		got, err := rp.Complete(ctx, req)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		want := *recorded[i]
		want.Replayed = true
		if !reflect.DeepEqual(*got, want) {
			t.Errorf("request %d: replayed %+v, recorded %+v", i, *got, want)
		}
	}
	// Asked more often than recorded, a request keeps its last answer.
	got, err := rp.Complete(ctx, reqs[0])
	if err != nil {
		t.Fatal(err)
	}
	if got.Content != recorded[2].Content {
		t.Errorf("after the recorded answers: %q, want the last one %q", got.Content, recorded[2].Content)
	}
}

func TestRecordAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	for _, user := range []string{"first", "second"} {
		rec, err := Record(&fakeModel{}, path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rec.Complete(context.Background(), request("step", user)); err != nil {
			t.Fatal(err)
		}
		rec.Close()
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(lines), b)
	}
	var e Entry
	if err := json.Unmarshal([]byte(lines[1]), &e); err != nil {
		t.Fatal(err)
	}
	if e.Step != "step" || e.Hash != Hash(request("step", "second")) || e.Response.Model != "fake-1" || e.RecordedAt.IsZero() {
		t.Errorf("entry %+v", e)
	}
}

func TestRecordConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	rec, err := Record(&fakeModel{}, path)
	if err != nil {
		t.Fatal(err)
	}
	const n = 50
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if _, err := rec.Complete(context.Background(), request(fmt.Sprintf("step%d", i), "x")); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	rec.Close()
	rp, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		resp, err := rp.Complete(context.Background(), request(fmt.Sprintf("step%d", i), "x"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(resp.Content, fmt.Sprintf(`"step%d"`, i)) {
			t.Errorf("step%d answered %s", i, resp.Content)
		}
	}
}

func TestRecordDoesNotKeepErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	boom := errors.New("boom")
	rec, err := Record(&fakeModel{err: boom}, path)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	if _, err := rec.Complete(context.Background(), request("step", "x")); !errors.Is(err, boom) {
		t.Fatalf("error %v, want the provider's", err)
	}
	if b, _ := os.ReadFile(path); len(b) != 0 {
		t.Errorf("recorded %q", b)
	}
}

func TestMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	rec, err := Record(&fakeModel{}, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rec.Complete(context.Background(), request("step1", "a")); err != nil {
		t.Fatal(err)
	}
	rec.Close()
	rp, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		req  *llm.Request
	}{
		{"unknown step", request("step9", "a")},
		{"changed prompt", request("step1", "b")},
		{"reordered schema", func() *llm.Request {
			r := request("step1", "a")
			r.Schema = json.RawMessage(`{"type":"object","properties":{"alpha":{"type":"integer"},"zeta":{"type":"string"}}}`)
			return r
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := rp.Complete(context.Background(), tt.req)
			var me *MissingError
			if !errors.As(err, &me) {
				t.Fatalf("error %v, want a *MissingError", err)
			}
			if me.Step != tt.req.Name || me.Hash != Hash(tt.req) || me.Path != path {
				t.Errorf("error fields %+v", me)
			}
			for _, want := range []string{path, `step "` + tt.req.Name + `"`, "record it again against a live model"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}

func TestOpenMalformed(t *testing.T) {
	good := `{"step":"s","hash":"ab","response":{"content":"{}","model":"m","usage":{"promptTokens":1,"completionTokens":2},"latency":5},"recordedAt":"2026-11-22T16:00:00Z"}`
	tests := []struct {
		name string
		text string
		line int
	}{
		{"not JSON", good + "\n" + "{oops\n", 2},
		{"wrong type", good + "\n\n" + good + "\n" + `{"step":1,"hash":"ab"}` + "\n", 4},
		{"no hash", `{"step":"s","response":{}}`, 1},
		{"two values", good + " {}\n", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.jsonl")
			if err := os.WriteFile(path, []byte(tt.text), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Open(path)
			want := fmt.Sprintf("%s:%d:", path, tt.line)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("error %v, want one naming %s", err, want)
			}
		})
	}
	if _, err := Open(filepath.Join(t.TempDir(), "absent.jsonl")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("absent file: %v", err)
	}
}

func TestHash(t *testing.T) {
	base := request("step1", "a")
	same := request("step1", "a")
	same.Schema = json.RawMessage("{\n  \"type\": \"object\",\n  \"properties\": {\"zeta\": {\"type\": \"string\"}, \"alpha\": {\"type\": \"integer\"}}\n}")
	if Hash(base) != Hash(same) {
		t.Error("whitespace in the schema changed the hash")
	}
	// Moving text between fields must change the hash.
	a := &llm.Request{Name: "ab", System: "c"}
	b := &llm.Request{Name: "a", System: "bc"}
	if Hash(a) == Hash(b) {
		t.Error("fields are not delimited")
	}
	c := &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}}
	d := &llm.Request{Messages: []llm.Message{{Role: llm.RoleAssistant, Content: "x"}}}
	if Hash(c) == Hash(d) {
		t.Error("the role is not hashed")
	}
	if h := Hash(base); len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
		t.Errorf("hash %q is not hex SHA-256", h)
	}
}

func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p := &Provider{answers: map[key][]llm.Response{}, asked: map[key]int{}}
	if _, err := p.Complete(ctx, request("s", "a")); !errors.Is(err, context.Canceled) {
		t.Errorf("error %v", err)
	}
}
