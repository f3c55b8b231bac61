package compare

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

// Keyword is the schema keyword that chooses how a field is compared.
const Keyword = "compare"

// The rules of Keyword on a property.
const (
	Exact  = "exact"
	Text   = "text"
	Ignore = "ignore"
)

// Change is a field whose two answers differ: its path (in the answer)
// and its value in each; a value an answer lacks is null.
type Change struct {
	Path   jsonv.Pointer `json:"path"`
	Before jsonv.Value   `json:"before"`
	After  jsonv.Value   `json:"after"`
}

// Diff returns the fields of s where a and b differ, by s's rules, in the
// schema's order; none when they are the same answer.
func Diff(s, a, b jsonv.Value) []Change {
	var out []Change
	diff(s, "", a, b, &out)
	return out
}

// Same reports whether a and b are the same answer to s (Diff is empty).
func Same(s, a, b jsonv.Value) bool { return len(Diff(s, a, b)) == 0 }

// Judged reports whether s compares anything: a schema whose only fields
// are free text with no rule cannot tell two answers apart, and
// calibration says so instead of judging.
func Judged(s jsonv.Value) bool {
	switch rule(s) {
	case Ignore:
		return false
	case Exact, Text, "tolerance":
		return true
	}
	if props := schema.Properties(s); props != nil {
		for name, p := range props.All() {
			if compared(s, name, p) && Judged(p) {
				return true
			}
		}
		return false
	}
	if items, ok := s.Get("items"); ok {
		return Judged(items)
	}
	return structured(s)
}

func diff(s jsonv.Value, at jsonv.Pointer, a, b jsonv.Value, out *[]Change) {
	change := func() { *out = append(*out, Change{Path: at, Before: orNull(a), After: orNull(b)}) }
	switch r := rule(s); r {
	case Ignore:
		return
	case Exact:
		if !jsonv.Equal(a, b) {
			change()
		}
		return
	case Text:
		if a.Kind() != jsonv.KindString || b.Kind() != jsonv.KindString {
			if !jsonv.Equal(a, b) {
				change()
			}
		} else if normal(a.Str()) != normal(b.Str()) {
			change()
		}
		return
	case "tolerance":
		tol, _ := s.Lookup(Keyword).Float()
		if !near(a, b, tol) {
			change()
		}
		return
	}
	if props := schema.Properties(s); props != nil && (a.Object() != nil || b.Object() != nil) {
		if a.Object() == nil || b.Object() == nil {
			change()
			return
		}
		for name, p := range props.All() {
			if !compared(s, name, p) {
				continue
			}
			av, aok := a.Get(name)
			bv, bok := b.Get(name)
			switch {
			case !aok && !bok:
			case aok != bok:
				*out = append(*out, Change{Path: at + jsonv.PointerTo(name), Before: orNull(av), After: orNull(bv)})
			default:
				diff(p, at+jsonv.PointerTo(name), av, bv, out)
			}
		}
		return
	}
	if items, ok := s.Get("items"); ok && (a.Kind() == jsonv.KindArray || b.Kind() == jsonv.KindArray) {
		if a.Kind() != jsonv.KindArray || b.Kind() != jsonv.KindArray || a.Len() != b.Len() {
			if Judged(items) {
				change()
			}
			return
		}
		for i := range a.Array() {
			diff(items, at+jsonv.PointerTo(fmt.Sprint(i)), a.Array()[i], b.Array()[i], out)
		}
		return
	}
	switch {
	case !structured(s):
		return // free text
	case a.Kind() == jsonv.KindNumber && b.Kind() == jsonv.KindNumber && !integer(s):
		if !near(a, b, 0) {
			change()
		}
	case !jsonv.Equal(a, b):
		change()
	}
}

// rule is the compare keyword of s: Exact, Text, Ignore, "tolerance" for a
// number, or "" for none (or for an array of names, which compared reads).
func rule(s jsonv.Value) string {
	v, ok := s.Get(Keyword)
	switch {
	case !ok:
		return ""
	case v.Kind() == jsonv.KindNumber:
		return "tolerance"
	case v.Kind() == jsonv.KindString:
		return v.Str()
	case v.Kind() == jsonv.KindBool && !v.Bool():
		return Ignore
	case v.Kind() == jsonv.KindBool:
		return Exact
	}
	return ""
}

// compared reports whether property name (schema p) of object schema s is
// compared: those the object names when it names some, else all but the
// thinking fields and metrics, unless the property's own rule says.
func compared(s jsonv.Value, name string, p jsonv.Value) bool {
	if names, ok := s.Get(Keyword); ok && names.Kind() == jsonv.KindArray {
		return slices.ContainsFunc(names.Array(), func(n jsonv.Value) bool { return n.Str() == name })
	}
	if r := rule(p); r != "" {
		return r != Ignore
	}
	return !schema.IsThinking(name) && !schema.IsMetric(name)
}

// structured reports whether a leaf schema's value is one of a known set,
// or of a shape, rather than free text.
func structured(s jsonv.Value) bool {
	for _, kw := range []string{"enum", "const", "pattern", "format"} {
		if _, ok := s.Get(kw); ok {
			return true
		}
	}
	switch t := s.Lookup("type"); t.Kind() {
	case jsonv.KindString:
		return t.Str() != "string" && t.Str() != ""
	case jsonv.KindArray:
		for _, e := range t.Array() {
			if e.Str() == "string" {
				return false
			}
		}
		return t.Len() > 0
	}
	return false // no type: anything, as free as text
}

// integer reports whether s's type is integer.
func integer(s jsonv.Value) bool { return s.Lookup("type").Str() == "integer" }

// near reports whether two numbers are within tol, or, with no tol, within
// a millionth of the larger; anything else must be equal.
func near(a, b jsonv.Value, tol float64) bool {
	x, aok := a.Float()
	y, bok := b.Float()
	if !aok || !bok {
		return jsonv.Equal(a, b)
	}
	if tol <= 0 {
		tol = 1e-6 * math.Max(math.Abs(x), math.Abs(y))
	}
	return math.Abs(x-y) <= tol
}

// normal is text with its case, and the spaces and punctuation at its
// ends, set aside, and its inner runs of space made one.
func normal(s string) string {
	s = strings.TrimFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsPunct(r) })
	return strings.ToLower(strings.Join(strings.Fields(s), " "))
}

// orNull is v, or null for the zero Value of a member not there.
func orNull(v jsonv.Value) jsonv.Value {
	if v.IsNull() {
		return jsonv.NullValue()
	}
	return v
}
