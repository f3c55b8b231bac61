package compose

import (
	"errors"
	"path"
	"slices"
	"strings"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/schema"
)

// Options configures Flatten, Pipeline and Toolset. The zero value resolves
// local references only.
type Options struct {
	// Registry resolves "aug:" references and instruction names.
	Registry *registry.Registry
}

// Flatten resolves every "$ref" in doc and folds every "allOf", giving one
// plain schema (see the package documentation for the rules). file names
// doc in errors. Definitions ("$defs") are inlined where referenced and not
// kept. doc is not changed.
//
// All problems are reported together as a schema.ErrorList, each naming the
// file and JSON path where it is.
func Flatten(file string, doc jsonv.Value, opts Options) (jsonv.Value, error) {
	f := newFlattener(opts)
	out := f.flatten(&base{file: file, root: doc}, "", doc)
	if err := f.errs.Err(); err != nil {
		return jsonv.Value{}, err
	}
	return out, nil
}

// FlattenURI flattens what a registry URI names: a whole document or, with
// a fragment, a part of it (aug:processes/schedule-meeting:1#fetchAvailability),
// resolving local references against the whole document. The root-only
// keywords $schema, $id and $anchor are dropped.
func FlattenURI(uri string, opts Options) (jsonv.Value, error) {
	f := newFlattener(opts)
	out := f.ref(&base{file: uri}, "", jsonv.StringValue(uri))
	if err := f.errs.Err(); err != nil {
		return jsonv.Value{}, err
	}
	return out, nil
}

// base is the document that local references ("#/…", "#name") resolve in.
type base struct {
	file string      // names the document in errors
	uri  string      // its registry URI, or "" for the input document
	root jsonv.Value // the whole document
}

type flattener struct {
	reg   *registry.Registry
	errs  schema.ErrorList
	bases map[string]*base    // registry documents by URI
	stack []string            // the "$ref" targets being flattened, outermost first
	memo  map[string]memoized // flattened "$ref" targets by "uri#pointer"
	size  int                 // values inlined so far, to stop a schema that expands exponentially
	big   bool                // the size error was reported
}

type memoized struct {
	v    jsonv.Value
	size int // the number of values in v
}

// MaxInlined bounds the values "$ref"s may inline into one composed schema.
// Each reference is resolved once, but a schema whose every level refers
// twice to the one below (the "billion laughs" shape) still doubles per
// level; past this bound composing stops with an error instead of eating
// the machine's memory.
const MaxInlined = 1 << 20

func newFlattener(opts Options) *flattener {
	return &flattener{
		reg:   opts.Registry,
		bases: make(map[string]*base),
		memo:  make(map[string]memoized),
	}
}

// Annotation keywords describe a schema without constraining instances. A
// mixin's annotations describe the mixin and are dropped; between merged
// allOf items a later annotation replaces an earlier one.
var annotations = map[string]bool{
	"title": true, "description": true, "$comment": true, "examples": true,
	"deprecated": true, "readOnly": true, "writeOnly": true, "default": true,
	"$schema": true, "$id": true, "$anchor": true,
}

// resourceKeywords only make sense at a document's root and are dropped
// from an inlined "$ref" target.
var resourceKeywords = []string{"$schema", "$id", "$anchor"}

const slot = "default" // the mixin slot: a property of this name

// flatten returns a plain copy of schema s found at pointer at of b.
func (f *flattener) flatten(b *base, at jsonv.Pointer, s jsonv.Value) jsonv.Value {
	obj := s.Object()
	if obj == nil {
		return s // a boolean schema, or data that is not a schema
	}
	own := jsonv.NewObject(obj.Len())
	var inherited jsonv.Value // what "$ref" and "allOf" contribute
	hasBase := false
	for _, m := range obj.Members() {
		switch m.Name {
		case "$ref":
			target := f.ref(b, at.Append("$ref"), m.Value)
			inherited, hasBase = f.combine(inherited, hasBase, target, b, at), true
		case "allOf":
			folded := f.allOf(b, at.Append("allOf"), m.Value)
			inherited, hasBase = f.combine(inherited, hasBase, folded, b, at), true
		case "$defs", "definitions":
			// Inlined where referenced.
		default:
			own.Set(m.Name, f.keyword(b, at, m.Name, m.Value))
		}
	}
	if !hasBase {
		return own.Value()
	}
	return f.overlay(b, at, obj, own, inherited)
}

// combine merges what a "$ref" and an "allOf" of one schema contribute.
func (f *flattener) combine(prev jsonv.Value, has bool, next jsonv.Value, b *base, at jsonv.Pointer) jsonv.Value {
	if !has {
		return next
	}
	a := newAcc(prev, b.file+"#"+string(at)+"/$ref")
	f.mergeItem(a, next, b.file+"#"+string(at)+"/allOf", b, at)
	return a.obj.Value()
}

// keyword returns a keyword's value with the subschemas inside it flattened.
func (f *flattener) keyword(b *base, at jsonv.Pointer, kw string, v jsonv.Value) jsonv.Value {
	switch schema.KeywordShape(kw) {
	case schema.SchemaValue:
		if kw == "items" && v.Kind() == jsonv.KindArray {
			return f.array(b, at.Append(kw), v)
		}
		return f.flatten(b, at.Append(kw), v)
	case schema.SchemaMap:
		if v.Object() == nil {
			f.errs.Add(b.file, at.Append(kw), "%q must be an object of schemas, not %s", kw, article(v.Kind()))
			return v
		}
		out := jsonv.NewObject(v.Len())
		for name, sub := range v.Members() {
			out.Set(name, f.flatten(b, at.Append(kw).Append(name), sub))
		}
		return out.Value()
	case schema.SchemaArray:
		if v.Kind() != jsonv.KindArray {
			f.errs.Add(b.file, at.Append(kw), "%q must be an array of schemas, not %s", kw, article(v.Kind()))
			return v
		}
		return f.array(b, at.Append(kw), v)
	}
	return v
}

func (f *flattener) array(b *base, at jsonv.Pointer, v jsonv.Value) jsonv.Value {
	out := make([]jsonv.Value, v.Len())
	for i, e := range v.Array() {
		out[i] = f.flatten(b, at.AppendIndex(i), e)
	}
	return jsonv.ArrayValue(out...)
}

// overlay lays a schema's own keywords over what its "$ref" and "allOf"
// contribute. Keys keep the order they are written in, the inherited ones
// spliced in where the "$ref" or "allOf" stands; a key both have stays at
// its first place. Own keywords win, except that descriptions are joined
// (the inherited one first, then a newline), properties are merged by name
// and required lists are joined.
func (f *flattener) overlay(b *base, at jsonv.Pointer, parent, own *jsonv.Object, inherited jsonv.Value) jsonv.Value {
	res := jsonv.NewObject(own.Len() + inherited.Len())
	put := func(name string, ownV jsonv.Value, hasOwn bool) {
		inhV, hasInh := inherited.Get(name)
		switch {
		case !hasInh:
			res.Set(name, ownV)
		case !hasOwn:
			res.Set(name, inhV)
		default:
			res.Set(name, f.join(b, at, name, inhV, ownV))
		}
	}
	spliced := false
	for _, m := range parent.Members() {
		switch m.Name {
		case "$ref", "allOf":
			if spliced {
				continue
			}
			spliced = true
			for name := range inherited.Members() {
				if !res.Has(name) {
					ownV, hasOwn := own.Get(name)
					put(name, ownV, hasOwn)
				}
			}
		default:
			ownV, hasOwn := own.Get(m.Name)
			if hasOwn && !res.Has(m.Name) {
				put(m.Name, ownV, true)
			}
		}
	}
	return res.Value()
}

// join combines an inherited and an own value of one keyword.
func (f *flattener) join(b *base, at jsonv.Pointer, kw string, inh, own jsonv.Value) jsonv.Value {
	switch kw {
	case "description":
		return joinDescriptions(inh, own)
	case "required":
		return schema.StringArray(union(schema.Strings(inh), schema.Strings(own)))
	case "properties":
		if inh.Object() == nil || own.Object() == nil {
			return own
		}
		a := newAcc(jsonv.ObjectValue(jsonv.Member{Name: "properties", Value: inh}), b.file+"#"+string(at)+"/$ref")
		f.mergeProperties(a, own.Object(), b.file+"#"+string(at), b, at)
		return a.obj.Value().Lookup("properties")
	}
	return own
}

func joinDescriptions(first, second jsonv.Value) jsonv.Value {
	a, b := first.Str(), second.Str()
	switch {
	case first.Kind() != jsonv.KindString || a == "":
		return second
	case second.Kind() != jsonv.KindString || b == "" || a == b:
		return first
	}
	return jsonv.StringValue(a + "\n" + b)
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// ref returns the flattened target of a "$ref" at pointer at of b.
func (f *flattener) ref(b *base, at jsonv.Pointer, v jsonv.Value) jsonv.Value {
	empty := jsonv.NewObject(0).Value()
	tb, ptr, target, ok := f.resolve(b, at, v)
	if !ok {
		return empty
	}
	key := tb.file
	if tb.uri != "" {
		key = tb.uri
	}
	if ptr != "" {
		key += "#" + string(ptr)
	}
	if i := slices.Index(f.stack, key); i >= 0 {
		chain := append(slices.Clone(f.stack[i:]), key)
		f.errs.Add(b.file, at, "$ref cycle: %s", strings.Join(chain, " → "))
		return empty
	}
	done, ok := f.memo[key]
	if !ok {
		f.stack = append(f.stack, key)
		out := f.flatten(tb, ptr, target)
		f.stack = f.stack[:len(f.stack)-1]
		if o := out.Object(); o != nil {
			for _, kw := range resourceKeywords {
				o.Delete(kw)
			}
		}
		done = memoized{v: out, size: count(out)}
		f.memo[key] = done
	}
	if f.size += done.size; f.size > MaxInlined {
		if !f.big {
			f.big = true
			f.errs.Add(b.file, at, "$ref %s makes the composed schema too large: over %d values inlined (a schema that refers to the same part many times at every level?)", show(v), MaxInlined)
		}
		return empty
	}
	return done.v.Clone()
}

// count returns the number of values in v.
func count(v jsonv.Value) int {
	n := 0
	jsonv.Walk(v, func(jsonv.Pointer, jsonv.Value) error {
		n++
		return nil
	})
	return n
}

// resolve finds what a "$ref" value names: the document it is in, where in
// it, and the value. It reports an error and returns ok == false when
// nothing is found.
func (f *flattener) resolve(b *base, at jsonv.Pointer, v jsonv.Value) (tb *base, ptr jsonv.Pointer, target jsonv.Value, ok bool) {
	if v.Kind() != jsonv.KindString {
		f.errs.Add(b.file, at, "$ref must be a string, not %s", article(v.Kind()))
		return nil, "", jsonv.Value{}, false
	}
	ref := v.Str()
	switch {
	case strings.HasPrefix(ref, "#"):
		p, err := registry.Fragment(b.root, ref[1:])
		if err != nil {
			f.errs.Add(b.file, at, "unknown $ref %q: %v", ref, trimNotFound(err))
			return nil, "", jsonv.Value{}, false
		}
		t, _ := b.root.At(p)
		return b, p, t, true
	case registry.IsURI(ref):
		if f.reg == nil {
			f.errs.Add(b.file, at, "cannot resolve $ref %q: %w", ref, registry.ErrNoRegistry)
			return nil, "", jsonv.Value{}, false
		}
		t, err := f.reg.Resolve(ref)
		if err != nil {
			var located *schema.Error
			if errors.As(err, &located) { // the target file itself is malformed
				f.errs = append(f.errs, located)
				f.errs.Add(b.file, at, "cannot resolve $ref %q: %s is malformed", ref, located.File)
			} else {
				f.errs.Add(b.file, at, "unknown $ref %q: %v%s", ref, trimNotFound(err), f.suggestDocument(ref))
			}
			return nil, "", jsonv.Value{}, false
		}
		uri := t.Document.URI.String()
		tb, ok := f.bases[uri]
		if !ok {
			tb = &base{file: t.Document.File, uri: uri, root: t.Document.Value}
			f.bases[uri] = tb
		}
		return tb, t.Pointer, t.Value, true
	}
	f.errs.Add(b.file, at, "unsupported $ref %q: only local references (\"#/pointer\", \"#name\") and registry URIs (\"aug:path[:version][#fragment]\") are resolved", ref)
	return nil, "", jsonv.Value{}, false
}

// suggestDocument proposes registry documents near a URI that named none.
func (f *flattener) suggestDocument(ref string) string {
	u, err := registry.ParseURI(ref)
	if err != nil {
		return ""
	}
	latest := uriWithoutVersion(u)
	if _, err := f.reg.Document(latest); err == nil {
		return "" // the document exists: a version or the fragment is what failed
	}
	folder := path.Dir(u.Path)
	if folder == "." {
		folder = ""
	}
	s := Suggest(path.Base(u.Path), f.reg.Names(folder), 3)
	if len(s) == 0 {
		return ""
	}
	for i := range s {
		s[i] = registry.Scheme + ":" + path.Join(folder, s[i])
	}
	return "; did you mean " + strings.Join(s, ", ") + "?"
}

// uriWithoutVersion returns u's document URI for its latest version.
func uriWithoutVersion(u registry.URI) string {
	u.Version, u.Fragment = 0, ""
	return u.String()
}

// trimNotFound drops the ": not found" that registry.ErrNotFound adds.
func trimNotFound(err error) string {
	s := err.Error()
	for _, suffix := range []string{": " + registry.ErrNotFound.Error(), ": " + jsonv.ErrNotFound.Error()} {
		s = strings.TrimSuffix(s, suffix)
	}
	return s
}

// source names where an allOf item comes from, for messages that name two
// sources: the "$ref" as written, or the item's own place.
func source(b *base, at jsonv.Pointer, item jsonv.Value) string {
	if ref, ok := item.Get("$ref"); ok && ref.Kind() == jsonv.KindString {
		if r := ref.Str(); !strings.Contains(r, "#") {
			return r + "#"
		} else if !strings.HasPrefix(r, "#") {
			return r
		}
	}
	return b.file + "#" + string(at)
}

// article names a JSON kind with its article: "an object", "a string".
func article(k jsonv.Kind) string {
	switch k {
	case jsonv.KindArray, jsonv.KindObject:
		return "an " + k.String()
	case jsonv.KindNull:
		return "null"
	}
	return "a " + k.String()
}

// show prints a value in an error message: JSON, cut short when long.
func show(v jsonv.Value) string {
	s := string(jsonv.Marshal(v))
	if r := []rune(s); len(r) > 80 {
		s = string(r[:77]) + "…"
	}
	return s
}
