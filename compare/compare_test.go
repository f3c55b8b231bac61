package compare

import (
	"strings"
	"testing"

	"github.com/augceo/vibe/jsonv"
)

func parse(t *testing.T, s string) jsonv.Value {
	t.Helper()
	v, err := jsonv.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

const moderate = `{"type": "object", "properties": {
	"_reading": {"type": "string"},
	"sentiment": {"type": "string", "enum": ["positive", "neutral", "negative"]},
	"toxic": {"type": "boolean"},
	"severity": {"type": "integer"},
	"score": {"type": "number"},
	"$confidence": {"type": "number"},
	"reason": {"type": "string"},
	"date": {"type": "string", "format": "date"},
	"tags": {"type": "array", "items": {"type": "string", "enum": ["spam", "abuse"]}}}}`

func TestDiff(t *testing.T) {
	base := `{"_reading": "a", "sentiment": "negative", "toxic": true, "severity": 3, "score": 0.5, "$confidence": 0.9, "reason": "rude", "date": "2026-11-27", "tags": ["abuse"]}`
	tests := []struct {
		name, schema, b string
		want            []string // the paths that differ
	}{
		{"the same", moderate, base, nil},
		{"thinking, metrics and free text set aside", moderate,
			`{"_reading": "b", "sentiment": "negative", "toxic": true, "severity": 3, "score": 0.5, "$confidence": 0.2, "reason": "insulting", "date": "2026-11-27", "tags": ["abuse"]}`, nil},
		{"an enum", moderate, strings.Replace(base, `"negative"`, `"neutral"`, 1), []string{"/sentiment"}},
		{"a boolean and an integer", moderate, strings.NewReplacer(`true`, `false`, `3,`, `4,`).Replace(base), []string{"/toxic", "/severity"}},
		{"a number past a millionth", moderate, strings.Replace(base, `0.5,`, `0.51,`, 1), []string{"/score"}},
		{"a number within a millionth", moderate, strings.Replace(base, `0.5,`, `0.5000000001,`, 1), nil},
		{"a formatted string", moderate, strings.Replace(base, `2026-11-27`, `2026-11-28`, 1), []string{"/date"}},
		{"an array item", moderate, strings.Replace(base, `["abuse"]`, `["spam"]`, 1), []string{"/tags/0"}},
		{"an array's length", moderate, strings.Replace(base, `["abuse"]`, `["abuse", "spam"]`, 1), []string{"/tags"}},
		{"a property one lacks", moderate, strings.Replace(base, `"toxic": true, `, ``, 1), []string{"/toxic"}},
		{"free text with the rule text", `{"type": "object", "properties": {"reason": {"type": "string", "compare": "text"}}}`, `{"reason": "  Rude! "}`, nil},
		{"free text with the rule text, other words", `{"type": "object", "properties": {"reason": {"type": "string", "compare": "text"}}}`, `{"reason": "insulting"}`, []string{"/reason"}},
		{"an enum ignored", `{"type": "object", "properties": {"sentiment": {"enum": ["negative", "neutral"], "compare": "ignore"}}}`, `{"sentiment": "neutral"}`, nil},
		{"a tolerance", `{"type": "object", "properties": {"score": {"type": "number", "compare": 0.1}}}`, `{"score": 0.55}`, nil},
		{"past a tolerance", `{"type": "object", "properties": {"score": {"type": "number", "compare": 0.01}}}`, `{"score": 0.55}`, []string{"/score"}},
		{"an object naming its fields", `{"type": "object", "compare": ["toxic"], "properties": {"sentiment": {"enum": ["negative", "neutral"]}, "toxic": {"type": "boolean"}}}`,
			strings.Replace(base, `"negative"`, `"neutral"`, 1), nil},
	}
	a := parse(t, base)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, b := parse(t, tt.schema), parse(t, tt.b)
			var got []string
			for _, c := range Diff(s, a, b) {
				got = append(got, string(c.Path))
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("Diff = %v, want %v", got, tt.want)
			}
			if Same(s, a, b) != (len(tt.want) == 0) {
				t.Errorf("Same = %v", Same(s, a, b))
			}
		})
	}
	if c := Diff(parse(t, moderate), a, parse(t, strings.Replace(base, `"negative"`, `"neutral"`, 1))); len(c) != 1 || c[0].Before.Str() != "negative" || c[0].After.Str() != "neutral" {
		t.Errorf("the change %+v: want negative → neutral", c)
	}
}

func TestJudged(t *testing.T) {
	for _, tt := range []struct {
		schema string
		want   bool
	}{
		{moderate, true},
		{`{"type": "object", "properties": {"reply": {"type": "string"}, "_why": {"type": "string"}}}`, false},
		{`{"type": "object", "properties": {"reply": {"type": "string", "compare": "text"}}}`, true},
		{`{"type": "object", "properties": {"steps": {"type": "array", "items": {"type": "string"}}}}`, false},
		{`{"type": "object", "properties": {"n": {"type": "integer", "compare": "ignore"}}}`, false},
	} {
		if got := Judged(parse(t, tt.schema)); got != tt.want {
			t.Errorf("Judged(%s) = %v, want %v", tt.schema, got, tt.want)
		}
	}
}
