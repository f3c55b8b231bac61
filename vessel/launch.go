package vessel

import (
	"fmt"
	"slices"
	"strings"

	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/schema"
)

// A tool composed by hand from the LaunchProcess macro (seed 001's
// StartProcess tool) is checked when the toolset is built: a name that
// names no process would launch nothing, and an entry parameter that no
// value can make fit the process's entry chunk would fail every call, at
// the price of a model call each.

// launchShape reports whether a tool's schema has the shape of the
// LaunchProcess macro filled by hand, {"name": {"const": P}, ENTRY: {…}}:
// the process's name P and the entry member's name.
func launchShape(s jsonv.Value) (name, entry string, ok bool) {
	props := schema.Properties(s)
	if props.Len() != 2 || props.Members()[0].Name != "name" {
		return "", "", false
	}
	name = props.Members()[0].Value.Lookup("const").Str()
	entry = props.Members()[1].Name
	if name == "" || schema.Properties(props.Members()[1].Value) == nil {
		return "", "", false
	}
	return name, entry, true
}

// unknownLaunch is the problem of a tool of the LaunchProcess macro's
// shape whose name names no process of reg (as ProcessName names them),
// or "" when it names one or the tool has another shape.
func unknownLaunch(tool string, s jsonv.Value, reg *registry.Registry) string {
	name, _, ok := launchShape(s)
	if !ok || reg == nil {
		return ""
	}
	var names []string
	for _, n := range reg.Names(ProcessesFolder) {
		pn := ProcessName("aug:" + ProcessesFolder + "/" + n)
		if pn == name {
			return ""
		}
		if !slices.Contains(names, pn) {
			names = append(names, pn)
		}
	}
	have := "the registry has no processes"
	if len(names) > 0 {
		have = "its processes: " + strings.Join(names, ", ")
	}
	return fmt.Sprintf("tool %s launches the process %q, which is none of the registry's (%s): its calls would launch nothing", tool, name, have)
}

// entryMisfits are the problems that prove no value of a launch tool's
// entry parameter, have, fits the process's entry chunk ch — each at its
// path in the entry: a property the chunk requires (or a step of it) that
// have lacks — it lists its properties and is not open to others — or
// forbids (false); a property both constrain to different constants, or
// to types no value has at once. What a value may break otherwise (a
// pattern, a format, a property have lists but does not require) is left
// to the check of each call (CheckLaunch).
func entryMisfits(have jsonv.Value, ch *compile.ProgramChunk) []schema.Invalid {
	if ch == nil || ch.Kind != compile.LLM {
		return nil
	}
	steps := make([]string, len(ch.Steps))
	for i, s := range ch.Steps {
		steps[i] = s.Name
	}
	return misfits(have, ch.Schema, "", steps)
}

// misfits walks have against want at path, want's required members and
// also those named more.
func misfits(have, want jsonv.Value, at jsonv.Pointer, more []string) []schema.Invalid {
	var out []schema.Invalid
	if msg := clash(have, want); msg != "" {
		return []schema.Invalid{{Path: at, Message: msg}}
	}
	hp, wp := schema.Properties(have), schema.Properties(want)
	if hp == nil || wp == nil {
		return nil
	}
	extra, open := have.Get("additionalProperties")
	open = open && !(extra.Kind() == jsonv.KindBool && !extra.Bool())
	var required []string
	for _, n := range append(schema.Required(want), more...) {
		if !slices.Contains(required, n) {
			required = append(required, n)
		}
	}
	for _, n := range required {
		h, listed := hp.Get(n)
		switch {
		case !listed && !open:
			out = append(out, schema.Invalid{Path: at, Message: fmt.Sprintf("the entry chunk requires %q, which the tool does not offer the model", n)})
		case listed && h.Kind() == jsonv.KindBool && !h.Bool():
			out = append(out, schema.Invalid{Path: at.Append(n), Message: fmt.Sprintf("the entry chunk requires %q, which the tool forbids", n)})
		case listed:
			if w, ok := wp.Get(n); ok {
				out = append(out, misfits(h, w, at.Append(n), nil)...)
			}
		}
	}
	return out
}

// clash says why no value fits both have and want where that shows in
// their own keywords — constants that differ, types that share no value —
// or "" when none does.
func clash(have, want jsonv.Value) string {
	hc, hasHC := have.Get("const")
	wc, hasWC := want.Get("const")
	ht, wt := typesOf(have), typesOf(want)
	switch {
	case hasHC && hasWC && !jsonv.Equal(hc, wc):
		return fmt.Sprintf("the tool's const %s is not the entry chunk's %s", jsonv.Marshal(hc), jsonv.Marshal(wc))
	case hasHC && wt != nil && !constFits(kindOf(hc), wt):
		return fmt.Sprintf("the tool's const %s is not of the entry chunk's type %s", jsonv.Marshal(hc), strings.Join(wt, " or "))
	case hasWC && ht != nil && !constFits(kindOf(wc), ht):
		return fmt.Sprintf("the entry chunk's const %s is not of the tool's type %s", jsonv.Marshal(wc), strings.Join(ht, " or "))
	case ht != nil && wt != nil && !overlap(ht, wt):
		return fmt.Sprintf("the tool's type %s is not the entry chunk's %s", strings.Join(ht, " or "), strings.Join(wt, " or "))
	}
	return ""
}

// typesOf is a schema's "type" as a list; nil when it says none.
func typesOf(s jsonv.Value) []string {
	t, ok := s.Get("type")
	switch {
	case !ok:
		return nil
	case t.Kind() == jsonv.KindString:
		return []string{t.Str()}
	}
	return schema.Strings(t)
}

// kindOf is the JSON Schema type of a value: an integral number is an
// "integer".
func kindOf(v jsonv.Value) string {
	switch v.Kind() {
	case jsonv.KindNull:
		return "null"
	case jsonv.KindBool:
		return "boolean"
	case jsonv.KindString:
		return "string"
	case jsonv.KindArray:
		return "array"
	case jsonv.KindObject:
		return "object"
	}
	if _, ok := v.Int(); ok {
		return "integer"
	}
	return "number"
}

// constFits reports whether a constant of JSON Schema type kind is of one
// of types: an integer is a number too.
func constFits(kind string, types []string) bool {
	return slices.Contains(types, kind) || (kind == "integer" && slices.Contains(types, "number"))
}

// overlap reports whether a value can be of a type of a and of b: an
// integer is a number too.
func overlap(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if x == y || (x == "integer" && y == "number") || (x == "number" && y == "integer") {
				return true
			}
		}
	}
	return false
}
