package api

import (
	"context"
	"testing"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/replay"
	"github.com/augceo/vibe/replay/record"
)

// TestReplays: POST /v1/replays replays recorded processes against an
// inline changed process and answers with the report; what it cannot run
// is refused with the field at fault.
func TestReplays(t *testing.T) {
	const doc = `{"title": "Tag", "type": "object", "properties": {
	  "llmContext1": {"type": "object", "properties": {
	    "tag": {"type": "object", "properties": {"label": {"type": "string", "enum": ["a", "b"]}}, "required": ["label"]}}}}}`
	start, _, err := (&process.Client{}).Prepare(context.Background(), process.StartOptions{Document: mustJSON(t, doc)})
	if err != nil {
		t.Fatal(err)
	}
	ch := &start.Program.Chunks[0]
	store := &record.Store{Dir: t.TempDir()}
	err = store.Keep(context.Background(), []record.Record{{ID: "tag-1", Process: "tag", Status: "completed", Chunks: []record.Chunk{
		{Name: ch.Name, Kind: ch.Kind, Fingerprint: record.Fingerprint(ch, ""), Context: jsonv.NewObject(0).Value(), Answer: mustJSON(t, `{"tag": {"label": "a"}}`)}}}})
	if err != nil {
		t.Fatal(err)
	}
	h := Handler(&fakeProcesses{}, Options{Logger: slogDiscard(), Replays: &replay.Service{Records: store}})

	code, out, raw := call(t, h, "POST", "/v1/replays", `{"ids": ["tag-1", "gone-2"], "process": `+doc+`}`, "")
	if code != 200 {
		t.Fatalf("%d %s", code, raw)
	}
	sum := out["summary"].(map[string]any)
	if sum["same"] != 1.0 || sum["noRecord"] != 1.0 || sum["requests"] != 0.0 {
		t.Errorf("summary %v", sum)
	}
	items := out["items"].([]any)
	if len(items) != 2 || items[0].(map[string]any)["outcome"] != "same" || items[1].(map[string]any)["outcome"] != "no record" {
		t.Errorf("items %v", items)
	}

	// A sample, and a baseline with the recorded process inline: the
	// replay asked no chunk again, so neither does the baseline.
	code, out, raw = call(t, h, "POST", "/v1/replays", `{"ids": ["tag-1"], "process": `+doc+`, "sample": 1, "seed": 5, "baseline": 1, "baselineProcess": `+doc+`}`, "")
	if code != 200 {
		t.Fatalf("%d %s", code, raw)
	}
	sum = out["summary"].(map[string]any)
	sample, _ := sum["sample"].(map[string]any)
	share, _ := sum["share"].(map[string]any)
	base, _ := sum["baseline"].(map[string]any)
	if sample["items"] != 1.0 || sample["of"] != 1.0 || sample["seed"] != 5.0 || share["of"] != 1.0 || share["changed"] != 0.0 ||
		base["items"] != 1.0 || base["changed"] != 0.0 || base["requests"] != 0.0 || len(out["baseline"].([]any)) != 1 {
		t.Errorf("a sample with a baseline: %s", raw)
	}

	tests := []struct {
		body, path string
		code       int
	}{
		{`{"ids": ["tag-1"], "baseline": 2, "process": ` + doc + `}`, "/baselineProcess", 400},
		{`{"ids": ["tag-1"], "sample": -1, "process": ` + doc + `}`, "/sample", 400},
		{`{"process": ` + doc + `}`, "/ids", 400},
		{`{"from": "tag", "since": "yesterday", "process": ` + doc + `}`, "/since", 400},
		{`[1]`, "", 400},
		{`{"ids": ["tag-1"], "providerBatch": true, "providerBatchPoll": "often", "process": ` + doc + `}`, "/providerBatchPoll", 400},
		{`{"ids": ["tag-1"], "process": {"title": "Bad", "properties": {"llmContext1": {"properties": {"x": {"references": ["nowhere.y"]}}}}}}`, "", 422},
	}
	for _, tc := range tests {
		code, out, raw := call(t, h, "POST", "/v1/replays", tc.body, "")
		if code != tc.code || (tc.path != "" && out["path"] != tc.path) {
			t.Errorf("%s: %d %s, want %d at %s", tc.body, code, raw, tc.code, tc.path)
		}
	}
	if code, _, _ := call(t, Handler(&fakeProcesses{}, Options{Logger: slogDiscard()}), "POST", "/v1/replays", `{}`, ""); code != 404 {
		t.Errorf("without Replays: %d, want 404", code)
	}
}
