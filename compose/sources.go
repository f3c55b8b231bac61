package compose

import (
	"slices"
	"strings"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

// Source is where a part of a composed schema comes from: the schema at
// At of the composed document was, before composition, Value, the schema
// at Path of File — a registry document a "$ref" inlined, an allOf's item,
// the instruction of a pipeline's step.
type Source struct {
	At    jsonv.Pointer
	File  string
	Path  jsonv.Pointer
	Value jsonv.Value
	// Within are the sources of Value's own parts, at places relative to
	// At. A part inlined many times shares them.
	Within Sources
}

// Sources are the sources of one composition (Options.Sources). They are
// what lets a problem found in the composed schema — by the compiler, by a
// validator — be told where a person can mend it: in the file they wrote.
type Sources []Source

// Locate returns e, a problem at a place of the composed document doc, at
// the place it comes from: in the file of the deepest source whose schema
// holds the same value there. e itself is returned when no source does —
// the value was made by the composition: merged from two schemas, or
// joined — and when e is located by line and column.
func (s Sources) Locate(doc jsonv.Value, e *schema.Error) *schema.Error {
	if e.Line > 0 {
		return e
	}
	v, err := doc.At(e.Path)
	if err != nil {
		return e
	}
	file, path, ok := s.find(v, e.Path)
	if !ok {
		return e
	}
	located := *e
	located.File, located.Path = file, path
	return &located
}

// find finds where v, at p, comes from: the deepest source under which p
// lies that holds v at the same place.
func (s Sources) find(v jsonv.Value, p jsonv.Pointer) (file string, path jsonv.Pointer, ok bool) {
	depth := -1
	for _, src := range s {
		rest, under := cut(p, src.At)
		if !under || len(src.At) <= depth {
			continue
		}
		if f, in, found := src.Within.find(v, rest); found {
			file, path, ok, depth = f, in, true, len(src.At)
			continue
		}
		if w, err := src.Value.At(rest); err == nil && jsonv.Equal(v, w) {
			file, path, ok, depth = src.File, src.Path+rest, true, len(src.At)
		}
	}
	return file, path, ok
}

// LocateAll is every error of err located (Locate), as an ErrorList; err
// itself when it holds no located errors. Two problems that turn out to
// be one — two steps of one instruction — are told once.
func (s Sources) LocateAll(doc jsonv.Value, err error) error {
	list, ok := err.(schema.ErrorList)
	if !ok || len(s) == 0 {
		return err
	}
	out := make(schema.ErrorList, 0, len(list))
	for _, e := range list {
		e = s.Locate(doc, e)
		if !slices.ContainsFunc(out, func(o *schema.Error) bool { return o.Error() == e.Error() }) {
			out = append(out, e)
		}
	}
	return out
}

// cut returns what of p lies under prefix, when p is prefix or below it.
func cut(p, prefix jsonv.Pointer) (jsonv.Pointer, bool) {
	if p == prefix {
		return "", true
	}
	rest, ok := strings.CutPrefix(string(p), string(prefix)+"/")
	if !ok {
		return "", false
	}
	return jsonv.Pointer("/" + rest), true
}

// at is s placed under to.
func (s Sources) at(to jsonv.Pointer) Sources {
	out := make(Sources, len(s))
	for i, src := range s {
		src.At = to + src.At
		out[i] = src
	}
	return out
}
