package compile

import (
	"context"
	"encoding/json"
	"testing"
)

// TestAwaitedDirect: the seed's likes, a direct server call (ComposeLike |
// SendLike), as a process's program: the model's chunk as it was, but the
// action's step kept as a blocking step's inputs, then a SERVER chunk that
// runs SendLike on them, awaited; the direct call itself is unchanged.
func TestAwaitedDirect(t *testing.T) {
	p, err := CompilePipeline(context.Background(), `"Like post 42" | ComposeLike | SendLike`, Options{Registry: testRegistry(t), Actions: []string{"SendLike"}})
	if err != nil {
		t.Fatal(err)
	}
	direct := p.Program()
	before, _ := json.Marshal(direct)
	got := direct.AwaitedDirect()
	if after, _ := json.Marshal(direct); string(after) != string(before) {
		t.Error("the direct call's program changed")
	}
	if got.Direct != nil || len(got.Chunks) != 2 || got.Chunks[0].Kind != LLM || got.Chunks[1].Kind != Server || got.Chunks[1].Name != "SERVER_step2_send_like" {
		t.Fatalf("program %+v", got)
	}
	if string(mustMarshal(t, got.Chunks[0].Schema)) != string(mustMarshal(t, direct.Chunks[0].Schema)) {
		t.Error("the model is sent another schema")
	}
	fill, act := got.Chunks[0].Steps[1], got.Chunks[1].Steps[0]
	if fill.State.String() != "step2_send_like.input" || fill.FireAndForget || fill.Action != "" || fill.Fills != "step2_send_like" {
		t.Errorf("the model's step %+v", fill)
	}
	if act.State.String() != "step2_send_like" || act.Action != "SendLike" || !act.Blocking || !act.Inputs || len(act.References) != 0 {
		t.Errorf("the action's step %+v", act)
	}
	if again := got.AwaitedDirect(); again != got {
		t.Error("a program that is no direct call is not returned as it is")
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
