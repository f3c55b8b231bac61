package replay_test

import (
	"context"
	"fmt"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/replay"
	"github.com/augceo/vibe/replay/record"
)

// A recorded run replayed against its process unchanged, then against one
// whose server step now takes another input: the first takes every
// recorded answer and asks nothing, the second stops at the server step.
func ExampleRun() {
	ctx := context.Background()
	pc := &process.Client{Actions: []string{"record"}}
	compileDoc := func(refs string) replay.Options {
		doc, _ := jsonv.Parse([]byte(`{"title": "Tag", "type": "object", "properties": {
		  "llmContext1": {"type": "object", "properties": {
		    "tag": {"type": "object", "properties": {"label": {"type": "string", "enum": ["a", "b"]}}, "required": ["label"]},
		    "note": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}},
		  "serverContext1": {"type": "object", "properties": {
		    "record": {"references": ` + refs + `, "type": "object", "properties": {"ok": {"type": "boolean"}}}}}}}`))
		start, _, err := pc.Prepare(ctx, process.StartOptions{Document: doc})
		if err != nil {
			fmt.Println(err)
		}
		return replay.Options{Name: start.Name, Program: start.Program}
	}
	before := compileDoc(`["llmContext1.tag"]`)
	ch := &before.Program.Chunks[0]
	answer, _ := jsonv.Parse([]byte(`{"tag": {"label": "a"}, "note": {"n": 1}}`))
	tag, _ := jsonv.Parse([]byte(`{"llmContext1": {"tag": {"label": "a"}}}`))
	rec := record.Record{ID: "tag-1", Process: "tag", Status: "completed", Prompt: "item one", Chunks: []record.Chunk{
		{Name: ch.Name, Kind: ch.Kind, Fingerprint: record.Fingerprint(ch, ""), Context: jsonv.NewObject(0).Value(), Answer: answer},
		{Name: before.Program.Chunks[1].Name, Kind: before.Program.Chunks[1].Kind, Steps: []record.Step{
			{Name: "serverContext1.record", Input: tag, Output: jsonv.ObjectValue(jsonv.Member{Name: "ok", Value: jsonv.BoolValue(true)})}}},
	}}

	for _, opts := range []replay.Options{before, compileDoc(`["llmContext1.note"]`)} {
		rep, err := replay.Run(ctx, []record.Record{rec}, opts)
		if err != nil {
			fmt.Println(err)
			return
		}
		it := rep.Items[0]
		fmt.Printf("%s: %s %s; %d requests\n", it.ID, it.Outcome, it.Needs, rep.Summary.Requests)
	}
	// Output:
	// tag-1: same ; 0 requests
	// tag-1: needs the server step serverContext1.record: its input changed; 0 requests
}
