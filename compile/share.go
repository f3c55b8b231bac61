package compile

import (
	"slices"
	"strconv"
	"strings"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

// annotations are the keywords that only say what a value means: a model
// reads them, no validator checks them. Subschemas are compared without
// them, so that steps whose fields are the same but whose descriptions
// differ share their fields; a place keeps its own beside "$ref".
var annotations = []string{"title", "description", "examples"}

// maxShares bounds the subschemas one schema shares: each costs a pass
// over the schema, and the first few save nearly everything.
const maxShares = 64

// Share returns s with every subschema that it holds more than once — the
// same fields under several steps, the same object under several
// properties — written once under "$defs" and referred to with "$ref"
// wherever it was, when that makes s shorter. The place of a shared
// subschema keeps its own title and description beside the "$ref" (draft
// 2020-12 applies both); what every place has alike moves into the
// definition. A "$defs" that s already has (a multiplexed schema's) is
// merged: a definition that is all of a repeated subschema becomes its
// home, and definitions that end up the same are one, with every
// reference rewritten. The schema admits exactly the values s admits.
// Providers that refuse keywords beside "$ref" (OpenAI's strict mode) get
// them moved by Project with Strict; those that take no "$ref" at all get
// Inline(s). s is not changed.
func Share(s jsonv.Value) jsonv.Value {
	if s.Kind() != jsonv.KindObject {
		return s
	}
	d := newDefs(s)
	for range maxShares {
		if !d.shareBest() {
			break
		}
	}
	d.collapse()
	return d.value()
}

// defs is a schema being shared: its body (the root without "$defs") and
// its definitions, in order.
type defs struct {
	body  jsonv.Value
	names []string
	defs  map[string]jsonv.Value
}

func newDefs(s jsonv.Value) *defs {
	d := &defs{defs: map[string]jsonv.Value{}}
	body := shallow(s.Object())
	if ds, ok := body.Get("$defs"); ok && ds.Kind() == jsonv.KindObject {
		body.Delete("$defs")
		for name, v := range ds.Members() {
			d.names = append(d.names, name)
			d.defs[name] = v
		}
	}
	d.body = body.Value()
	return d
}

// value is the schema again: the body with "$defs" last, as Multiplex
// writes it.
func (d *defs) value() jsonv.Value {
	out := shallow(d.body.Object())
	if len(d.names) > 0 {
		ds := jsonv.NewObject(len(d.names))
		for _, n := range d.names {
			ds.Set(n, d.defs[n])
		}
		out.Set("$defs", ds.Value())
	}
	return out.Value()
}

// site is one place of a subschema: its name (for naming a definition
// after it), the core's key, and whether it is all of a definition.
type site struct {
	name string
	def  string // the definition it is all of; "" for a place inside one or in the body
	top  bool   // a property of the root: a step of a chunk
	s    jsonv.Value
}

// core is s without its annotations.
func core(s jsonv.Value) jsonv.Value {
	o := s.Object()
	if o == nil {
		return s
	}
	c := shallow(o)
	for _, a := range annotations {
		c.Delete(a)
	}
	return c.Value()
}

// shareable says whether s may be shared: an object schema with more than
// annotations and no reference of its own at the top (a reference is
// already as short as it gets).
func shareable(s jsonv.Value) bool {
	o := s.Object()
	if o == nil || o.Has("$ref") || o.Has("$defs") || o.Has("$id") || o.Has("$anchor") {
		return false
	}
	for name := range s.Members() {
		if !slices.Contains(annotations, name) {
			return true
		}
	}
	return false
}

// sites lists every place of a subschema, by its core's key: the body's
// subschemas (not the root), and each definition with its subschemas.
func (d *defs) sites() (map[string][]site, []string) {
	bykey := map[string][]site{}
	var order []string
	var visit func(at site)
	visit = func(at site) {
		if shareable(at.s) {
			k := string(jsonv.Marshal(core(at.s)))
			if bykey[k] == nil {
				order = append(order, k)
			}
			bykey[k] = append(bykey[k], at)
		}
		schema.Subschemas(at.s, func(p jsonv.Pointer, sub jsonv.Value) bool {
			visit(site{name: childName(at.name, p), s: sub})
			return true
		})
	}
	schema.Subschemas(d.body, func(p jsonv.Pointer, sub jsonv.Value) bool {
		visit(site{name: childName("", p), top: p.Parent() == "/properties", s: sub})
		return true
	})
	for _, n := range d.names {
		visit(site{name: n, def: n, s: d.defs[n]})
	}
	return bykey, order
}

// childName names a subschema at p under a schema named parent: a
// property or definition by its name, anything else (an array's items, an
// alternative) by its parent's.
func childName(parent string, p jsonv.Pointer) string {
	if par := p.Parent(); par != "" {
		switch par.Last() {
		case "properties", "$defs", "definitions":
			return p.Last()
		}
	}
	if parent == "" {
		return "item"
	}
	return parent
}

// share is a core that repeats: its sites, the annotations every site
// has alike (moved into the definition), and the bytes sharing saves.
type share struct {
	key    string
	sites  []site
	common []jsonv.Member
	home   string // an existing definition that is all of it, or ""
	saves  int
}

// shareBest shares the repeated core that saves the most bytes; false
// when none saves any.
func (d *defs) shareBest() bool {
	bykey, order := d.sites()
	var best *share
	for _, k := range order {
		ss := bykey[k]
		if len(ss) < 2 {
			continue
		}
		sh := d.plan(k, ss)
		if sh.saves > 0 && (best == nil || sh.saves > best.saves) {
			best = sh
		}
	}
	if best == nil {
		return false
	}
	d.apply(best)
	return true
}

// plan works out what sharing one repeated core costs and saves.
func (d *defs) plan(key string, ss []site) *share {
	sh := &share{key: key, sites: ss, common: commonAnnotations(ss)}
	for _, s := range ss {
		if s.def != "" && len(siteAnnotations(s.s, sh.common)) == 0 {
			sh.home = s.def
			break
		}
	}
	name := sh.home
	if name == "" {
		name = "#"
	}
	ref := len(`"$ref":"#/$defs/"`) + len(name) + 2
	before, after := 0, 0
	for _, s := range ss {
		if s.def != "" && s.def == sh.home {
			continue
		}
		before += len(jsonv.Marshal(s.s))
		after += ref + len(jsonv.Marshal(jsonv.ObjectValue(siteAnnotations(s.s, sh.common)...))) - 2
	}
	if sh.home == "" {
		after += len(`"":,`) + len(name) + len(key) + len(jsonv.Marshal(jsonv.ObjectValue(sh.common...)))
		if len(d.names) == 0 {
			after += len(`"$defs":{},`)
		}
	}
	sh.saves = before - after
	return sh
}

// annotationsOf are the annotations of s, in its order.
func annotationsOf(s jsonv.Value) []jsonv.Member {
	var out []jsonv.Member
	for name, v := range s.Members() {
		if slices.Contains(annotations, name) {
			out = append(out, jsonv.Member{Name: name, Value: v})
		}
	}
	return out
}

// commonAnnotations are the annotations every site has, with the same
// value.
func commonAnnotations(ss []site) []jsonv.Member {
	var out []jsonv.Member
	for _, m := range annotationsOf(ss[0].s) {
		same := true
		for _, s := range ss[1:] {
			if v, ok := s.s.Get(m.Name); !ok || !jsonv.Equal(v, m.Value) {
				same = false
				break
			}
		}
		if same {
			out = append(out, m)
		}
	}
	return out
}

// siteAnnotations are the annotations of s that are not common.
func siteAnnotations(s jsonv.Value, common []jsonv.Member) []jsonv.Member {
	var out []jsonv.Member
	for _, m := range annotationsOf(s) {
		if !slices.ContainsFunc(common, func(c jsonv.Member) bool { return c.Name == m.Name }) {
			out = append(out, m)
		}
	}
	return out
}

// apply shares sh: its definition is added (or is its home), and every
// other site becomes its own annotations and a "$ref" to it.
func (d *defs) apply(sh *share) {
	name := sh.home
	if name == "" {
		name = d.newName(shareName(sh.sites))
		// The first place's keywords in its order, but for the
		// annotations that are not everyone's.
		def := jsonv.NewObject(sh.sites[0].s.Len())
		for kw, v := range sh.sites[0].s.Members() {
			if !slices.Contains(annotations, kw) || slices.ContainsFunc(sh.common, func(c jsonv.Member) bool { return c.Name == kw }) {
				def.Set(kw, v)
			}
		}
		d.names = append(d.names, name)
		d.defs[name] = def.Value()
	}
	ref := refTo(name)
	replace := func(_ jsonv.Pointer, s jsonv.Value) (jsonv.Value, bool) {
		if !shareable(s) || string(jsonv.Marshal(core(s))) != sh.key {
			return s, false
		}
		out := jsonv.NewObject(4)
		for _, m := range siteAnnotations(s, sh.common) {
			out.Set(m.Name, m.Value)
		}
		out.Set("$ref", jsonv.StringValue(ref))
		return out.Value(), true
	}
	d.body = mapChildren(d.body, replace)
	for _, n := range d.names {
		if n == name {
			d.defs[n] = mapChildren(d.defs[n], replace)
			continue
		}
		if v, ok := replace("", d.defs[n]); ok {
			d.defs[n] = v
			continue
		}
		d.defs[n] = mapChildren(d.defs[n], replace)
	}
}

// mapChildren returns s with each subschema directly below it replaced
// by f's value where f handles it (true), and searched further where it
// does not; p is the subschema's pointer relative to s
// ("/properties/name", "/items"). s is not changed: what changes is
// copied.
func mapChildren(s jsonv.Value, f func(p jsonv.Pointer, sub jsonv.Value) (jsonv.Value, bool)) jsonv.Value {
	o := s.Object()
	if o == nil {
		return s
	}
	var out *jsonv.Object
	set := func(name string, v jsonv.Value) {
		if out == nil {
			out = shallow(o)
		}
		out.Set(name, v)
	}
	each := func(p jsonv.Pointer, sub jsonv.Value) (jsonv.Value, bool) {
		v, handled := f(p, sub)
		if !handled {
			v = mapChildren(sub, f)
		}
		return v, v.Object() != sub.Object()
	}
	for kw, v := range s.Members() {
		switch schema.KeywordShape(kw) {
		case schema.SchemaValue:
			if v.Kind() == jsonv.KindArray {
				continue // draft-7 tuple items: left as written
			}
			if nv, changed := each(jsonv.PointerTo(kw), v); changed {
				set(kw, nv)
			}
		case schema.SchemaMap:
			var m *jsonv.Object
			for name, sub := range v.Members() {
				if nv, changed := each(jsonv.PointerTo(kw, name), sub); changed {
					if m == nil {
						m = shallow(v.Object())
					}
					m.Set(name, nv)
				}
			}
			if m != nil {
				set(kw, m.Value())
			}
		case schema.SchemaArray:
			arr := v.Array()
			var na []jsonv.Value
			for i, sub := range arr {
				if nv, changed := each(jsonv.PointerTo(kw).AppendIndex(i), sub); changed {
					if na == nil {
						na = slices.Clone(arr)
					}
					na[i] = nv
				}
			}
			if na != nil {
				set(kw, jsonv.ArrayValue(na...))
			}
		}
	}
	if out == nil {
		return s
	}
	return out.Value()
}

// shareName is what a shared subschema is named after: the name all its
// places have ("result"), "step" for steps of different names, else its
// first place's.
func shareName(ss []site) string {
	same, steps := true, true
	for _, s := range ss {
		same = same && s.name == ss[0].name
		steps = steps && (s.top || s.def != "")
	}
	if !same && steps {
		return "step"
	}
	return ss[0].name
}

// shallow is a copy of o whose members are o's: what is set or deleted
// in it is not in o, and nothing below it is copied. Nothing here changes
// an object it did not make.
func shallow(o *jsonv.Object) *jsonv.Object {
	c := jsonv.NewObject(o.Len())
	for _, m := range o.Members() {
		c.Set(m.Name, m.Value)
	}
	return c
}

// newName is a definition name after a site's name, not yet taken: only
// letters, digits, "_" and "-", so that every provider takes the
// reference as it is.
func (d *defs) newName(base string) string {
	b := []byte(base)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	name := string(b)
	if name == "" {
		name = "shared"
	}
	if _, taken := d.defs[name]; !taken {
		return name
	}
	for i := 2; ; i++ {
		if _, taken := d.defs[name+strconv.Itoa(i)]; !taken {
			return name + strconv.Itoa(i)
		}
	}
}

// refTo is the reference to definition name.
func refTo(name string) string { return "#" + string(jsonv.PointerTo("$defs", name)) }

// defName is the definition a local reference names, or "".
func defName(ref string) string {
	rest, ok := strings.CutPrefix(ref, "#/$defs/")
	if !ok || strings.Contains(rest, "/") {
		return ""
	}
	return strings.ReplaceAll(strings.ReplaceAll(rest, "~1", "/"), "~0", "~")
}

// collapse removes the definitions that are only a reference to another
// (a multiplexed call's step definitions that became one), rewriting
// every reference to them. It returns what each removed definition's
// name now is, for references kept elsewhere.
func (d *defs) collapse() map[string]string {
	alias := map[string]string{}
	for _, n := range d.names {
		v := d.defs[n]
		if v.Len() == 1 {
			if t := defName(v.Lookup("$ref").Str()); t != "" && t != n {
				alias[n] = t
			}
		}
	}
	if len(alias) == 0 {
		return nil
	}
	resolve := func(n string) string {
		for range len(alias) + 1 {
			t, ok := alias[n]
			if !ok {
				break
			}
			n = t
		}
		return n
	}
	d.rewriteRefs(resolve)
	d.names = slices.DeleteFunc(d.names, func(n string) bool {
		_, ok := alias[n]
		if ok {
			delete(d.defs, n)
		}
		return ok
	})
	for n := range alias {
		alias[n] = resolve(n)
	}
	return alias
}

// rewriteRefs rewrites every local reference to a definition by rename.
func (d *defs) rewriteRefs(rename func(string) string) {
	// fix handles every subschema itself (true), so that mapChildren
	// does not go down a second time.
	var fix func(_ jsonv.Pointer, s jsonv.Value) (jsonv.Value, bool)
	fix = func(_ jsonv.Pointer, s jsonv.Value) (jsonv.Value, bool) {
		v := mapChildren(s, fix)
		if n := defName(v.Lookup("$ref").Str()); n != "" && rename(n) != n {
			o := shallow(v.Object())
			o.Set("$ref", jsonv.StringValue(refTo(rename(n))))
			return o.Value(), true
		}
		return v, true
	}
	d.body, _ = fix("", d.body)
	for _, n := range d.names {
		d.defs[n], _ = fix("", d.defs[n])
	}
}
