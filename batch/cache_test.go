package batch_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/internal/llmtest"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/llm/anthropic"
	"github.com/augceo/vibe/llm/openai"
)

// cacheChunk is a chunk of four steps whose schema alone is past the
// providers' smallest cached prefix (1,024 tokens): each step's six
// fields described in words of their own.
func cacheChunk(t *testing.T) jsonv.Value {
	var b strings.Builder
	b.WriteString(`{"type": "object", "properties": {`)
	for s := 1; s <= 4; s++ {
		if s > 1 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"step%d": {"type": "object", "properties": {`, s)
		for f := 1; f <= 6; f++ {
			if f > 1 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"field%d": {"type": "string", "description": "Field %d of step %d: what the reviewer found in this part of the application, with the evidence and how sure of it they are, in two sentences."}`, f, f, s)
		}
		b.WriteString(`}, "required": ["field1"]}`)
	}
	b.WriteString(`}, "required": ["step1", "step2", "step3", "step4"]}`)
	s, err := jsonv.Parse([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// stepAnswer is one step's answer: every field filled.
func stepAnswer(step, _ string, _ bool) string {
	return `{"field1":"a","field2":"b","field3":"c","field4":"d","field5":"e","field6":"f"}`
}

// chunkAnswer is a process's answer to cacheChunk: every step's.
var chunkAnswer = `{"step1":` + stepAnswer("", "", false) + `,"step2":` + stepAnswer("", "", false) +
	`,"step3":` + stepAnswer("", "", false) + `,"step4":` + stepAnswer("", "", false) + `}`

// TestPromptCache shows the stable part of a chunk's request — the
// schema, then the system text — first and byte for byte the same in
// every call of the chunk, so that the second call reads it from the
// provider's prompt cache and is priced as cached: for one process's
// call of a chunk and for a batch's multiplexed call of K items, at
// OpenAI's wire (automatic caching) and Anthropic's (a cache_control
// breakpoint), against test models that cache as the providers say
// theirs do.
func TestPromptCache(t *testing.T) {
	chunk := cacheChunk(t)
	prices := &llm.Prices{Currency: "USD", Models: map[string]llm.Price{"m": {Input: 1, CachedInput: 0.1, CacheWrite: 1.25, Output: 4}}}
	wires := []struct {
		name     string
		provider func(t *testing.T) (llm.Provider, func() []string)
	}{{
		name: "openai",
		provider: func(t *testing.T) (llm.Provider, func() []string) {
			srv := llmtest.NewServer(t, func(name, body string) string {
				if strings.HasPrefix(name, "LLM_") && len(llmtest.Read(body).Steps) == 0 {
					return chunkAnswer
				}
				return llmtest.Multiplexed(stepAnswer)(name, body)
			}, llmtest.Options{PrefixCache: true})
			return openai.New(openai.Options{Model: "m", BaseURL: srv.URL, APIKey: "k", Strict: true}), srv.Bodies
		},
	}, {
		name: "anthropic",
		provider: func(t *testing.T) (llm.Provider, func() []string) {
			srv := llmtest.NewAnthropic(t, func(name, body string) string {
				if len(llmtest.Read(body).Steps) == 0 {
					return chunkAnswer
				}
				return llmtest.Multiplexed(stepAnswer)(name, body)
			}, llmtest.Options{PrefixCache: true})
			return anthropic.New(anthropic.Options{Model: "m", BaseURL: srv.URL, APIKey: "k"}), srv.Bodies
		},
	}}
	calls := []struct {
		name string
		call func(t *testing.T, p llm.Provider, n int) llm.Usage
	}{{
		name: "a process's chunk",
		call: func(t *testing.T, p llm.Provider, n int) llm.Usage {
			res, err := llm.Fill(context.Background(), p, llm.Task{Name: "LLM_review", Prompt: fmt.Sprintf("Review application %d.", n),
				Context: jsonv.ObjectValue(jsonv.Member{Name: "input", Value: jsonv.IntValue(int64(n))}), Schema: chunk}, llm.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return res.Usage
		},
	}, {
		name: "a multiplexed call of 8 items",
		call: func(t *testing.T, p llm.Provider, n int) llm.Usage {
			in := batch.FillInput{Chunk: "LLM_review", Schema: chunk, Call: batch.CallOptions{Limits: compile.Limits{MaxItems: 8}}}
			for i := range 8 {
				in.Items = append(in.Items, batch.FillItem{ID: fmt.Sprint(i), Prompt: fmt.Sprintf("Review application %d.", 8*n+i)})
			}
			out, err := batch.Fill(context.Background(), p, in, llm.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for i, it := range out.Items {
				if it.Error != "" {
					t.Fatalf("item %d: %s", i, it.Error)
				}
			}
			return out.Usage
		},
	}}
	for _, w := range wires {
		for _, c := range calls {
			t.Run(w.name+"/"+c.name, func(t *testing.T) {
				p, bodies := w.provider(t)
				first, second := c.call(t, p, 1), c.call(t, p, 2)
				sent := bodies()
				if len(sent) != 2 {
					t.Fatalf("%d requests, want 2", len(sent))
				}
				stable := stablePrefix(sent[0], sent[1])
				if stable < 4*1024 {
					t.Fatalf("the two requests share %d bytes from their start, under the smallest cached prefix", stable)
				}
				if first.CachedPromptTokens != 0 {
					t.Errorf("the first call read %d tokens from an empty cache", first.CachedPromptTokens)
				}
				// OpenAI reads in steps of 128 tokens; Anthropic up to its
				// breakpoint, after the system text.
				if second.CachedPromptTokens < int64(stable/4-128) || second.CachedPromptTokens >= second.PromptTokens {
					t.Errorf("the second call read %d of its %d prompt tokens from the cache; its first %d bytes are the first call's",
						second.CachedPromptTokens, second.PromptTokens, stable)
				}
				if w.name == "anthropic" && (first.CacheWriteTokens != second.CachedPromptTokens || second.CacheWriteTokens != 0) {
					t.Errorf("Anthropic: the first call wrote %d tokens, the second read %d and wrote %d", first.CacheWriteTokens, second.CachedPromptTokens, second.CacheWriteTokens)
				}
				cost, _ := prices.Cost("m", second, false)
				uncached := second
				uncached.CachedPromptTokens = 0
				full, _ := prices.Cost("m", uncached, false)
				if saved := float64(second.CachedPromptTokens) * (1 - 0.1) / 1e6; cost >= full || full-cost < saved*0.999 {
					t.Errorf("the second call costs %f, %f without the cache: not priced as cached", cost, full)
				}
			})
		}
	}
}

// stablePrefix is the bytes two request bodies' prompts share from the
// start: the schema, then the system text and the messages in order —
// the order both providers read a prompt in. It reads them with
// llmtest.Read, as the test models do.
func stablePrefix(a, b string) int {
	pa, pb := promptText(a), promptText(b)
	n := min(len(pa), len(pb))
	for i := range n {
		if pa[i] != pb[i] {
			return i
		}
	}
	return n
}

// promptText is a body's schema, system text and messages, in order.
func promptText(body string) string {
	v, err := jsonv.Parse([]byte(body))
	if err != nil {
		return ""
	}
	var b strings.Builder
	for _, tool := range v.Lookup("tools").Array() {
		b.Write(jsonv.Marshal(tool.Lookup("input_schema")))
	}
	if s := v.Lookup("response_format").Lookup("json_schema").Lookup("schema"); !s.IsNull() {
		b.Write(jsonv.Marshal(s))
	}
	for _, blk := range v.Lookup("system").Array() {
		b.WriteString(blk.Lookup("text").Str())
	}
	for _, m := range v.Lookup("messages").Array() {
		if c := m.Lookup("content"); c.Kind() == jsonv.KindString {
			b.WriteString(c.Str())
		} else {
			for _, blk := range c.Array() {
				b.WriteString(blk.Lookup("text").Str())
			}
		}
	}
	return b.String()
}
