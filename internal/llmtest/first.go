package llmtest

import (
	"encoding/json"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

// FirstValue answers a request as a model under constrained decoding may:
// with the first value its schema allows (First) — the schema read from
// the request's response_format, as Vibe sends it (or its tool's schema).
func FirstValue(_, body string) string {
	var req wireBody
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		return "{}"
	}
	_, raw := req.schema()
	s, err := jsonv.Parse(raw)
	if err != nil {
		return "{}"
	}
	return string(jsonv.Marshal(First(s)))
}

// First is the first value schema s allows, as a constrained decoder might
// pick it: every property filled, in order; the first enum value, the
// const, the first alternative of anyOf/oneOf and the first listed type;
// the shortest string that matches a pattern (and a format's simplest
// value); the minimum number; arrays of their minimum length, or one item.
// It is what a test uses to check that a schema admits only answers the
// engine accepts.
func First(s jsonv.Value) jsonv.Value { return first(s, s, 0) }

func first(root, s jsonv.Value, depth int) jsonv.Value {
	if depth > 32 {
		return jsonv.NullValue()
	}
	if ref := s.Lookup("$ref").Str(); strings.HasPrefix(ref, "#") {
		if target, err := root.At(jsonv.Pointer(strings.TrimPrefix(ref, "#"))); err == nil {
			return first(root, target, depth+1)
		}
	}
	if c, ok := s.Get("const"); ok {
		return c
	}
	if e := s.Lookup("enum").Array(); len(e) > 0 {
		return e[0]
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		if alts := s.Lookup(kw).Array(); len(alts) > 0 {
			return first(root, alts[0], depth+1)
		}
	}
	typ := s.Lookup("type")
	if typ.Kind() == jsonv.KindArray && typ.Len() > 0 {
		typ = typ.Array()[0]
	}
	kind := typ.Str()
	if kind == "" {
		switch {
		case schema.Properties(s) != nil:
			kind = "object"
		case !s.Lookup("items").IsNull():
			kind = "array"
		}
	}
	switch kind {
	case "object":
		o := jsonv.NewObject(4)
		for name, p := range schema.Properties(s).All() {
			o.Set(name, first(root, p, depth+1))
		}
		return o.Value()
	case "array":
		n, ok := s.Lookup("minItems").Int()
		if !ok || n < 1 {
			n = 1
		}
		if m, ok := s.Lookup("maxItems").Int(); ok && m < n {
			n = m
		}
		items := make([]jsonv.Value, n)
		for i := range items {
			items[i] = first(root, s.Lookup("items"), depth+1)
		}
		return jsonv.ArrayValue(items...)
	case "string":
		return jsonv.StringValue(firstString(s))
	case "integer", "number":
		if m, ok := s.Lookup("minimum").Int(); ok {
			return jsonv.IntValue(m)
		}
		if m, ok := s.Lookup("exclusiveMinimum").Int(); ok {
			return jsonv.IntValue(m + 1)
		}
		return jsonv.IntValue(0)
	case "boolean":
		return jsonv.BoolValue(false)
	case "null":
		return jsonv.NullValue()
	}
	return jsonv.NullValue()
}

// formats are the simplest values of the formats a validator asserts.
var formats = map[string]string{
	"email":     "a@b.co",
	"date-time": "2000-01-01T00:00:00Z",
	"date":      "2000-01-01",
	"time":      "00:00:00Z",
	"uri":       "http://a.co",
	"uuid":      "00000000-0000-0000-0000-000000000000",
	"hostname":  "a.co",
	"ipv4":      "0.0.0.0",
}

func firstString(s jsonv.Value) string {
	if f, ok := formats[s.Lookup("format").Str()]; ok {
		return f
	}
	out := ""
	if p := s.Lookup("pattern").Str(); p != "" {
		out = ShortestMatch(p)
	}
	if n, ok := s.Lookup("minLength").Int(); ok {
		for utf8.RuneCountInString(out) < int(n) {
			out += "a"
		}
	}
	return out
}

// ShortestMatch is the shortest string that matches the regular
// expression pattern (unanchored parts match empty), or "" when it finds
// none. In a character class it takes 'a', else '0', else the first
// printable rune, else the first rune.
func ShortestMatch(pattern string) string {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return ""
	}
	s := shortest(re.Simplify())
	if ok, _ := regexp.MatchString(pattern, s); !ok {
		return ""
	}
	return s
}

func shortest(re *syntax.Regexp) string {
	switch re.Op {
	case syntax.OpLiteral:
		return string(re.Rune)
	case syntax.OpCharClass:
		return string(classRune(re.Rune))
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return "a"
	case syntax.OpCapture:
		return shortest(re.Sub[0])
	case syntax.OpPlus:
		return shortest(re.Sub[0])
	case syntax.OpRepeat:
		return strings.Repeat(shortest(re.Sub[0]), re.Min)
	case syntax.OpConcat:
		var b strings.Builder
		for _, sub := range re.Sub {
			b.WriteString(shortest(sub))
		}
		return b.String()
	case syntax.OpAlternate:
		best := ""
		for i, sub := range re.Sub {
			if s := shortest(sub); i == 0 || len(s) < len(best) {
				best = s
			}
		}
		return best
	}
	return "" // star, quest, anchors, boundaries, empty
}

// classRune picks a rune of a class given as ranges [lo, hi, lo, hi, …].
func classRune(ranges []rune) rune {
	in := func(r rune) bool {
		for i := 0; i+1 < len(ranges); i += 2 {
			if ranges[i] <= r && r <= ranges[i+1] {
				return true
			}
		}
		return false
	}
	for _, r := range []rune{'a', '0'} {
		if in(r) {
			return r
		}
	}
	for i := 0; i+1 < len(ranges); i += 2 {
		if ranges[i+1] >= 0x21 {
			return max(ranges[i], 0x21)
		}
	}
	if len(ranges) > 0 {
		return ranges[0]
	}
	return 'a'
}
