package schema

import (
	"github.com/augceo/vibe/jsonv"
)

// Keywords whose value is a subschema, a map of name → subschema, or an
// array of subschemas (draft 2020-12, plus draft-7's "definitions" and
// "additionalItems" which authors still write).
var (
	schemaKeywords = map[string]bool{
		"items": true, "additionalProperties": true, "not": true, "if": true, "then": true,
		"else": true, "contains": true, "propertyNames": true, "unevaluatedItems": true,
		"unevaluatedProperties": true, "contentSchema": true, "additionalItems": true,
	}
	schemaMapKeywords = map[string]bool{
		"properties": true, "patternProperties": true, "$defs": true, "definitions": true,
		"dependentSchemas": true,
	}
	schemaArrayKeywords = map[string]bool{
		"allOf": true, "anyOf": true, "oneOf": true, "prefixItems": true,
	}
)

// Shape says how a keyword's value holds subschemas.
type Shape uint8

// The shapes of keyword values.
const (
	NotSchema   Shape = iota // data: const, enum, default, type, unknown keywords
	SchemaValue              // one subschema: items, not, if, additionalProperties, …
	SchemaMap                // name → subschema: properties, $defs, patternProperties, …
	SchemaArray              // a list of subschemas: allOf, anyOf, oneOf, prefixItems
)

// KeywordShape returns the shape of keyword kw's value.
func KeywordShape(kw string) Shape {
	switch {
	case schemaKeywords[kw]:
		return SchemaValue
	case schemaMapKeywords[kw]:
		return SchemaMap
	case schemaArrayKeywords[kw]:
		return SchemaArray
	}
	return NotSchema
}

// Subschemas iterates over the direct subschemas of s, in document order,
// with the pointer of each relative to s. Values of other keywords (const,
// enum, default, examples, and unknown keywords) are data, not schemas, and
// are not visited.
func Subschemas(s jsonv.Value, yield func(p jsonv.Pointer, sub jsonv.Value) bool) {
	for kw, v := range s.Members() {
		switch {
		case schemaKeywords[kw]:
			if kw == "items" && v.Kind() == jsonv.KindArray { // draft-7 tuple form
				for i, e := range v.Array() {
					if !yield(jsonv.PointerTo(kw).AppendIndex(i), e) {
						return
					}
				}
				continue
			}
			if !yield(jsonv.PointerTo(kw), v) {
				return
			}
		case schemaMapKeywords[kw]:
			for name, sub := range v.Members() {
				if !yield(jsonv.PointerTo(kw, name), sub) {
					return
				}
			}
		case schemaArrayKeywords[kw]:
			for i, sub := range v.Array() {
				if !yield(jsonv.PointerTo(kw).AppendIndex(i), sub) {
					return
				}
			}
		}
	}
}

// Walk calls fn for s and every subschema inside it, depth first in
// document order, with pointers relative to s. Returning
// jsonv.SkipChildren skips a subschema's own subschemas; any other error
// stops the walk and is returned.
func Walk(s jsonv.Value, fn func(p jsonv.Pointer, s jsonv.Value) error) error {
	err := walk("", s, fn)
	if err == jsonv.SkipChildren {
		return nil
	}
	return err
}

func walk(at jsonv.Pointer, s jsonv.Value, fn func(jsonv.Pointer, jsonv.Value) error) error {
	if err := fn(at, s); err != nil {
		return err
	}
	var err error
	Subschemas(s, func(p jsonv.Pointer, sub jsonv.Value) bool {
		if e := walk(at+p, sub, fn); e != nil && e != jsonv.SkipChildren {
			err = e
			return false
		}
		return true
	})
	return err
}

// Properties returns the "properties" object of s, or nil.
func Properties(s jsonv.Value) *jsonv.Object {
	return s.Lookup("properties").Object()
}

// Required returns the names s lists in "required" (strings only).
func Required(s jsonv.Value) []string {
	return Strings(s.Lookup("required"))
}

// Strings returns the strings of a JSON array, skipping other elements.
func Strings(arr jsonv.Value) []string {
	var ss []string
	for _, v := range arr.Array() {
		if v.Kind() == jsonv.KindString {
			ss = append(ss, v.Str())
		}
	}
	return ss
}

// StringArray returns a JSON array of the given strings.
func StringArray(ss []string) jsonv.Value {
	vs := make([]jsonv.Value, len(ss))
	for i, s := range ss {
		vs[i] = jsonv.StringValue(s)
	}
	return jsonv.ArrayValue(vs...)
}
