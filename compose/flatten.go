package compose

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/schema"
)

// Options configures Flatten, Pipeline and Toolset. The zero value resolves
// local references only, within the default bounds.
type Options struct {
	// Registry resolves "aug:" references and instruction names.
	Registry *registry.Registry
	// MaxSteps bounds a pipeline's steps; 0 means MaxSteps.
	MaxSteps int
	// MaxInlined bounds the values one composition inlines; 0 means
	// MaxInlined.
	MaxInlined int
	// Sources, when set, receives where the parts of the composed schema
	// come from: what a "$ref" inlined, what an allOf merged, the
	// instruction of each step of a pipeline.
	Sources *Sources
}

// Bounds on one composition. Each stops work that grows with its input —
// or faster — with an error, before it takes the machine's memory or time.
const (
	// MaxSteps bounds a pipeline's steps: 1,000. The seeds' pipelines have
	// a handful; a thousand steps is already a process no person reviews,
	// while a 40 KB request can hold ten thousand.
	MaxSteps = 1000
	// MaxInlined bounds the values one composition may inline: by "$ref"s
	// into one schema, or as the instructions of a pipeline's steps,
	// 1,048,576 (like schema.MaxValues for a document read). Each reference
	// is resolved once, but a schema whose every level refers twice to the
	// one below (the "billion laughs" shape) still doubles per level; past
	// this bound composing stops with an error instead of eating the
	// machine's memory.
	MaxInlined = 1 << 20
)

func (o Options) maxSteps() int   { return cmp.Or(max(o.MaxSteps, 0), MaxSteps) }
func (o Options) maxInlined() int { return cmp.Or(max(o.MaxInlined, 0), MaxInlined) }

// Flatten resolves every "$ref" in doc and folds every "allOf", giving one
// plain schema (see the package documentation for the rules). file names
// doc in errors; doc must be a schema object. Definitions ("$defs") are
// inlined where referenced and not kept. doc is not changed.
//
// All problems are reported together as a schema.ErrorList, each naming the
// file and JSON path where it is. When ctx ends first, the error wraps its
// cause (context.Cause).
func Flatten(ctx context.Context, file string, doc jsonv.Value, opts Options) (jsonv.Value, error) {
	f := newFlattener(ctx, opts)
	if doc.Object() == nil {
		f.errs.Add(file, "", "the document must be a schema: a JSON object {\"type\": …, \"properties\": …}, not %s", article(doc.Kind()))
		return jsonv.Value{}, f.errs
	}
	out := f.flatten(&base{file: file, root: doc}, "", "", doc)
	if err := f.err(file); err != nil {
		return jsonv.Value{}, err
	}
	f.report(opts)
	return out, nil
}

// FlattenURI flattens what a registry URI names: a whole document or, with
// a fragment, a part of it (aug:processes/schedule-meeting:1#fetchAvailability),
// resolving local references against the whole document. What it names
// must be a schema object. The root-only keywords $schema, $id and $anchor
// are dropped.
func FlattenURI(ctx context.Context, uri string, opts Options) (jsonv.Value, error) {
	f := newFlattener(ctx, opts)
	b := &base{file: uri}
	if r := f.resolve(b, jsonv.StringValue(uri)); r.msg == "" && r.target.Object() == nil {
		f.errs.Add(r.b.file, r.ptr, "%s names %s, not a schema object", uri, article(r.target.Kind()))
		return jsonv.Value{}, f.errs
	}
	out := f.ref(b, "", "", jsonv.StringValue(uri))
	if err := f.err(uri); err != nil {
		return jsonv.Value{}, err
	}
	f.report(opts)
	return out, nil
}

// ended returns the error for work on file that ctx ended: its cause
// (context.Cause), wrapped.
func ended(ctx context.Context, file string) error {
	return fmt.Errorf("composing %s stopped: %w", file, context.Cause(ctx))
}

// base is the document that local references ("#/…", "#name") resolve in.
type base struct {
	file string      // names the document in errors
	uri  string      // its registry URI, or "" for the input document
	root jsonv.Value // the whole document
}

type flattener struct {
	ctx      context.Context
	reg      *registry.Registry
	errs     schema.ErrorList
	bases    map[string]*base    // registry documents by URI
	stack    []string            // the "$ref" targets being flattened, outermost first
	memo     map[string]memoized // flattened "$ref" targets by "uri#pointer"
	resolved map[refKey]resolved // what each "$ref" written in a document names
	size     int                 // values inlined so far, to stop a schema that expands exponentially
	limit    int                 // the bound on size
	big      bool                // the size error was reported
	visits   int                 // schemas visited, to look at ctx now and then
	stopped  bool                // ctx ended: stop walking
	// sources are where the parts of the schema being flattened come
	// from, at places relative to base, its place in the output; kept
	// when Options.Sources asks for them (trace).
	sources Sources
	base    jsonv.Pointer
	trace   bool
}

type memoized struct {
	v    jsonv.Value
	size int // the number of values in v
	// sources are those of v, at places within it, shared by every
	// "$ref" that inlines v.
	sources Sources
}

// refKey is a "$ref" as written in a document: resolving "#name" walks the
// whole document, so a document that refers to one step many times would
// cost its size squared without the cache.
type refKey struct {
	b   *base
	ref string
}

// resolved is what a "$ref" names, or why it names nothing.
type resolved struct {
	b      *base
	ptr    jsonv.Pointer
	target jsonv.Value
	errs   []*schema.Error // located in the target's file: it is malformed
	msg    string          // the problem, reported where the "$ref" is; "" when found
	cause  error           // what msg wraps, if anything
}

// checkEvery is how many schemas the flattener visits between two looks at
// its context: often enough to stop within a millisecond, rarely enough to
// cost nothing.
const checkEvery = 256

func newFlattener(ctx context.Context, opts Options) *flattener {
	return &flattener{
		ctx:      ctx,
		reg:      opts.Registry,
		bases:    make(map[string]*base),
		memo:     make(map[string]memoized),
		resolved: make(map[refKey]resolved),
		limit:    opts.maxInlined(),
		stopped:  ctx.Err() != nil,
		trace:    opts.Sources != nil,
	}
}

// source notes that the output at to comes from raw, the schema at at of
// b, whose own parts come from within.
func (f *flattener) source(to jsonv.Pointer, b *base, at jsonv.Pointer, raw jsonv.Value, within Sources) {
	if f.trace {
		rel, _ := cut(to, f.base)
		f.sources = append(f.sources, Source{At: rel, File: b.file, Path: at, Value: raw, Within: within})
	}
}

// report gives the sources found to Options.Sources.
func (f *flattener) report(opts Options) {
	if opts.Sources != nil {
		*opts.Sources = append(*opts.Sources, f.sources...)
	}
}

// err is the outcome of a flattening of file: the context's end, or the
// errors found, or nil.
func (f *flattener) err(file string) error {
	if f.stopped {
		return ended(f.ctx, file)
	}
	return f.errs.Err()
}

// alive counts a visit and reports whether to go on: false once the
// context has ended.
func (f *flattener) alive() bool {
	if f.stopped {
		return false
	}
	if f.visits++; f.visits%checkEvery == 0 && f.ctx.Err() != nil {
		f.stopped = true
	}
	return !f.stopped
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

// flatten returns a plain copy of schema s found at pointer at of b, to go
// at pointer to of the output.
func (f *flattener) flatten(b *base, at, to jsonv.Pointer, s jsonv.Value) jsonv.Value {
	obj := s.Object()
	if obj == nil || !f.alive() {
		return s // a boolean schema, or data that is not a schema
	}
	own := jsonv.NewObject(obj.Len())
	var inherited jsonv.Value // what "$ref" and "allOf" contribute
	hasBase := false
	for _, m := range obj.Members() {
		switch m.Name {
		case "$ref":
			target := f.ref(b, at.Append("$ref"), to, m.Value)
			inherited, hasBase = f.combine(inherited, hasBase, target, b, at), true
		case "allOf":
			folded := f.allOf(b, at.Append("allOf"), to, m.Value)
			inherited, hasBase = f.combine(inherited, hasBase, folded, b, at), true
		case "$defs", "definitions":
			// Inlined where referenced.
		default:
			own.Set(m.Name, f.keyword(b, at, to, m.Name, m.Value))
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
func (f *flattener) keyword(b *base, at, to jsonv.Pointer, kw string, v jsonv.Value) jsonv.Value {
	switch schema.KeywordShape(kw) {
	case schema.SchemaValue:
		if kw == "items" && v.Kind() == jsonv.KindArray {
			return f.array(b, at.Append(kw), to.Append(kw), v)
		}
		return f.flatten(b, at.Append(kw), to.Append(kw), v)
	case schema.SchemaMap:
		if v.Object() == nil {
			f.errs.Add(b.file, at.Append(kw), "%q must be an object of schemas, not %s", kw, article(v.Kind()))
			return v
		}
		out := jsonv.NewObject(v.Len())
		for name, sub := range v.Members() {
			out.Set(name, f.flatten(b, at.Append(kw).Append(name), to.Append(kw).Append(name), sub))
		}
		return out.Value()
	case schema.SchemaArray:
		if v.Kind() != jsonv.KindArray {
			f.errs.Add(b.file, at.Append(kw), "%q must be an array of schemas, not %s", kw, article(v.Kind()))
			return v
		}
		return f.array(b, at.Append(kw), to.Append(kw), v)
	}
	return v
}

func (f *flattener) array(b *base, at, to jsonv.Pointer, v jsonv.Value) jsonv.Value {
	out := make([]jsonv.Value, v.Len())
	for i, e := range v.Array() {
		out[i] = f.flatten(b, at.AppendIndex(i), to.AppendIndex(i), e)
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

// union is a followed by the strings of b it does not hold, in order.
func union(a, b []string) []string {
	out := slices.Clone(a)
	seen := make(map[string]bool, len(a)+len(b))
	for _, s := range a {
		seen[s] = true
	}
	for _, s := range b {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// ref returns the flattened target of a "$ref" at pointer at of b, to go
// at pointer to of the output.
func (f *flattener) ref(b *base, at, to jsonv.Pointer, v jsonv.Value) jsonv.Value {
	empty := jsonv.NewObject(0).Value()
	r := f.resolve(b, v)
	if r.msg != "" {
		f.errs = append(f.errs, r.errs...)
		f.errs = append(f.errs, &schema.Error{File: b.file, Path: at, Message: r.msg, Err: r.cause})
		return empty
	}
	tb, ptr, target := r.b, r.ptr, r.target
	if k := target.Kind(); k != jsonv.KindObject && k != jsonv.KindBool {
		f.errs.Add(b.file, at, "$ref %s names %s, not a schema", show(v), article(k))
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
		outer, outerBase := f.sources, f.base
		f.sources, f.base = nil, to
		out := f.flatten(tb, ptr, to, target)
		within := f.sources
		f.sources, f.base = outer, outerBase
		f.stack = f.stack[:len(f.stack)-1]
		if o := out.Object(); o != nil {
			for _, kw := range resourceKeywords {
				o.Delete(kw)
			}
		}
		done = memoized{v: out, size: count(out), sources: within}
		f.memo[key] = done
	}
	f.source(to, tb, ptr, target, done.sources)
	if f.size += done.size; f.size > f.limit {
		if !f.big {
			f.big = true
			f.errs.Add(b.file, at, "$ref %s makes the composed schema too large: over %d values inlined (a schema that refers to the same part many times at every level?)", show(v), f.limit)
		}
		return empty
	}
	return done.v.Clone()
}

// count returns the number of values in v.
func count(v jsonv.Value) int {
	n := 1
	switch v.Kind() {
	case jsonv.KindArray:
		for _, e := range v.Array() {
			n += count(e)
		}
	case jsonv.KindObject:
		for _, m := range v.Object().Members() {
			n += count(m.Value)
		}
	}
	return n
}

// resolve finds what a "$ref" value written in b names: the document it is
// in, where in it, and the value — or why it names nothing. Outcomes are
// cached per document and reference.
func (f *flattener) resolve(b *base, v jsonv.Value) resolved {
	if v.Kind() != jsonv.KindString {
		return resolved{msg: fmt.Sprintf("$ref must be a string, not %s", article(v.Kind()))}
	}
	k := refKey{b, v.Str()}
	r, ok := f.resolved[k]
	if !ok {
		r = f.lookup(b, v.Str())
		f.resolved[k] = r
	}
	return r
}

func (f *flattener) lookup(b *base, ref string) resolved {
	switch {
	case strings.HasPrefix(ref, "#"):
		p, err := registry.Fragment(b.root, ref[1:])
		if err != nil {
			return resolved{msg: fmt.Sprintf("unknown $ref %q: %v", ref, trimNotFound(err))}
		}
		t, _ := b.root.At(p)
		return resolved{b: b, ptr: p, target: t}
	case registry.IsURI(ref):
		if f.reg == nil {
			return resolved{msg: fmt.Sprintf("cannot resolve $ref %q: %v", ref, registry.ErrNoRegistry), cause: registry.ErrNoRegistry}
		}
		t, err := f.reg.Resolve(ref)
		if err != nil {
			var located *schema.Error
			if errors.As(err, &located) { // the target file itself is malformed
				return resolved{errs: []*schema.Error{located}, msg: fmt.Sprintf("cannot resolve $ref %q: %s is malformed", ref, located.File)}
			}
			return resolved{msg: fmt.Sprintf("unknown $ref %q: %v%s", ref, trimNotFound(err), f.suggestDocument(ref))}
		}
		uri := t.Document.URI.String()
		tb, ok := f.bases[uri]
		if !ok {
			tb = &base{file: t.Document.File, uri: uri, root: t.Document.Value}
			f.bases[uri] = tb
		}
		return resolved{b: tb, ptr: t.Pointer, target: t.Value}
	}
	return resolved{msg: fmt.Sprintf("unsupported $ref %q: only local references (\"#/pointer\", \"#name\") and registry URIs (\"aug:path[:version][#fragment]\") are resolved", ref)}
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
