package batch_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/internal/llmtest"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/registry"
)

// likes is the seed's direct server call: the model composes a like
// (ComposeLike, with a thinking field) and fills SendLike, an action that
// sends it — here counting each idempotency key it is called with.
type likes struct {
	mu   sync.Mutex
	sent map[string]int // by idempotency key
}

func (l *likes) registry(t *testing.T) (*registry.Registry, *action.Registry) {
	reg := &registry.Registry{}
	reg.Add("aug:instructions/ComposeLike", mustParse(t, `{"type":"object","properties":{"_why":{"type":"string"},"postId":{"type":"string"}},"required":["_why","postId"]}`))
	reg.Add("aug:instructions/SendLike", mustParse(t, `{"type":"object","properties":{"postId":{"type":"string"}},"required":["postId"]}`))
	acts := &action.Registry{}
	acts.Register(action.Action{Name: "SendLike", Run: func(ctx context.Context, in jsonv.Value) (jsonv.Value, error) {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.sent == nil {
			l.sent = map[string]int{}
		}
		l.sent[action.IdempotencyKey(ctx)]++
		return jsonv.ObjectValue(jsonv.Member{Name: "liked", Value: in.Lookup("postId")}), nil
	}})
	return reg, acts
}

// like is the test model's part for a like: post N for "Like post N".
func like(step, prompt string, _ bool) string {
	post := strings.TrimPrefix(prompt, "Like ")
	post = "p" + strings.TrimPrefix(post, "post ")
	if step == "step1_compose_like" {
		return fmt.Sprintf(`{"_why":"a good read","postId":%q}`, post)
	}
	return fmt.Sprintf(`{"postId":%q}`, post)
}

// TestDirectCallStream: a stream of likes — seed 000's direct server call,
// "prompt | ComposeLike | SendLike" — runs as a batch: 100 likes at K=32
// are filled by ⌈100/32⌉ = 4 multiplexed model calls, and SendLike is
// called once per like, awaited, under the item's own idempotency key;
// each result line holds what the model filled and what the action gave.
// Run again, the batch calls neither again.
func TestDirectCallStream(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	const n, k = 100, 32
	model := llmtest.NewServer(t, llmtest.Multiplexed(like), llmtest.Options{})
	l := &likes{}
	reg, acts := l.registry(t)
	c := stack(t, model.URL, acts)
	c.Processes.Registry = reg
	opts := batch.Options{Process: process.StartOptions{Pipeline: `prompt | ComposeLike | SendLike`}, ID: "likes", Size: k}
	if err := c.Check(context.Background(), opts); err != nil {
		t.Fatalf("a direct call is refused: %v", err)
	}
	var in strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&in, "%q\n", fmt.Sprintf("Like post %d", i))
	}
	for run := 1; run <= 2; run++ {
		var results []batch.Result
		sum, err := c.Run(context.Background(), strings.NewReader(in.String()), func(r batch.Result) error { results = append(results, r); return nil }, opts)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := model.Requests(), (n+k-1)/k; got != want {
			t.Errorf("run %d: %d model requests, want %d", run, got, want)
		}
		if sum.Done != n || len(results) != n {
			t.Fatalf("run %d: summary %+v, %d results", run, sum, len(results))
		}
		for i, r := range results {
			line := i + 1
			want := fmt.Sprintf(`{"step1_compose_like":{"postId":"p%d"},"step2_send_like":{"input":{"postId":"p%d"},"output":{"liked":"p%d"}}}`, line, line, line)
			if r.Status != batch.StatusCompleted || string(r.Output) != want {
				t.Fatalf("run %d, line %d: %+v, want output %s", run, line, r, want)
			}
		}
		l.mu.Lock()
		for line := 1; line <= n; line++ {
			if key := action.Key(batch.ItemID("likes", line), "step2_send_like"); l.sent[key] != 1 {
				t.Errorf("run %d: like %d sent %d times under its key", run, line, l.sent[key])
			}
		}
		if len(l.sent) != n {
			t.Errorf("run %d: SendLike called with %d keys, want %d", run, len(l.sent), n)
		}
		l.mu.Unlock()
	}
	st, err := c.Status(context.Background(), "likes")
	if err != nil || st.Requests != (n+k-1)/k || st.Done != n {
		t.Errorf("status %+v %v", st, err)
	}
	// An item reads as a process: the model's chunk, then the action's.
	info, err := c.Processes.Get(context.Background(), batch.ItemID("likes", 7))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(info.Done, ",") != "LLM_step1_compose_like,SERVER_step2_send_like" || info.Thinking.Lookup("step1_compose_like").Lookup("_why").Str() != "a good read" {
		t.Errorf("item 7: done %v, thinking %s", info.Done, jsonv.Marshal(info.Thinking))
	}
}
