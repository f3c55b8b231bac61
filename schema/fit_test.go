package schema

import (
	"strings"
	"testing"

	"github.com/augceo/vibe/jsonv"
)

func TestFit(t *testing.T) {
	tests := []struct {
		name, have, want string
		problems         []string // "path: message", in order
	}{
		{"same", `{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}`,
			`{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}`, nil},
		{"open want", `{"type": "integer"}`, `{"description": "anything"}`, nil},
		{"integer is a number", `{"type": "integer"}`, `{"type": "number"}`, nil},
		{"type", `{"type": "string"}`, `{"type": ["integer", "null"]}`,
			[]string{"/: the value may be a string, and the schema takes integer or null"}},
		{"any type", `{}`, `{"type": "string"}`, []string{"/: the value may be of any type, and the schema takes string"}},
		{"required", `{"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}, "required": ["a"]}`,
			`{"type": "object", "required": ["b", "c"]}`, []string{
				"/b: the schema requires it, and the value may lack it (it is optional there)",
				"/c: the schema requires it, and the value does not have it"}},
		{"closed", `{"type": "object", "properties": {"a": {"type": "string"}, "x": {"type": "string"}}}`,
			`{"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": false}`,
			[]string{"/x: the value may have it, and the schema admits no other properties than a"}},
		{"additional schema", `{"type": "object", "properties": {"n": {"type": "string"}}}`,
			`{"type": "object", "additionalProperties": {"type": "integer"}}`,
			[]string{"/n: the value may be a string, and the schema takes integer"}},
		{"deep", `{"type": "object", "properties": {"r": {"type": "object", "properties": {"start": {"type": "string"}}}}}`,
			`{"type": "object", "properties": {"r": {"type": "object", "properties": {"start": {"type": "integer"}}}}}`,
			[]string{"/r/start: the value may be a string, and the schema takes integer"}},
		{"items", `{"type": "array", "items": {"type": "string"}}`, `{"type": "array", "items": {"type": "integer"}}`,
			[]string{"/*: the value may be a string, and the schema takes integer"}},
		{"enum into enum", `{"enum": ["a", "b", "c"]}`, `{"enum": ["a", "b"]}`,
			[]string{`/: the value may be "c": value must be one of 'a', 'b'`}},
		{"enum into type", `{"enum": ["a", "b"]}`, `{"type": "string"}`, nil},
		{"any string into enum", `{"type": "string"}`, `{"enum": ["a", "b"]}`,
			[]string{`/: the value may be any string, and the schema takes only "a", "b"`}},
		{"alternatives of have", `{"anyOf": [{"type": "string"}, {"type": "integer"}]}`, `{"type": "string"}`,
			[]string{"/: the value may be an integer, and the schema takes string"}},
		{"alternatives of want", `{"type": "integer"}`, `{"oneOf": [{"type": "string"}, {"type": "integer"}]}`, nil},
		{"no alternative", `{"type": "boolean"}`, `{"anyOf": [{"type": "string"}, {"type": "integer"}]}`,
			[]string{"/: the value fits none of the schema's 2 alternatives (the first: /: the value may be a boolean, and the schema takes string)"}},
		{"false", `{"type": "string"}`, `false`, []string{"/: the schema admits no value here"}},
		{"constraints are left to validation", `{"type": "string"}`, `{"type": "string", "pattern": "^a", "minLength": 3}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			have, err := jsonv.Parse([]byte(tt.have))
			if err != nil {
				t.Fatal(err)
			}
			want, err := jsonv.Parse([]byte(tt.want))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range Fit(have, want) {
				path := string(p.Path)
				if path == "" {
					path = "/"
				}
				got = append(got, path+": "+p.Message)
			}
			if strings.Join(got, "\n") != strings.Join(tt.problems, "\n") {
				t.Errorf("problems\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.problems, "\n"))
			}
		})
	}
}
