// Package schemaform turns the JSON Schema of a person's step into an HTML
// form, and the posted form back into the answer, so that a person answers
// a USER chunk in a browser as the API would take it.
//
// The form's inputs are named by the JSON Pointer of the value they fill
// (/confirmInvitation/decision), so a validation problem, which the
// engine reports at an instance path, is shown at its input. Strings,
// numbers, integers and booleans are inputs; enums are choices; nested
// objects are fieldsets; arrays are rows a person adds and removes (with
// Script); descriptions are help text. What a form cannot ask well — a
// schema with anyOf, oneOf, $ref, a map of any keys — is a JSON text area
// for that part. The answer keeps the schema's member order.
//
// Nothing here validates: Parse gives back what the person wrote, and the
// engine's own check (the one the API uses) says what is wrong, at its
// path, for Render to show at the fields.
package schemaform

import (
	"html/template"
	"slices"
	"strconv"
	"strings"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

// kind is how a part of the schema is asked.
type kind string

const (
	kindText     kind = "text"     // a one-line string
	kindTextarea kind = "textarea" // a long string
	kindNumber   kind = "number"   // a number or an integer
	kindCheckbox kind = "checkbox" // a required boolean
	kindChoice   kind = "choice"   // an enum, an optional boolean: radio buttons or a select
	kindMulti    kind = "multi"    // an array of enum values: checkboxes
	kindConst    kind = "const"    // a fixed value
	kindObject   kind = "object"   // a fieldset of members
	kindArray    kind = "array"    // rows of items
	kindJSON     kind = "json"     // JSON text, for what a form cannot ask
)

// Markers the form carries beside the values, so that Parse knows an
// unchecked checkbox (false) and an array's rows from nothing at all.
const (
	boolMarker = "sf-bool" // its values: the pointers of the checkboxes drawn
	itemMarker = "sf-item" // its values: the pointers of the array rows drawn
)

// indexToken stands for an array row's index in its <template>; Script
// replaces it with the next free index.
const indexToken = "__sf_index__"

// maxRadios is the most choices shown as radio buttons; more are a select.
const maxRadios = 6

// field is one part of the form.
type field struct {
	Name     string // the JSON Pointer of the value: the input's name
	ID       string
	Label    string // the title, or the member's name
	Member   string // the member's name, shown beside a title
	Help     string
	Required bool
	Kind     kind
	// Input is the <input> type of text and number fields: text, email,
	// url, date, datetime-local, time, number.
	Input    string
	Step     string // "1" for an integer, "any" for a number
	Min, Max string
	Value    string // as the input shows it
	Checked  bool
	Choices  []choice
	Select   bool     // choices as a select rather than radio buttons
	Members  []*field // an object's
	Items    []*field // an array's rows
	Template *field   // an array's empty row, named with indexToken
	Problems []string
}

// choice is one value of an enum: its JSON text is what the form posts.
type choice struct {
	Value, Label string
	Checked      bool
}

// Render is the form's fields for schema s, filled with value (null for an
// empty form) and each problem shown at its field: a problem at a path no
// field has goes to the nearest field above it, and what reaches no field
// is listed first. The caller writes the <form> around it (with novalidate:
// the engine checks the answer, not the browser), and Script for arrays.
func Render(s, value jsonv.Value, problems []schema.Invalid) template.HTML {
	root := build(s, "", "", true, value, 0)
	var top []string
	for _, p := range problems {
		if !attach(root, p) {
			top = append(top, p.String())
		}
	}
	var b strings.Builder
	if err := tmpl.Execute(&b, struct {
		Root     *field
		Problems []string
	}{root, top}); err != nil {
		// The template is fixed and its data built here: an error is a bug.
		panic("schemaform: " + err.Error())
	}
	return template.HTML(b.String())
}

// maxDepth bounds the nesting drawn; deeper parts are JSON text.
const maxDepth = 12

// build makes the field of schema s at pointer name, filled with value.
func build(s jsonv.Value, name, member string, required bool, value jsonv.Value, depth int) *field {
	// Only a member is marked required: the answer itself and an array's
	// rows always are, and say nothing by it.
	f := &field{Name: name, ID: "sf" + strings.ReplaceAll(name, " ", "%20"), Member: member, Required: required && member != ""}
	f.Label = s.Lookup("title").Str()
	if f.Label == "" {
		f.Label, f.Member = member, ""
	}
	f.Help = s.Lookup("description").Str()
	f.Kind = kindOf(s, required)
	if depth >= maxDepth && (f.Kind == kindObject || f.Kind == kindArray) {
		f.Kind = kindJSON
	}
	switch f.Kind {
	case kindText, kindTextarea:
		f.Value = value.Str()
		f.Input = inputType(s.Lookup("format").Str())
		if f.Kind == kindText && (strings.Contains(f.Value, "\n") || len(f.Value) > 80) && f.Input == "text" {
			f.Kind = kindTextarea
		}
	case kindNumber:
		f.Input, f.Step = "number", "any"
		if schemaType(s) == "integer" {
			f.Step = "1"
		}
		f.Min, f.Max = s.Lookup("minimum").Literal(), s.Lookup("maximum").Literal()
		if value.Kind() == jsonv.KindString {
			f.Input = "text" // refilled with what was not a number
		}
		f.Value = textOf(value)
	case kindCheckbox:
		f.Checked = value.Bool()
	case kindChoice:
		options := s.Lookup("enum").Array()
		if options == nil {
			options = []jsonv.Value{jsonv.BoolValue(true), jsonv.BoolValue(false)}
		}
		for _, o := range options {
			f.Choices = append(f.Choices, choice{Value: string(jsonv.Marshal(o)), Label: choiceLabel(o), Checked: !value.IsNull() && jsonv.Equal(o, value)})
		}
		f.Select = len(f.Choices) > maxRadios
	case kindMulti:
		for _, o := range s.Lookup("items").Lookup("enum").Array() {
			checked := slices.ContainsFunc(value.Array(), func(v jsonv.Value) bool { return jsonv.Equal(o, v) })
			f.Choices = append(f.Choices, choice{Value: string(jsonv.Marshal(o)), Label: choiceLabel(o), Checked: checked})
		}
	case kindConst:
		c := s.Lookup("const")
		f.Value, f.Choices = textOf(c), []choice{{Value: string(jsonv.Marshal(c))}}
	case kindObject:
		req := schema.Required(s)
		for m, ms := range schema.Properties(s).All() {
			f.Members = append(f.Members, build(ms, name+"/"+escape(m), m, slices.Contains(req, m), value.Lookup(m), depth+1))
		}
	case kindArray:
		items := s.Lookup("items")
		rows := len(value.Array())
		if n, ok := s.Lookup("minItems").Int(); ok {
			rows = max(rows, int(min(n, 100)))
		}
		if rows == 0 && required {
			rows = 1
		}
		for i := range rows {
			var v jsonv.Value
			if i < value.Len() {
				v = value.Array()[i]
			}
			f.Items = append(f.Items, build(items, name+"/"+strconv.Itoa(i), "", true, v, depth+1))
		}
		f.Template = build(items, name+"/"+indexToken, "", true, jsonv.Value{}, depth+1)
	case kindJSON:
		if !value.IsNull() {
			f.Value = string(jsonv.MarshalIndent(value, "  "))
		}
	}
	return f
}

// kindOf says how s is asked.
func kindOf(s jsonv.Value, required bool) kind {
	for _, k := range []string{"anyOf", "oneOf", "allOf", "not", "if", "$ref", "prefixItems", "patternProperties"} {
		if _, ok := s.Get(k); ok {
			return kindJSON
		}
	}
	if _, ok := s.Get("const"); ok {
		return kindConst
	}
	if s.Lookup("enum").Len() > 0 {
		return kindChoice
	}
	switch schemaType(s) {
	case "string":
		return kindText
	case "number", "integer":
		return kindNumber
	case "boolean":
		if required {
			return kindCheckbox
		}
		return kindChoice
	case "object":
		if schema.Properties(s) == nil || schema.Properties(s).Len() == 0 {
			return kindJSON // a map of any keys
		}
		return kindObject
	case "array":
		items := s.Lookup("items")
		if items.Object() == nil {
			return kindJSON
		}
		if items.Lookup("enum").Len() > 0 {
			return kindMulti
		}
		return kindArray
	}
	if schema.Properties(s) != nil && schema.Properties(s).Len() > 0 {
		return kindObject
	}
	return kindJSON
}

// schemaType is s's one type: "type" itself, or the one type besides
// "null" of a list; "" when there is none or several.
func schemaType(s jsonv.Value) string {
	t := s.Lookup("type")
	if t.Kind() == jsonv.KindString {
		return t.Str()
	}
	var types []string
	for _, x := range t.Array() {
		if x.Str() != "null" {
			types = append(types, x.Str())
		}
	}
	if len(types) == 1 {
		return types[0]
	}
	return ""
}

// inputType is the <input> type of a string of that format.
func inputType(format string) string {
	switch format {
	case "email", "idn-email":
		return "email"
	case "uri", "iri", "url":
		return "url"
	case "date":
		return "date"
	case "time":
		return "time"
	}
	// date-time stays text: the browser's datetime-local has no zone, and
	// RFC 3339 needs one.
	return "text"
}

// textOf is a value as an input shows it: a string's text, other values'
// JSON.
func textOf(v jsonv.Value) string {
	switch v.Kind() {
	case jsonv.KindString:
		return v.Str()
	case jsonv.KindNull:
		return ""
	}
	return string(jsonv.Marshal(v))
}

// choiceLabel is an enum value as a choice shows it: a string's text,
// other values' JSON (null included).
func choiceLabel(v jsonv.Value) string {
	if v.Kind() == jsonv.KindString {
		return v.Str()
	}
	return string(jsonv.Marshal(v))
}

// escape is a member name as a JSON Pointer token.
func escape(name string) string {
	return strings.ReplaceAll(strings.ReplaceAll(name, "~", "~0"), "/", "~1")
}

// attach puts problem p at the field of its path, or of the nearest path
// above it that has one; a missing required member goes to that member's
// field. It reports whether any field took it.
func attach(root *field, p schema.Invalid) bool {
	path := string(p.Path)
	if path == "/" {
		path = ""
	}
	if path != "" && path[0] != '/' {
		return false // not a pointer: for the list on top
	}
	if missing := missingMembers(p.Message); missing != nil {
		took := true
		for _, m := range missing {
			if f := find(root, path+"/"+escape(m)); f != nil {
				f.Problems = append(f.Problems, "required")
			} else {
				took = false
			}
		}
		if took {
			return true
		}
	}
	for {
		if f := find(root, path); f != nil {
			f.Problems = append(f.Problems, p.Message)
			return f != root || path == ""
		}
		if path == "" {
			return false
		}
		path = path[:max(strings.LastIndex(path, "/"), 0)]
	}
}

// missingMembers reads the members a "missing property 'x'" or "missing
// properties 'x', 'y'" problem names; nil for other problems.
func missingMembers(msg string) []string {
	rest, ok := strings.CutPrefix(msg, "missing property ")
	if !ok {
		if rest, ok = strings.CutPrefix(msg, "missing properties "); !ok {
			return nil
		}
	}
	var names []string
	for _, q := range strings.Split(rest, ", ") {
		if len(q) < 2 || q[0] != '\'' || q[len(q)-1] != '\'' {
			return nil
		}
		names = append(names, q[1:len(q)-1])
	}
	return names
}

// find is the field of pointer name under f, or nil.
func find(f *field, name string) *field {
	if f.Name == name {
		return f
	}
	if !strings.HasPrefix(name, f.Name+"/") {
		return nil
	}
	for _, c := range slices.Concat(f.Members, f.Items) {
		if found := find(c, name); found != nil {
			return found
		}
	}
	return nil
}
