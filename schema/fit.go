package schema

import (
	"fmt"
	"slices"
	"strings"

	"github.com/augceo/vibe/jsonv"
)

// Fit tells, from the two schemas alone, whether every value that schema
// have admits also fits schema want — a step's input against what an
// action declares it takes — and returns each way it may not, by instance
// path (an array's items are "/*"); none when it fits.
//
// It is a structural check, not a proof: it compares types, required and
// known properties, closed objects ("additionalProperties": false),
// enumerations and constants (each value of have's enum is validated
// against want), alternatives (anyOf, oneOf) and array items. Constraints
// on values — patterns, bounds, formats — are left to the validation of
// the values themselves, and so are "$ref"s, which Fit does not follow.
func Fit(have, want jsonv.Value) []Invalid {
	var f fitter
	f.fit("", have, want)
	return f.problems
}

type fitter struct{ problems []Invalid }

func (f *fitter) add(at jsonv.Pointer, format string, args ...any) {
	f.problems = append(f.problems, Invalid{Path: at, Message: fmt.Sprintf(format, args...)})
}

func (f *fitter) fit(at jsonv.Pointer, have, want jsonv.Value) {
	if open(want) {
		return
	}
	if want.Kind() == jsonv.KindBool { // false: nothing fits
		f.add(at, "the schema admits no value here")
		return
	}
	if _, ok := have.Get("$ref"); ok {
		return
	}
	if _, ok := want.Get("$ref"); ok {
		return
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		if alts, ok := have.Get(kw); ok {
			for _, alt := range alts.Array() {
				f.fit(at, merged(have, kw, alt), want)
			}
			return
		}
	}
	if all, ok := want.Get("allOf"); ok {
		for _, w := range all.Array() {
			f.fit(at, have, w)
		}
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		if alts, ok := want.Get(kw); ok {
			f.fitOne(at, have, alts.Array())
		}
	}
	// A value have names exactly: validate it.
	if values, ok := known(have); ok {
		for _, v := range values {
			problems, err := Check(want, v)
			if err != nil {
				f.add(at, "the schema cannot be read: %v", err)
				return
			}
			for _, p := range problems {
				f.add(at+p.Path, "the value may be %s: %s", jsonv.Marshal(v), p.Message)
			}
		}
		return
	}
	if values, ok := known(want); ok {
		shown := make([]string, len(values))
		for i, v := range values {
			shown[i] = string(jsonv.Marshal(v))
		}
		f.add(at, "the value may be any %s, and the schema takes only %s", describeTypes(types(have)), strings.Join(shown, ", "))
		return
	}
	wt := types(want)
	if len(wt) > 0 {
		ht := types(have)
		if len(ht) == 0 {
			f.add(at, "the value may be of any type, and the schema takes %s", strings.Join(wt, " or "))
			return
		}
		for _, t := range ht {
			if !slices.Contains(wt, t) && !(t == "integer" && slices.Contains(wt, "number")) {
				f.add(at, "the value may be %s, and the schema takes %s", article(t), strings.Join(wt, " or "))
			}
		}
	}
	f.fitObject(at, have, want)
	if hi, ok := have.Get("items"); ok && hi.Kind() == jsonv.KindObject {
		if wi, ok := want.Get("items"); ok {
			f.fit(at.Append("*"), hi, wi)
		}
	}
}

// fitObject compares the properties of two object schemas.
func (f *fitter) fitObject(at jsonv.Pointer, have, want jsonv.Value) {
	hp, wp := Properties(have), Properties(want)
	hr := Required(have)
	for _, name := range Required(want) {
		switch {
		case slices.Contains(hr, name):
		case hp != nil && hp.Has(name):
			f.add(at.Append(name), "the schema requires it, and the value may lack it (it is optional there)")
		default:
			f.add(at.Append(name), "the schema requires it, and the value does not have it")
		}
	}
	if hp == nil {
		return
	}
	extra, hasExtra := want.Get("additionalProperties")
	for name, hs := range hp.All() {
		if wp != nil {
			if ws, ok := wp.Get(name); ok {
				f.fit(at.Append(name), hs, ws)
				continue
			}
		}
		if _, ok := want.Get("patternProperties"); ok {
			continue // matched by pattern: left to validation
		}
		if hasExtra {
			if extra.Kind() == jsonv.KindBool && !extra.Bool() {
				f.add(at.Append(name), "the value may have it, and the schema admits no other properties than %s", listNames(wp))
				continue
			}
			f.fit(at.Append(name), hs, extra)
		}
	}
}

// fitOne reports unless have fits at least one of the alternatives.
func (f *fitter) fitOne(at jsonv.Pointer, have jsonv.Value, alts []jsonv.Value) {
	var first []Invalid
	for i, alt := range alts {
		var g fitter
		g.fit(at, have, alt)
		if len(g.problems) == 0 {
			return
		}
		if i == 0 {
			first = g.problems
		}
	}
	if len(alts) > 0 {
		f.add(at, "the value fits none of the schema's %d alternatives (the first: %s)", len(alts), (&ValidationError{Problems: first}).Error())
	}
}

// open reports whether a schema admits every value: true, {}, or only
// annotations.
func open(s jsonv.Value) bool {
	switch s.Kind() {
	case jsonv.KindBool:
		return s.Bool()
	case jsonv.KindObject:
	default:
		return true
	}
	for kw := range s.Members() {
		switch kw {
		case "title", "description", "default", "examples", "$comment", "$schema", "$id", "deprecated", "readOnly", "writeOnly":
		default:
			if !IsEngineKeyword(kw) {
				return false
			}
		}
	}
	return true
}

// known returns the values a schema admits when it lists them (enum, const).
func known(s jsonv.Value) ([]jsonv.Value, bool) {
	if c, ok := s.Get("const"); ok {
		return []jsonv.Value{c}, true
	}
	if e, ok := s.Get("enum"); ok && e.Kind() == jsonv.KindArray {
		return e.Array(), true
	}
	return nil, false
}

// types returns the JSON types a schema names in "type".
func types(s jsonv.Value) []string {
	t, ok := s.Get("type")
	if !ok {
		return nil
	}
	if t.Kind() == jsonv.KindString {
		return []string{t.Str()}
	}
	return Strings(t)
}

// merged is alternative alt of keyword kw in s, with s's other keywords.
func merged(s jsonv.Value, kw string, alt jsonv.Value) jsonv.Value {
	if alt.Object() == nil {
		return alt
	}
	out := alt.Object().Clone()
	for name, v := range s.Members() {
		if name != kw && !out.Has(name) {
			out.Set(name, v)
		}
	}
	return out.Value()
}

func describeTypes(ts []string) string {
	if len(ts) == 0 {
		return "value"
	}
	return strings.Join(ts, " or ")
}

func article(t string) string {
	switch t {
	case "array", "object", "integer":
		return "an " + t
	case "null":
		return "null"
	}
	return "a " + t
}

func listNames(props *jsonv.Object) string {
	if props == nil || props.Len() == 0 {
		return "none"
	}
	return strings.Join(props.Names(), ", ")
}
