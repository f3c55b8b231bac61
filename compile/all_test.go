package compile

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/schema"
)

// TestAllErrorsAtOnce: a process whose "$ref"s fail has the compiler's
// problems reported in the same run, after the composer's — but for those
// inside a step whose composing failed, which only follow from it — so
// that one run lists everything to fix. A composing problem in another
// file leaves nothing known to be sound: it is reported alone.
func TestAllErrorsAtOnce(t *testing.T) {
	reg := &registry.Registry{}
	for uri, text := range map[string]string{
		"aug:instructions/broken": `{"type": "object", "properties": {"x": {"$ref": "aug:instructions/nowhere"}}}`,
		"aug:instructions/Triage": `{"type": "object", "properties": {"category": {"type": "string"}}, "required": ["category", "note"]}`,
	} {
		if err := reg.Add(uri, parse(t, text)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		name, doc string
		want      []string // each error, as "PATH: the start of its message", after "FILE " when not p.json
	}{
		{"two $ref problems and three of the compiler's", `{"type": "object", "properties": {
			"draft": {"$ref": "aug:instructions/nope"},
			"identify": {"type": "object", "properties": {"who": {"type": "string"}}, "required": ["who", "whom"]},
			"review": {"$ref": "#/$defs/missing"},
			"plan": {"type": "object", "references": ["identfy"], "properties": {"when": {"type": "string"}}},
			"send_Activity": {"type": "object", "properties": {"to": {"type": "string"}, "output": {"type": "object"}}}}}`,
			[]string{
				`/properties/draft/$ref: unknown $ref "aug:instructions/nope"`,
				`/properties/review/$ref: unknown $ref "#/$defs/missing"`,
				`/properties/identify/required/1: required names "whom"`,
				`/properties/send_Activity/properties/output: blocking step "send_Activity": its output must be nullable`,
				`/properties/plan/references/0: step "plan" references "identfy", which names no step`,
			}},
		{"a step whose composing failed is not judged further", `{"type": "object", "properties": {
			"draft": {"type": "object", "properties": {"body": {"$ref": "aug:instructions/nope"}}, "required": ["body", "subject"]},
			"send": {"type": "object", "references": ["drafts"], "properties": {"to": {"type": "string"}}}}}`,
			[]string{
				`/properties/draft/properties/body/$ref: unknown $ref "aug:instructions/nope"`,
				`/properties/send/references/0: step "send" references "drafts", which names no step`,
			}},
		{"a problem of an instruction a \"$ref\" brought in is told at its file", `{"type": "object", "properties": {
			"draft": {"$ref": "aug:instructions/nope"},
			"triage": {"$ref": "aug:instructions/Triage"}}}`,
			[]string{
				`/properties/draft/$ref: unknown $ref "aug:instructions/nope"`,
				`aug:instructions/Triage /required/1: required names "note"`,
			}},
		{"a composing problem in another file is told alone", `{"type": "object", "properties": {
			"draft": {"$ref": "aug:instructions/broken"},
			"send": {"type": "object", "references": ["drafts"], "properties": {"to": {"type": "string"}}}}}`,
			[]string{`aug:instructions/broken /properties/x/$ref: unknown $ref "aug:instructions/nowhere"`}},
		{"a process that composes reports the compiler's alone", `{"type": "object", "properties": {
			"send": {"type": "object", "references": ["drafts"], "properties": {"to": {"type": "string"}}}}}`,
			[]string{`/properties/send/references/0: step "send" references "drafts", which names no step`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compile(context.Background(), "p.json", parse(t, tt.doc), Options{Registry: reg, Actions: []string{"send_Activity"}})
			var got []string
			for _, e := range schema.Errors(err, "p.json") {
				at := string(e.Path) + ": " + e.Message
				if e.File != "p.json" {
					at = e.File + " " + at
				}
				got = append(got, at)
			}
			if len(got) != len(tt.want) || !slices.EqualFunc(got, tt.want, strings.HasPrefix) {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}
