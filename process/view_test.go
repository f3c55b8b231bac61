package process

import (
	"testing"

	"go.temporal.io/sdk/converter"

	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/compose"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/jsonv"
)

// TestKeepChunk: a chunk's answer is kept from its split — the one the
// activity's llm.Fill made and the output carries, or, for an output that
// carries only the value (a batch's item, an output recorded before the
// split was carried), the one Parts makes — and both keep the same view.
func TestKeepChunk(t *testing.T) {
	ch := &compile.ProgramChunk{Name: "LLM_llmContext1", Kind: compile.LLM, Steps: []compile.ProgramStep{
		{Name: "draft", State: compile.Path{"llmContext1", "draft"}},
		{Name: "rate", State: compile.Path{"llmContext1", "rate"}},
	}}
	const value = `{"_considerations":"short","draft":{"to":"bob","_why":"asked","parts":[{"_n":1,"text":"hi"}],"$words":2},"$confidence":0.9,"rate":3,"_loopDone":true,"extra":true}`
	const (
		wantState    = `{"llmContext1":{"draft":{"to":"bob","parts":[{"text":"hi"}]},"rate":3}}`
		wantThinking = `{"LLM_llmContext1":{"_considerations":"short","_loopDone":true,"extra":true},"llmContext1.draft":{"_why":"asked","parts/0/_n":1}}`
		wantMetrics  = `{"LLM_llmContext1":{"$confidence":0.9},"llmContext1.draft":{"$words":2}}`
	)
	v := mustParse(t, value)
	parts := compose.Split(v)
	for _, tt := range []struct {
		name string
		out  any // what the activity (or a group) returned, as it is encoded
	}{
		{"the split carried", durable.FillOutput{Value: v, Split: true, Thinking: parts.Thinking, Metrics: parts.Metrics, Model: "m", Requests: 1}},
		{"only the value", durable.FillOutput{Value: v, Model: "m", Requests: 1}},
		{"recorded before the split was carried", mustParse(t, `{"value":`+value+`,"usage":{},"model":"m","requests":1}`)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// Through the data converter, as an activity's result is
			// recorded in a history and read back when it replays.
			dc := converter.GetDefaultDataConverter()
			p, err := dc.ToPayload(tt.out)
			if err != nil {
				t.Fatal(err)
			}
			var out durable.FillOutput
			if err := dc.FromPayload(p, &out); err != nil {
				t.Fatal(err)
			}
			view := newView(durable.Start{})
			outs, err := view.keepChunk(ch, out.Parts())
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				what      string
				got, want string
			}{
				{"state", string(jsonv.Marshal(view.State)), wantState},
				{"thinking", string(jsonv.Marshal(view.Thinking)), wantThinking},
				{"metrics", string(jsonv.Marshal(view.Metrics)), wantMetrics},
				{"draft's output", string(jsonv.Marshal(outs[0])), `{"to":"bob","parts":[{"text":"hi"}]}`},
				{"rate's output", string(jsonv.Marshal(outs[1])), `3`},
			} {
				if c.got != c.want {
					t.Errorf("%s %s\nwant %s", c.what, c.got, c.want)
				}
			}
		})
	}
}

// TestFillOutputParts: Parts takes out the fields the activity's split
// found, without deciding again what is thinking, and splits the value
// only when the output carries no split.
func TestFillOutputParts(t *testing.T) {
	v := mustParse(t, `{"a":1,"_t":2,"b":{"$m":3,"c":[{"_u":4,"d":5}]}}`)
	parts := compose.Split(v)
	for _, tt := range []struct {
		name string
		out  durable.FillOutput
		want string
	}{
		{"carried", durable.FillOutput{Value: v, Split: true, Thinking: parts.Thinking, Metrics: parts.Metrics}, `{"a":1,"b":{"c":[{"d":5}]}}`},
		// A split that found nothing takes nothing out: "_t" stays.
		{"carried, none found", durable.FillOutput{Value: v, Split: true}, `{"a":1,"_t":2,"b":{"$m":3,"c":[{"_u":4,"d":5}]}}`},
		{"split now", durable.FillOutput{Value: v}, `{"a":1,"b":{"c":[{"d":5}]}}`},
		{"nothing", durable.FillOutput{}, `null`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(jsonv.Marshal(tt.out.Parts().Output)); got != tt.want {
				t.Errorf("output %s, want %s", got, tt.want)
			}
		})
	}
	if string(jsonv.Marshal(v)) != `{"a":1,"_t":2,"b":{"$m":3,"c":[{"_u":4,"d":5}]}}` {
		t.Errorf("Parts changed the value: %s", jsonv.Marshal(v))
	}
}
