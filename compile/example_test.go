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
	// property a<i> holds its step1_classify, property b<i> holds its step2_reply; each part's "_item" is its item's tag
}
