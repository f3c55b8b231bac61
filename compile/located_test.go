package compile

import (
	"context"
	"strings"
	"testing"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/registry"
)

// TestErrorsNameTheirFile: a problem of an instruction is told at the
// instruction's file and path — whether a pipeline's step, a process's
// "$ref" or a mixin brought it in — once, however many steps share it; a
// problem of the composition itself stays where the composed document
// has it.
func TestErrorsNameTheirFile(t *testing.T) {
	reg := &registry.Registry{}
	for uri, text := range map[string]string{
		"aug:instructions/Triage":  `{"type": "object", "properties": {"category": {"type": "strng"}, "note": {"type": "string"}}, "required": "category"}`,
		"aug:instructions/Ok":      `{"type": "object", "properties": {"reply": {"type": "string"}}, "required": ["reply"]}`,
		"aug:macros/Think":         `{"type": "object", "properties": {"_considerations": {"type": "string", "minLength": "3"}, "default": {}}, "required": ["default"]}`,
		"aug:instructions/Wrapped": `{"allOf": [{"$ref": "aug:macros/Think"}, {"properties": {"default": {"$ref": "aug:instructions/Ok"}}}]}`,
		"aug:processes/triage": `{"type": "object", "properties": {"llmContext": {"type": "object", "properties": {
			"triage": {"$ref": "aug:instructions/Triage"}, "wrapped": {"$ref": "aug:instructions/Wrapped"}}}}}`,
	} {
		doc, err := jsonv.Parse([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		if err := reg.Add(uri, doc); err != nil {
			t.Fatal(err)
		}
	}
	triage := []string{
		`aug:instructions/Triage: /required: required must be an array of property names, not "category"`,
		`aug:instructions/Triage: /properties/category/type: not a valid JSON Schema: value must be one of 'array', 'boolean', 'integer', 'null', 'number', 'object', 'string'`,
	}
	think := `aug:macros/Think: /properties/_considerations/minLength: not a valid JSON Schema: got string, want integer`
	opts := Options{Registry: reg}
	ctx := context.Background()
	process, _ := reg.Document("aug:processes/triage")
	local, _ := jsonv.Parse([]byte(`{"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "strng"}}}}}`))
	tests := []struct {
		name    string
		compile func() error
		want    []string
	}{
		{"a pipeline's step", func() error { _, err := CompilePipeline(ctx, "prompt | Triage", opts); return err }, triage},
		{"two steps of one instruction", func() error { _, err := CompilePipeline(ctx, "prompt | Triage | Ok | Triage", opts); return err }, triage},
		{"a mixin of a step", func() error { _, err := CompilePipeline(ctx, "prompt | Wrapped", opts); return err }, []string{think}},
		{"a process's $ref", func() error { _, err := Compile(ctx, process.File, process.Value, opts); return err }, append(triage[:1:1], triage[1], think)},
		{"an instruction alone", func() error {
			_, err := Instruction(ctx, "aug:instructions/Wrapped", jsonv.ObjectValue(jsonv.Member{Name: "$ref", Value: jsonv.StringValue("aug:instructions/Wrapped")}), opts)
			return err
		}, []string{think}},
		{"the document's own", func() error { _, err := Compile(ctx, "p.json", local, opts); return err }, []string{
			`p.json: /properties/a/properties/b/type: not a valid JSON Schema: value must be one of 'array', 'boolean', 'integer', 'null', 'number', 'object', 'string'`}},
	}
	for _, tt := range tests {
		err := tt.compile()
		if err == nil {
			t.Errorf("%s: no error", tt.name)
			continue
		}
		if got := err.Error(); got != strings.Join(tt.want, "\n") {
			t.Errorf("%s:\n%s\nwant\n%s", tt.name, got, strings.Join(tt.want, "\n"))
		}
	}
}
