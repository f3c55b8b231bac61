package batch_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/internal/llmtest"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/llm/openai"
)

// TestFill asks one chunk of ten items within a limit of four items per
// call: three calls (4, 3, 3 items), each item's value its own; item 2's
// broken part is repaired alone, in one more request that carries only
// it; every item's usage is its share of its call, the repaired one's
// plus its repair.
func TestFill(t *testing.T) {
	model := llmtest.NewServer(t, llmtest.Multiplexed(func(step, prompt string, repair bool) string {
		if prompt == "comment 2" && step == "assess" && !repair {
			return `{"sentiment":"furious"}`
		}
		return llmtest.Verdict(step, prompt, repair)
	}), llmtest.Options{Tokens: true})
	chunk, err := jsonv.Parse([]byte(`{"type":"object","properties":{
		"assess":{"type":"object","properties":{"sentiment":{"type":"string","enum":["positive","negative"]}},"required":["sentiment"]},
		"decide":{"type":"object","properties":{"decision":{"type":"string","enum":["publish","hide"]}},"required":["decision"]}},
		"required":["assess","decide"]}`))
	if err != nil {
		t.Fatal(err)
	}
	in := batch.FillInput{Chunk: "LLM_llmContext1", Schema: chunk, Call: batch.CallOptions{Limits: compile.Limits{MaxItems: 4}}}
	for i := 1; i <= 10; i++ {
		in.Items = append(in.Items, batch.FillItem{ID: fmt.Sprint(i), Prompt: fmt.Sprintf("comment %d", i)})
	}
	out, err := batch.Fill(context.Background(), openai.New(openai.Options{Model: "m", BaseURL: model.URL, APIKey: "k"}), in, llm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The three calls run at once: in any order, the repair after its call.
	if got := callSizes(model.Bodies()); !slices.Equal(slices.Sorted(slices.Values(got)), []int{1, 3, 3, 4}) || got[len(got)-1] == 1 && got[0] == 1 {
		t.Errorf("calls of %v items, want 4, 3 and 3, and item 2's repair of 1", got)
	}
	if out.Requests != 4 {
		t.Errorf("%d requests counted, want 4", out.Requests)
	}
	var sum llm.Usage
	for i, it := range out.Items {
		prompt := fmt.Sprintf("comment %d", i+1)
		want := fmt.Sprintf(`{"assess":%s,"decide":%s}`, llmtest.Verdict("assess", prompt, false), llmtest.Verdict("decide", prompt, false))
		if it.Error != "" || string(jsonv.Marshal(it.Output.Value)) != want {
			t.Errorf("item %d: %s %q, want %s", i+1, jsonv.Marshal(it.Output.Value), it.Error, want)
		}
		if wantTurns := map[bool]int{true: 2, false: 1}[i == 1]; len(it.Output.Turns) != wantTurns {
			t.Errorf("item %d: %d turns, want %d", i+1, len(it.Output.Turns), wantTurns)
		}
		sum = sum.Add(it.Output.Usage)
	}
	if sum != out.Usage {
		t.Errorf("the items' usage adds up to %+v, the calls' to %+v", sum, out.Usage)
	}
}
