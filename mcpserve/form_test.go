package mcpserve

import (
	"testing"

	"github.com/augceo/vibe/jsonv"
)

func TestForm(t *testing.T) {
	tests := []struct {
		name, chunk string
		form        string // the form's schema, or
		err         string // why there is none
	}{
		{"one step: its fields", `{"title": "Decide", "type": "object", "properties": {"confirm": {"type": "object",
			"properties": {"decision": {"type": "string", "enum": ["Approve", "Reject"]}, "note": {"type": "string", "maxLength": 200}}, "required": ["decision"]}},
			"required": ["confirm"]}`,
			`{"type":"object","properties":{"decision":{"type":"string","enum":["Approve","Reject"]},"note":{"type":"string","maxLength":200}},"required":["decision"]}`, ""},
		{"several steps: step.field", `{"type": "object", "properties": {
			"who": {"type": "object", "properties": {"email": {"type": "string", "format": "email"}}, "required": ["email"]},
			"count": {"type": "integer", "minimum": 1, "title": "How many"}}, "required": ["who", "count"]}`,
			`{"type":"object","properties":{"who.email":{"type":"string","title":"who: email","format":"email"},"count":{"type":"integer","minimum":1,"title":"How many"}},"required":["who.email","count"]}`, ""},
		{"an optional step's fields are optional", `{"type": "object", "properties": {"s": {"type": "object", "properties": {"x": {"type": "boolean", "default": true}}, "required": ["x"]}}}`,
			`{"type":"object","properties":{"x":{"type":"boolean","default":true}}}`, ""},
		{"an enum of strings is a choice", `{"type": "object", "properties": {"s": {"type": "object", "properties": {"c": {"enum": ["a", "b"]}}}}}`,
			`{"type":"object","properties":{"c":{"type":"string","enum":["a","b"]}}}`, ""},
		{"a multiple choice", `{"type": "object", "properties": {"s": {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string", "enum": ["x", "y"]}, "maxItems": 2}}}}}`,
			`{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string","enum":["x","y"]},"maxItems":2}}}`, ""},
		{"nested object", `{"type": "object", "properties": {"s": {"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}}}}}}}`,
			"", "/s/a: a form's field is a string, number, integer, boolean or array, not object (nested objects do not fit a form)"},
		{"pattern", `{"type": "object", "properties": {"s": {"type": "object", "properties": {"zip": {"type": "string", "pattern": "^[0-9]{5}$"}}}}}`,
			"", `/s/zip: "pattern" is beyond what an MCP form asks of a string`},
		{"nullable", `{"type": "object", "properties": {"s": {"type": "object", "properties": {"n": {"type": ["string", "null"]}}}}}`,
			"", `/s/n: a form's field has one type (string, number, integer, boolean or array); this one has ["string","null"]`},
		{"format", `{"type": "object", "properties": {"s": {"type": "object", "properties": {"ip": {"type": "string", "format": "ipv4"}}}}}`,
			"", `/s/ip: a form's string has a format of [email uri date date-time], not "ipv4"`},
		{"array of objects", `{"type": "object", "properties": {"s": {"type": "object", "properties": {"l": {"type": "array", "items": {"type": "object"}}}}}}`,
			"", "/s/l: a form's array is a choice of several strings: its items are strings of an enum"},
		{"alternatives", `{"type": "object", "properties": {"s": {"anyOf": [{"type": "string"}, {"type": "object"}]}}}`,
			"", "/s: a form's field has one type (string, number, integer, boolean or array); this one has none"},
		{"open step", `{"type": "object", "properties": {"s": {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": true}}}`,
			"", "/s: a form has no room for other properties (additionalProperties)"},
		{"clash", `{"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}}}, "a.b": {"type": "string"}}}`,
			"", `/a.b: two fields of the form would be named "a.b"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chunk, err := jsonv.Parse([]byte(tt.chunk))
			if err != nil {
				t.Fatal(err)
			}
			f, err := NewForm(chunk)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Errorf("error %v\nwant  %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := string(jsonv.Marshal(f.Schema)); got != tt.form {
				t.Errorf("form %s\nwant %s", got, tt.form)
			}
		})
	}
}

// TestFormAnswer: the answer is in the chunk's order of steps and fields,
// whatever the order of the form's content (a Go map).
func TestFormAnswer(t *testing.T) {
	chunk, _ := jsonv.Parse([]byte(`{"type": "object", "properties": {
		"who": {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}},
		"ok": {"type": "boolean"},
		"later": {"type": "object", "properties": {"x": {"type": "string"}}}}, "required": ["who", "ok"]}`))
	f, err := NewForm(chunk)
	if err != nil {
		t.Fatal(err)
	}
	answer, err := f.Answer(map[string]any{"ok": true, "who.age": 41.0, "who.name": "Ann"})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(jsonv.Marshal(answer)); got != `{"who":{"name":"Ann","age":41},"ok":true}` {
		t.Errorf("answer %s", got)
	}
	if _, err := f.Answer(map[string]any{"nope": 1}); err == nil || err.Error() != `the form has no field "nope"` {
		t.Errorf("an unknown field: %v", err)
	}
}
