package compile_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/jsonv"
)

func ExampleCompile() {
	doc, _ := jsonv.Parse([]byte(`{"type": "object", "properties": {
		"llmContext1": {"properties": {"draft": {"type": "object"}}},
		"userContext": {"properties": {"approve": {"references": ["llmContext1.draft"], "enum": ["yes", "no"]}}},
		"serverContext1": {"properties": {"send": {"references": ["llmContext1.draft", "approve"]}}}}}`))
	p, err := compile.Compile(context.Background(), "process.json", doc, compile.Options{})
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range p.Chunks {
		fmt.Println(c.Name, c.Kind, len(c.Steps), c.References)
	}
	fmt.Println(p.Document.Lookup(compile.EntryPointKey))
	// Output:
	// LLM_llmContext1 LLM 1 []
	// USER_userContext USER 1 [llmContext1.draft]
	// SERVER_serverContext1 SERVER 1 [llmContext1.draft userContext.approve]
	// {"$ref":"#/$defs/LLM_llmContext1"}
}

func ExampleMinimalContext() {
	doc, _ := jsonv.Parse([]byte(`{"properties": {
		"step4_find_user": {"properties": {"output": {"type": ["object", "null"]}}},
		"step5_draft_email": {"references": ["step4_find_user.output"], "type": "object"}}}`))
	p, err := compile.Compile(context.Background(), "p.json", doc, compile.Options{})
	if err != nil {
		log.Fatal(err)
	}
	state, _ := jsonv.Parse([]byte(`{"step4_find_user": {"query": "jane", "output": {"userId": "u-12345", "userName": "Jane Doe"}}}`))
	ctx, _ := compile.MinimalContext(state, p.Step("step5_draft_email").References)
	os.Stdout.Write(jsonv.MarshalIndent(ctx, "  "))
	// Output:
	// {
	//   "step4_find_user": {
	//     "output": {
	//       "userId": "u-12345",
	//       "userName": "Jane Doe"
	//     }
	//   }
	// }
}

func ExampleMultiplex() {
	chunk, _ := jsonv.Parse([]byte(`{"properties": {"step1_classify": {"type": "string"}, "step2_reply": {"type": "string"}}}`))
	m, _ := compile.Multiplex(chunk, 2, compile.MultiplexOptions{})
	fmt.Println(m.Lookup("properties").Object().Names())
	answer, _ := jsonv.Parse([]byte(`{"a1": "spam", "a2": "ok", "b1": "-", "b2": "Thanks!"}`))
	items := compile.Demultiplex(answer, []string{"step1_classify", "step2_reply"}, 2, nil)
	fmt.Println(items[1].Value, items[1].Err)
	fmt.Println(compile.Legend([]string{"step1_classify", "step2_reply"}))
	// Output:
	// [a1 a2 b1 b2]
	// {"step1_classify":"ok","step2_reply":"Thanks!"} <nil>
	// property a<i> holds its step1_classify, property b<i> holds its step2_reply; a<i>'s "_item" is item i's tag
}

func ExampleForModel() {
	chunk, _ := jsonv.Parse([]byte(`{"type": "object", "properties": {
		"step1_frame": {"title": "Frame", "description": "What the problem is.", "type": "object",
			"properties": {"result": {"type": "string", "description": "What this step decided."}}},
		"step2_plan": {"title": "Plan", "description": "How to solve it.", "type": "object",
			"properties": {"result": {"type": "string", "description": "What this step decided."}}}}}`))
	sent := compile.ForModel(chunk)
	fmt.Println(string(jsonv.Marshal(sent)))
	strict := compile.Project(sent, compile.ProjectOptions{Strict: true})
	fmt.Println(compile.NotesText(strict.Notes))
	// Output:
	// {"type":"object","properties":{"step1_frame":{"description":"What the problem is.","$ref":"#/$defs/step"},"step2_plan":{"description":"How to solve it.","$ref":"#/$defs/step"}},"$defs":{"step":{"type":"object","properties":{"result":{"type":"string","description":"What this step decided."}}}}}
	// What these parts of the schema are:
	// - step1_frame: What the problem is.
	// - step2_plan: How to solve it.
}

func ExampleProgram_OutputCap() {
	doc, _ := jsonv.Parse([]byte(`{"type": "object", "properties": {
		"assess": {"type": "object", "properties": {"sentiment": {"enum": ["positive", "negative"]}, "why": {"type": "string", "maxLength": 200}}}}}`))
	p, err := compile.Compile(context.Background(), "process.json", doc, compile.Options{})
	if err != nil {
		log.Fatal(err)
	}
	prog := p.Program()
	// A model whose answers stop at 4,096 tokens.
	c := prog.OutputCap(prog.Chunks[0].Name, 4096, nil)
	fmt.Println(c.PerItem, c.MaxK(), c.Fits(65), c.Fits(66))
	// Output:
	// 63 65 true false
}
