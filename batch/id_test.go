package batch_test

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/internal/llmtest"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/registry"
)

// idClient is a batch client with a registry — the moderate process, and
// the instructions Assess and Decide — and the action record: what a batch
// id is derived from needs no engine.
func idClient(t *testing.T) *batch.Client {
	t.Helper()
	doc, err := os.ReadFile("testdata/moderate.json")
	if err != nil {
		t.Fatal(err)
	}
	reg := &registry.Registry{}
	for uri, s := range map[string]string{
		"aug:processes/moderate":    string(doc),
		"aug:processes/moderate2":   strings.Replace(string(doc), `"positive", "neutral", "negative"`, `"positive", "negative"`, 1),
		"aug:instructions/Assess":   `{"type": "object", "properties": {"sentiment": {"type": "string", "enum": ["positive", "negative"]}}, "required": ["sentiment"]}`,
		"aug:instructions/Decide":   `{"type": "object", "properties": {"decision": {"type": "string", "enum": ["publish", "hide"]}}, "required": ["decision"]}`,
		"aug:instructions/Decide2":  `{"type": "object", "properties": {"decision": {"type": "string", "enum": ["publish", "hide", "escalate"]}}, "required": ["decision"]}`,
		"aug:instructions/Untitled": `{"type": "object", "properties": {"note": {"type": "string"}}, "required": ["note"]}`,
	} {
		if err := reg.Add(uri, mustParse(t, s)); err != nil {
			t.Fatal(err)
		}
	}
	return batch.NewClient(&process.Client{Registry: reg, Actions: []string{"record"}})
}

// TestID: a batch's id names the process — as compiled — and the input,
// and what changes the results: the system text and the prompt. Not K,
// the concurrency or how the calls are sent; not how the input's lines are
// written. What the command line derives (the input's digest, then
// Client.ID) and what POST /v1/batches derives (Runner.Start, which
// digests the input as it spools it) agree.
func TestID(t *testing.T) {
	ctx := context.Background()
	c := idClient(t)
	doc, _ := os.ReadFile("testdata/moderate.json")
	const items = "\"comment 1\"\n{\"prompt\": \"comment 2\"}\n\"comment 3\"\n"
	uri := batch.Options{Process: process.StartOptions{Process: "aug:processes/moderate"}}
	pipeline := batch.Options{Process: process.StartOptions{Pipeline: "prompt | Assess | Decide"}}
	with := func(o batch.Options, f func(*batch.Options)) batch.Options { f(&o); return o }
	id := func(t *testing.T, o batch.Options, input string) string {
		t.Helper()
		digest, err := batch.InputDigest(strings.NewReader(input))
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.ID(ctx, o, digest)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	base := id(t, uri, items)
	if !strings.HasPrefix(base, "moderate-") || len(base) != len("moderate-")+12 {
		t.Fatalf("id %q, want moderate-<12 hex digits>", base)
	}
	tests := []struct {
		name  string
		opts  batch.Options
		input string
		same  bool // the id is base's (the registry URI over items)
		other string
	}{
		{"the same again", uri, items, true, ""},
		{"another K", with(uri, func(o *batch.Options) { o.Size = 7 }), items, true, ""},
		{"another concurrency, window and calls", with(uri, func(o *batch.Options) {
			o.Concurrency, o.Window, o.Call.ProviderBatch, o.Call.Limits.MaxItems = 9, 3, true, 2
		}), items, true, ""},
		{"lines written otherwise", uri, "\"comment 1\"\r\n{ \"prompt\" : \"comment 2\" }\n\"comment 3\"\n\n\n", true, ""},
		{"no newline at the end", uri, strings.TrimSuffix(items, "\n"), true, ""},
		{"another item", uri, items + "\"comment 4\"\n", false, ""},
		{"items in another order", uri, "\"comment 3\"\n{\"prompt\": \"comment 2\"}\n\"comment 1\"\n", false, ""},
		{"a blank line between items", uri, "\"comment 1\"\n\n{\"prompt\": \"comment 2\"}\n\"comment 3\"\n", false, ""},
		{"the system text", with(uri, func(o *batch.Options) { o.Process.System = "Be brief." }), items, false, ""},
		{"a prompt for items without one", with(uri, func(o *batch.Options) { o.Process.Prompt = "Moderate:" }), items, false, ""},
		{"the schema edited", batch.Options{Process: process.StartOptions{Process: "aug:processes/moderate2"}}, items, false, ""},
		// The same program under the same name, wherever its schema came from.
		{"the same schema inline", batch.Options{Process: process.StartOptions{Document: mustParse(t, string(doc)), File: "moderate.json"}}, items, true, ""},
		{"the same schema inline, from no file", batch.Options{Process: process.StartOptions{Document: mustParse(t, string(doc))}}, items, true, ""},
		{"a pipeline", pipeline, items, false, "assess-decide-"},
		{"a pipeline with another step", batch.Options{Process: process.StartOptions{Pipeline: "prompt | Assess | Decide2"}}, items, false, "assess-decide2-"},
		{"a name, a label", with(uri, func(o *batch.Options) { o.Process.Name = "Spring moderation" }), items, true, ""},
	}
	ids := map[string]string{base: "the registry URI"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := id(t, tt.opts, tt.input)
			if tt.same {
				if got != base {
					t.Errorf("id %s, want %s", got, base)
				}
				return
			}
			if prev, ok := ids[got]; ok {
				t.Errorf("id %s, the id of %s too", got, prev)
			}
			ids[got] = tt.name
			if tt.other != "" && !strings.HasPrefix(got, tt.other) {
				t.Errorf("id %s, want it to start with %s", got, tt.other)
			}
		})
	}

	// The same pipeline written inside out, and with other spacing, is the
	// same program: the same batch.
	for _, p := range []string{"prompt|Assess|Decide", "Decide(Assess(prompt))"} {
		if got, want := id(t, batch.Options{Process: process.StartOptions{Pipeline: p}}, items), id(t, pipeline, items); got != want {
			t.Errorf("pipeline %q: id %s, want %s", p, got, want)
		}
	}

	// POST /v1/batches: a Runner spools the input and derives the same id,
	// given as JSONL or as an items array; the batch it ran is found again
	// by the same body with another K, which keeps the batch's.
	if testing.Short() {
		return
	}
	model := llmtest.NewServer(t, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{})
	engine := stack(t, model.URL, (&recorder{}).actions())
	engine.Processes.Registry = c.Processes.Registry
	r := &batch.Runner{Client: engine, Dir: t.TempDir()}
	for i, in := range []string{items, string(jsonvItems(t, "comment 1", `{"prompt":"comment 2"}`, "comment 3"))} {
		opts := uri
		opts.Size = 2 + i
		got, created, err := r.Start(ctx, opts, strings.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		if got != base || created != (i == 0) {
			t.Errorf("the server's id of %q: %s (created %v), want %s", in, got, created, base)
		}
		if err := r.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	st, err := engine.Status(ctx, base)
	if err != nil || st.Size != 2 || st.Calls["LLM_llmContext1"] != 2 || st.Done != 3 || st.Digest == "" {
		t.Errorf("the batch's record: %+v %v", st, err)
	}
	// Run again with another K: the batch keeps its own, and says so.
	var notes []string
	before := model.Requests()
	sum, err := engine.Run(ctx, strings.NewReader(items), func(batch.Result) error { return nil },
		with(uri, func(o *batch.Options) { o.ID, o.Size, o.Note = base, 5, func(s string) { notes = append(notes, s) } }))
	if err != nil || sum.Done != 3 || model.Requests() != before {
		t.Errorf("a rerun with K=5: %+v %v, %d new model requests", sum, err, model.Requests()-before)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "keeps the group size of its first run, 2 items (this run asked for 5)") {
		t.Errorf("notes %q", notes)
	}
}

// jsonvItems is the input POST /v1/batches makes of an "items" array:
// batch.Items of each item (a JSON string, or an object given as JSON).
func jsonvItems(t *testing.T, items ...string) []byte {
	t.Helper()
	vs := make([]jsonv.Value, len(items))
	for i, it := range items {
		if strings.HasPrefix(it, "{") {
			vs[i] = mustParse(t, it)
		} else {
			vs[i] = jsonv.StringValue(it)
		}
	}
	b, err := io.ReadAll(batch.Items(vs))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
