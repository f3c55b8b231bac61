package compile

import (
	"context"
	"testing"

	"github.com/augceo/vibe/jsonv"
)

// inputProcess has a step of every way an action is given its input.
const inputProcess = `{"type": "object", "properties": {
  "llmContext1": {"type": "object", "properties": {
    "draft": {"type": "object", "properties": {"to": {"type": "string"}, "subject": {"type": "string"}, "_why": {"type": "string"}}, "required": ["to", "subject", "_why"]},
    "approve": {"type": "object", "properties": {"decision": {"type": "string"}}, "required": ["decision"]},
    "copy": {"type": "object", "properties": {"to": {"type": "string"}}},
    "blob": {"type": "object"},
    "notify": {"type": "object", "properties": {"text": {"type": "string"}, "$confidence": {"type": "number"}}, "required": ["text", "$confidence"], "references": ["draft"]}
  }},
  "serverContext1": {"type": "object", "properties": {
    "send": {"type": "object", "references": ["llmContext1.draft"]},
    "sendField": {"type": "object", "references": ["llmContext1.draft.to"]},
    "sendBoth": {"type": "object", "references": ["llmContext1.draft", "llmContext1.approve"]},
    "sendCopy": {"type": "object", "references": ["llmContext1.draft", "llmContext1.copy"]},
    "sendScalar": {"type": "object", "references": ["llmContext1.approve", "llmContext1.draft.subject"]},
    "sendBlob": {"type": "object", "references": ["llmContext1.blob.x"]},
    "alone": {"type": "object"}
  }},
  "Book_Activity": {"type": "object", "properties": {"date": {"type": "string"}, "output": {"type": ["object", "null"]}}, "required": ["date", "output"]},
  "Mixed_Activity": {"type": "object", "withReferences": true, "references": ["llmContext1.approve"],
    "properties": {"date": {"type": "string"}, "output": {"type": ["object", "null"]}}, "required": ["date", "output"]}
}}`

func TestInputSchema(t *testing.T) {
	actions := []string{"notify", "send", "sendField", "sendBoth", "sendCopy", "sendScalar", "sendBlob", "alone", "Book_Activity", "Mixed_Activity"}
	p, err := Compile(context.Background(), "p.json", parse(t, inputProcess), Options{Actions: actions})
	if err != nil {
		t.Fatal(err)
	}
	const draft = `{"type":"object","properties":{"to":{"type":"string"},"subject":{"type":"string"}},"required":["to","subject"]}`
	tests := []struct {
		name   string
		step   string
		unwrap bool
		want   string // the schema; "" when no schema describes the input
		err    string
	}{
		{"fire-and-forget: its own value, without metrics or references", "llmContext1.notify", false,
			`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`, ""},
		{"blocking step: the inputs the model filled", "Book_Activity", false,
			`{"type":"object","properties":{"date":{"type":"string"}},"required":["date"]}`, ""},
		{"blocking step with its references beside: left to the action", "Mixed_Activity", false, "", ""},
		{"no references: the process's input, left to the action", "serverContext1.alone", false, "", ""},
		{"minimal context, without thinking fields", "serverContext1.send", false,
			`{"type":"object","properties":{"llmContext1":{"type":"object","properties":{"draft":` + draft + `},"required":["draft"]}},"required":["llmContext1"]}`, ""},
		{"minimal context of a field", "serverContext1.sendField", false,
			`{"type":"object","properties":{"llmContext1":{"type":"object","properties":{"draft":{"type":"object","properties":{"to":{"type":"string"}},"required":["to"]}},"required":["draft"]}},"required":["llmContext1"]}`, ""},
		{"minimal context of two steps of one context", "serverContext1.sendBoth", false,
			`{"type":"object","properties":{"llmContext1":{"type":"object","properties":{"draft":` + draft + `,"approve":{"type":"object","properties":{"decision":{"type":"string"}},"required":["decision"]}},"required":["draft","approve"]}},"required":["llmContext1"]}`, ""},
		{"unwrapped: the one value", "serverContext1.send", true, draft, ""},
		{"unwrapped: the one field", "serverContext1.sendField", true, `{"type":"string"}`, ""},
		{"unwrapped: members merged in order", "serverContext1.sendBoth", true,
			`{"type":"object","properties":{"to":{"type":"string"},"subject":{"type":"string"},"decision":{"type":"string"}},"required":["to","subject","decision"]}`, ""},
		{"unwrapped: two give one argument", "serverContext1.sendCopy", true, "",
			`llmContext1.draft and llmContext1.copy both give the argument "to"`},
		{"unwrapped: a value that is no object", "serverContext1.sendScalar", true, "",
			"llmContext1.draft.subject is not an object schema with properties, whose members would be arguments"},
		{"a field its step does not declare", "serverContext1.sendBlob", false, "", ""},
		{"a field its step does not declare, unwrapped", "serverContext1.sendBlob", true, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := p.Step(tt.step)
			if s == nil {
				t.Fatalf("no step %s", tt.step)
			}
			have, ok, err := s.InputSchema(tt.unwrap)
			switch {
			case tt.err != "":
				if err == nil || err.Error() != tt.err || ok {
					t.Fatalf("ok %v, error %v; want the error %s", ok, err, tt.err)
				}
			case err != nil:
				t.Fatal(err)
			case tt.want == "":
				if ok {
					t.Fatalf("ok, with %s; want no schema", jsonv.Marshal(have))
				}
			case !ok:
				t.Fatalf("no schema; want %s", tt.want)
			default:
				if got := string(jsonv.Marshal(have)); got != tt.want {
					t.Errorf("schema\n%s\nwant\n%s", got, tt.want)
				}
			}
		})
	}
}
