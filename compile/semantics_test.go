package compile

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/augceo/vibe/jsonv"
)

// thinkingProcess has "_" and "$" members directly in a context and in
// the process, and a loop around its first context.
const thinkingProcess = `{
  "title": "Thinking and loops",
  "type": "object",
  "properties": {
    "_plan": {"type": "string", "description": "The process's own thinking."},
    "llmContext1": {
      "type": "object",
      "loop": {"done": "_loopDone", "max": 2},
      "properties": {
        "_considerations": {"type": "string"},
        "_loopDone": {"type": "boolean"},
        "draft": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        "$quality": {"type": "number"},
        "_feedback": {"type": "string"}
      }
    },
    "serverContext1": {
      "type": "object",
      "properties": {
        "Publish_Activity": {"type": "object", "references": ["llmContext1.draft"], "properties": {"id": {"type": "string"}}}
      }
    }
  }
}`

// TestThinkingMembers: a "_" or "$" member of a context or of the process
// is no step: it stays in its chunk for the model to fill, and the runtime
// keeps it as thinking, never as state (golden: the compiled process).
func TestThinkingMembers(t *testing.T) {
	p, err := Compile(context.Background(), "thinking.json", parse(t, thinkingProcess), Options{Actions: []string{"Publish_Activity"}})
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "thinking-and-loop.compiled.json", indent(p.Document))
	if len(p.Steps()) != 2 || p.Steps()[0].Name != "draft" || p.Steps()[1].Name != "Publish_Activity" {
		t.Fatalf("steps %v: only draft and Publish_Activity are steps", p.Steps())
	}
	first := p.Chunks[0]
	var names []string
	for _, m := range first.Members {
		names = append(names, m.Name)
	}
	if strings.Join(names, ",") != "_plan,_considerations,_loopDone,draft,$quality,_feedback" {
		t.Errorf("first chunk's members %v", names)
	}
	prog := p.Program()
	if n := len(prog.Chunks[0].Steps); n != 1 || prog.Chunks[0].Steps[0].Qualified() != "llmContext1.draft" {
		t.Errorf("the program's first chunk has steps %+v: thinking is kept apart from the state", prog.Chunks[0].Steps)
	}
	if got := strings.Join(jsonv.Value(prog.Chunks[0].Schema).Lookup("properties").Object().Names(), ","); got != "_plan,_considerations,_loopDone,draft,$quality,_feedback" {
		t.Errorf("the model is asked for %s", got)
	}
	// The loop around llmContext1, max 2, done at /_loopDone.
	if l := prog.Chunks[0].Loop; l == nil || l.Max != 2 || l.Done != "/_loopDone" {
		t.Errorf("loop %+v", l)
	}
	if _, ok := prog.Chunks[0].Schema.Get("loop"); ok {
		t.Error("the model sees the engine's loop keyword")
	}
	b, _ := json.Marshal(prog)
	var back Program
	if err := json.Unmarshal(b, &back); err != nil || back.Chunks[0].Loop == nil || back.Chunks[0].Loop.Max != 2 {
		t.Errorf("loop lost through JSON: %v %s", err, b)
	}
}

// TestServerStepInputs: a blocking step's inputs (its properties beside
// "output") are asked of the model in the LLM chunk before it, with output
// null; a second blocking step whose inputs come after the first splits
// the server chunk, with a model's chunk between.
func TestServerStepInputs(t *testing.T) {
	doc := `{"type": "object", "properties": {
	  "llmContext1": {"type": "object", "properties": {
	    "who": {"type": "object", "properties": {"name": {"type": "string"}}}}},
	  "serverContext1": {"type": "object", "properties": {
	    "FindUser_Activity": {"type": "object", "references": ["llmContext1.who"],
	      "properties": {"email": {"type": "string", "format": "email"}, "output": {"type": ["object", "null"], "properties": {"id": {"type": "string"}}}}, "required": ["email", "output"]},
	    "Notify_Activity": {"type": "object", "references": ["FindUser_Activity.output"], "withReferences": true,
	      "properties": {"message": {"type": "string"}, "output": {"type": ["object", "null"]}}}}}}}`
	p, err := Compile(context.Background(), "inputs.json", parse(t, doc), Options{Actions: []string{"FindUser_Activity", "Notify_Activity"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(kinds(p), " "); got != "LLM_llmContext1:LLM SERVER_serverContext1:SERVER LLM_Notify_Activity_input:LLM SERVER_serverContext1_Notify_Activity:SERVER" {
		t.Fatalf("chunks %s", got)
	}
	prog := p.Program()
	find := prog.Chunks[0].Steps[1]
	if find.Fills != "serverContext1.FindUser_Activity" || find.Qualified() != "serverContext1.FindUser_Activity.input" {
		t.Errorf("input step %+v", find)
	}
	ask := prog.Chunks[0].Schema.Lookup("properties").Lookup("FindUser_Activity")
	if got := string(jsonv.Marshal(ask)); got != `{"type":"object","properties":{"email":{"type":"string","format":"email"},"output":{"type":"null","description":"Filled by the server once the step runs: leave it null."}},"required":["email","output"]}` {
		t.Errorf("the model is asked for %s", got)
	}
	notify := prog.Chunks[2]
	if len(notify.References) != 1 || notify.References[0].String() != "serverContext1.FindUser_Activity.output" {
		t.Errorf("the second input's chunk sees %v", notify.References)
	}
	if s := prog.Chunks[3].Steps[0]; !s.Inputs || !s.WithReferences {
		t.Errorf("Notify_Activity %+v", s)
	}
	if s := prog.Chunks[1].Steps[0]; !s.Inputs || s.WithReferences {
		t.Errorf("FindUser_Activity %+v", s)
	}
}
