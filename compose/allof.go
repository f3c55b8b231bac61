package compose

import (
	"regexp"
	"slices"
	"strconv"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

// acc is an allOf fold in progress.
type acc struct {
	obj     *jsonv.Object     // the merged schema so far; owned, so changed in place
	origins map[string]string // property name → where it was defined
	kwSrc   map[string]string // keyword → the item it came from
	slotSrc string            // the mixin whose "default" slot is open
	loop    jsonv.Value       // a loop mixin's loop keyword, or null
}

func newAcc(first jsonv.Value, src string) *acc {
	a := &acc{obj: first.Clone().Object(), origins: make(map[string]string), kwSrc: make(map[string]string)}
	if a.obj == nil {
		a.obj = jsonv.NewObject(0)
	}
	for _, kw := range a.obj.Names() {
		a.kwSrc[kw] = src
	}
	for name := range schema.Properties(a.obj.Value()).All() {
		a.origins[name] = src + "/properties/" + name
	}
	if a.slotOpen() {
		a.slotSrc = src
	}
	return a
}

func (a *acc) props() *jsonv.Object { return schema.Properties(a.obj.Value()) }

func (a *acc) slotOpen() bool { return a.props().Has(slot) }

// isMixin reports whether an allOf item is a mixin: it has a slot.
func isMixin(item jsonv.Value) bool { return schema.Properties(item).Has(slot) }

// allOf folds the items of an "allOf" at pointer at of b into one schema,
// to go at pointer to of the output.
func (f *flattener) allOf(b *base, at, to jsonv.Pointer, v jsonv.Value) jsonv.Value {
	if v.Kind() != jsonv.KindArray {
		f.errs.Add(b.file, at, "allOf must be an array of schemas, not %s", article(v.Kind()))
		return jsonv.NewObject(0).Value()
	}
	var a *acc
	for i, raw := range v.Array() {
		itemAt := at.AppendIndex(i)
		f.source(to, b, itemAt, raw, nil)
		item := f.flatten(b, itemAt, to, raw)
		if item.Object() == nil {
			if item.Kind() == jsonv.KindBool && item.Bool() {
				continue // true: no constraint
			}
			f.errs.Add(b.file, itemAt, "an allOf item must be a schema object, not %s", show(item))
			continue
		}
		src := source(b, itemAt, raw)
		mixin := isMixin(item)
		var loop jsonv.Value
		if mixin {
			loop = loopOf(item)
			item = withoutAnnotations(item)
		}
		switch {
		case a == nil:
			a = newAcc(item, src)
		case a.slotOpen() && schema.Properties(item) != nil:
			f.fill(a, item, src, b, itemAt)
		default:
			f.mergeItem(a, item, src, b, itemAt)
		}
		if mixin && a.slotSrc == "" {
			a.slotSrc = src
		}
		if !loop.IsNull() {
			a.loop = loop
		}
	}
	if a == nil {
		return jsonv.NewObject(0).Value()
	}
	// The slot left open holds the innermost content: its properties take
	// the slot's place.
	for a.slotOpen() {
		content, _ := a.props().Get(slot)
		if schema.Properties(content) == nil {
			f.errs.Add(b.file, at, "the %q slot of mixin %s is never filled: put an allOf item with properties after the mixin", slot, a.slotSrc)
			a.props().Delete(slot)
			a.obj.Set("required", schema.StringArray(slices.DeleteFunc(schema.Required(a.obj.Value()), func(s string) bool { return s == slot })))
			break
		}
		f.fill(a, withoutAnnotations(content), a.origins[slot], b, at)
	}
	if !a.loop.IsNull() {
		a.obj.Delete("maxIterations")
		a.obj.Set("loop", a.loop)
	}
	return a.obj.Value()
}

// Loops (SPEC §4.2). A mixin with a boolean LoopDone property is a loop:
// the engine repeats the chunk it wraps, showing the model its previous
// attempt, until the model sets LoopDone or the loop's maximum is reached.
// The maximum is the mixin's "maxIterations", or else the last number in
// its description — where the seed writes it, beside the $ref: "Цикл не
// более 3 раз", "loop at most 3 times" — or else DefaultLoopMax. The
// flattened schema keeps it as the engine keyword "loop": {"done":
// "_loopDone", "max": 3}.
const (
	LoopDone       = "_loopDone"
	DefaultLoopMax = 3
	// MaxLoop bounds a loop's maximum: each attempt is a model call.
	MaxLoop = 10
)

var lastNumber = regexp.MustCompile(`\d+`)

// loopOf returns the loop keyword of a flattened mixin, or null when it is
// no loop.
func loopOf(mixin jsonv.Value) jsonv.Value {
	done, ok := schema.Properties(mixin).Get(LoopDone)
	if !ok || done.Lookup("type").Str() != "boolean" {
		return jsonv.NullValue()
	}
	n := DefaultLoopMax
	if m, ok := mixin.Lookup("maxIterations").Int(); ok {
		n = int(m)
	} else if nums := lastNumber.FindAllString(mixin.Lookup("description").Str(), -1); len(nums) > 0 {
		n, _ = strconv.Atoi(nums[len(nums)-1])
	}
	n = min(max(n, 1), MaxLoop)
	return jsonv.ObjectValue(
		jsonv.Member{Name: "done", Value: jsonv.StringValue(LoopDone)},
		jsonv.Member{Name: "max", Value: jsonv.IntValue(int64(n))})
}

func withoutAnnotations(s jsonv.Value) jsonv.Value {
	out := jsonv.NewObject(s.Len())
	for name, v := range s.Members() {
		if !annotations[name] {
			out.Set(name, v)
		}
	}
	return out.Value()
}

// fill puts item's properties in the open slot of a, in the slot's place,
// and item's required names in the slot's place in "required" (all of
// item's properties when item declares no "required").
func (f *flattener) fill(a *acc, item jsonv.Value, src string, b *base, at jsonv.Pointer) {
	props := a.props()
	at0 := props.Index(slot)
	itemProps := schema.Properties(item)

	// Rebuild the properties: those before the slot, the item's, those after.
	merged := jsonv.NewObject(props.Len() + itemProps.Len())
	for _, m := range props.Members()[:at0] {
		merged.Set(m.Name, m.Value)
	}
	after := props.Members()[at0+1:]
	delete(a.origins, slot)
	for _, m := range itemProps.Members() {
		origin := src + "/properties/" + m.Name
		if prev, ok := merged.Get(m.Name); ok {
			merged.Set(m.Name, f.mergeProperty(m.Name, prev, m.Value, a.origins[m.Name], origin, b, at))
			continue
		}
		if i := slices.IndexFunc(after, func(x jsonv.Member) bool { return x.Name == m.Name }); i >= 0 {
			after = slices.Clone(after)
			after[i].Value = f.mergeProperty(m.Name, after[i].Value, m.Value, a.origins[m.Name], origin, b, at)
			continue
		}
		merged.Set(m.Name, m.Value)
		a.origins[m.Name] = origin
	}
	for _, m := range after {
		merged.Set(m.Name, m.Value)
	}
	a.obj.Set("properties", merged.Value())

	req := schema.Required(a.obj.Value())
	var fill []string
	if _, declared := item.Get("required"); declared {
		fill = schema.Required(item)
	} else {
		fill = itemProps.Names()
	}
	if i := slices.Index(req, slot); i >= 0 {
		req = slices.Concat(req[:i], fill, req[i+1:])
	} else if _, declared := item.Get("required"); declared {
		req = append(req, fill...)
	}
	if _, had := a.obj.Get("required"); had || len(req) > 0 {
		a.obj.Set("required", schema.StringArray(union(nil, req)))
	}
	if merged.Has(slot) {
		a.slotSrc = src
	}

	// The item's other keywords merge as an allOf item's would.
	rest := jsonv.NewObject(item.Len())
	for name, v := range item.Members() {
		if name != "properties" && name != "required" {
			rest.Set(name, v)
		}
	}
	f.mergeItem(a, rest.Value(), src, b, at)
}

// mergeItem merges an allOf item into a: descriptions join, a later
// annotation replaces an earlier one, properties merge by name, required
// lists join, and other keywords must agree.
func (f *flattener) mergeItem(a *acc, item jsonv.Value, src string, b *base, at jsonv.Pointer) {
	for name, v := range item.Members() {
		prev, had := a.obj.Get(name)
		switch {
		case !had:
			if name == "properties" {
				f.mergeProperties(a, v.Object(), src, b, at)
				continue
			}
			a.obj.Set(name, v)
			a.kwSrc[name] = src
		case name == "description":
			a.obj.Set(name, joinDescriptions(prev, v))
		case name == "required":
			a.obj.Set(name, schema.StringArray(union(schema.Strings(prev), schema.Strings(v))))
		case name == "properties":
			f.mergeProperties(a, v.Object(), src, b, at)
		case annotations[name]:
			a.obj.Set(name, v)
			a.kwSrc[name] = src
		case !jsonv.Equal(prev, v):
			f.errs.Add(b.file, at, "allOf items disagree on %q: %s in %s, %s in %s", name, show(prev), a.kwSrc[name], show(v), src)
		}
	}
}

// mergeProperties adds props to a's properties, merging those a has.
func (f *flattener) mergeProperties(a *acc, props *jsonv.Object, src string, b *base, at jsonv.Pointer) {
	if props == nil {
		return
	}
	mine := a.props()
	if mine == nil {
		mine = jsonv.NewObject(props.Len())
		a.obj.Set("properties", mine.Value())
	}
	for _, m := range props.Members() {
		origin := src + "/properties/" + m.Name
		if prev, ok := mine.Get(m.Name); ok {
			mine.Set(m.Name, f.mergeProperty(m.Name, prev, m.Value, a.origins[m.Name], origin, b, at))
			continue
		}
		mine.Set(m.Name, m.Value)
		a.origins[m.Name] = origin
	}
}

// mergeProperty merges two definitions of property name. They may add to
// each other but not disagree: a keyword both give with different values is
// an error naming both sources.
func (f *flattener) mergeProperty(name string, x, y jsonv.Value, srcX, srcY string, b *base, at jsonv.Pointer) jsonv.Value {
	if jsonv.Equal(x, y) {
		return x
	}
	if x.Object() == nil || y.Object() == nil {
		f.errs.Add(b.file, at, "property %q is defined twice with different schemas: %s at %s, %s at %s", name, show(x), srcX, show(y), srcY)
		return x
	}
	out := x.Clone().Object()
	for kw, v := range y.Members() {
		prev, had := out.Get(kw)
		switch {
		case !had:
			out.Set(kw, v)
		case jsonv.Equal(prev, v):
		case kw == "required":
			out.Set(kw, schema.StringArray(union(schema.Strings(prev), schema.Strings(v))))
		case kw == "properties" && prev.Object() != nil && v.Object() != nil:
			props := prev.Object().Clone()
			for _, m := range v.Object().Members() {
				if p, ok := props.Get(m.Name); ok {
					props.Set(m.Name, f.mergeProperty(name+"."+m.Name, p, m.Value, srcX+"/properties/"+m.Name, srcY+"/properties/"+m.Name, b, at))
				} else {
					props.Set(m.Name, m.Value)
				}
			}
			out.Set(kw, props.Value())
		default:
			f.errs.Add(b.file, at, "property %q is defined twice with different schemas: %q is %s at %s but %s at %s", name, kw, show(prev), srcX, show(v), srcY)
		}
	}
	return out.Value()
}
