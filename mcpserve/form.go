package mcpserve

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

// Form is a USER chunk's schema as an MCP elicitation form. A form asks
// flat fields — strings, numbers, integers, booleans, string enums and
// arrays of them — while a chunk's schema is an object of steps: each step
// an object of such fields, or one such field itself. A chunk of one step
// object is asked as that step's fields under their own names (the
// approval {"decision": …}); with several steps, a field is named
// "step.field", or "step" for a step that is one field. The form keeps the
// schema's titles, descriptions, defaults, enums, bounds and formats.
type Form struct {
	// Schema is the form's requested schema.
	Schema jsonv.Value
	chunk  jsonv.Value
	fields map[string]formField // by the form's field name
}

// formField is where a form's field goes in the answer.
type formField struct {
	step, prop string // prop is "" for a step that is a field itself
}

// Keywords a form field may carry (MCP's PrimitiveSchemaDefinition), by
// type; an enum makes a string a choice.
var fieldKeywords = map[string][]string{
	"string":  {"minLength", "maxLength", "format", "enum", "enumNames"},
	"number":  {"minimum", "maximum"},
	"integer": {"minimum", "maximum"},
	"boolean": {},
	"array":   {"items", "minItems", "maxItems"},
}

// The formats a form's string field may have.
var formFormats = []string{"email", "uri", "date", "date-time"}

// NewForm returns the form that asks chunk's schema, or why no form can:
// the first keyword, type or shape beyond what a form asks, with where it
// is in the answer.
func NewForm(chunk jsonv.Value) (*Form, error) {
	if err := container(chunk, ""); err != nil {
		return nil, err
	}
	steps := schema.Properties(chunk)
	if steps == nil || steps.Len() == 0 {
		return nil, fmt.Errorf("/: the chunk asks nothing a form can show")
	}
	f := &Form{chunk: chunk, fields: map[string]formField{}}
	props := jsonv.NewObject(steps.Len())
	var required []jsonv.Value
	chunkRequires := schema.Required(chunk)
	single := steps.Len() == 1
	for step, s := range steps.All() {
		at := jsonv.PointerTo(step)
		stepRequired := slices.Contains(chunkRequires, step)
		if fields := schema.Properties(s); fields != nil || s.Lookup("type").Str() == "object" {
			if err := container(s, at); err != nil {
				return nil, err
			}
			stepRequires := schema.Required(s)
			for prop, ps := range fields.All() {
				field, err := primitive(ps, at.Append(prop))
				if err != nil {
					return nil, err
				}
				name := prop
				if !single {
					name = step + "." + prop
				}
				if _, dup := f.fields[name]; dup {
					return nil, fmt.Errorf("%s: two fields of the form would be named %q", at.Append(prop), name)
				}
				f.fields[name] = formField{step: step, prop: prop}
				props.Set(name, titled(field, ps, step, prop, single))
				if stepRequired && slices.Contains(stepRequires, prop) {
					required = append(required, jsonv.StringValue(name))
				}
			}
			continue
		}
		field, err := primitive(s, at)
		if err != nil {
			return nil, err
		}
		if _, dup := f.fields[step]; dup {
			return nil, fmt.Errorf("%s: two fields of the form would be named %q", at, step)
		}
		f.fields[step] = formField{step: step}
		props.Set(step, field)
		if stepRequired {
			required = append(required, jsonv.StringValue(step))
		}
	}
	if props.Len() == 0 {
		return nil, fmt.Errorf("/: the chunk asks nothing a form can show")
	}
	form := jsonv.NewObject(3)
	form.Set("type", jsonv.StringValue("object"))
	form.Set("properties", props.Value())
	if len(required) > 0 {
		form.Set("required", jsonv.ArrayValue(required...))
	}
	f.Schema = form.Value()
	return f, nil
}

// container checks an object schema that holds fields or steps.
func container(s jsonv.Value, at jsonv.Pointer) error {
	if s.Object() == nil {
		return fmt.Errorf("%s: the schema is %s, not an object schema", where(at), s.Kind())
	}
	for kw, v := range s.Members() {
		switch kw {
		case "title", "description", "properties", "required", "$schema", "$comment":
		case "type":
			if v.Str() != "object" {
				return fmt.Errorf("%s: a form holds an object, not %s", where(at), jsonv.Marshal(v))
			}
		case "additionalProperties":
			if v.Kind() != jsonv.KindBool || v.Bool() {
				return fmt.Errorf("%s: a form has no room for other properties (additionalProperties)", where(at))
			}
		default:
			return fmt.Errorf("%s: %q is beyond what an MCP form asks", where(at), kw)
		}
	}
	return nil
}

// primitive returns a field's schema as a form asks it, or why it cannot.
func primitive(s jsonv.Value, at jsonv.Pointer) (jsonv.Value, error) {
	if s.Object() == nil {
		return jsonv.Value{}, fmt.Errorf("%s: the schema is %s, not an object schema", where(at), s.Kind())
	}
	typ := s.Lookup("type")
	if typ.Kind() == jsonv.KindNull {
		if e, ok := s.Get("enum"); ok && len(schema.Strings(e)) == e.Len() {
			typ = jsonv.StringValue("string") // an enum of strings is a choice
		}
	}
	if typ.Kind() != jsonv.KindString {
		has := "none"
		if t, ok := s.Get("type"); ok {
			has = string(jsonv.Marshal(t))
		}
		return jsonv.Value{}, fmt.Errorf("%s: a form's field has one type (string, number, integer, boolean or array); this one has %s", where(at), has)
	}
	allowed, ok := fieldKeywords[typ.Str()]
	if !ok {
		return jsonv.Value{}, fmt.Errorf("%s: a form's field is a string, number, integer, boolean or array, not %s (nested objects do not fit a form)", where(at), typ.Str())
	}
	out := jsonv.NewObject(s.Len() + 1)
	out.Set("type", typ)
	for kw, v := range s.Members() {
		switch {
		case kw == "type":
		case kw == "title" || kw == "description" || kw == "default":
			out.Set(kw, v)
		case !slices.Contains(allowed, kw):
			return jsonv.Value{}, fmt.Errorf("%s: %q is beyond what an MCP form asks of a %s", where(at), kw, typ.Str())
		case kw == "format" && !slices.Contains(formFormats, v.Str()):
			return jsonv.Value{}, fmt.Errorf("%s: a form's string has a format of %v, not %s", where(at), formFormats, jsonv.Marshal(v))
		case kw == "enum" && len(schema.Strings(v)) != v.Len():
			return jsonv.Value{}, fmt.Errorf("%s: a form's choices are strings", where(at))
		case kw == "items":
			if err := choiceItems(v, at); err != nil {
				return jsonv.Value{}, err
			}
			out.Set(kw, v)
		default:
			out.Set(kw, v)
		}
	}
	if typ.Str() == "array" && !out.Has("items") {
		return jsonv.Value{}, fmt.Errorf("%s: a form's array is a choice of several strings: it needs \"items\" with an enum", where(at))
	}
	return out.Value(), nil
}

// choiceItems checks the items of a multiple choice: strings of an enum.
func choiceItems(items jsonv.Value, at jsonv.Pointer) error {
	e, ok := items.Get("enum")
	if !ok || len(schema.Strings(e)) != e.Len() || (items.Lookup("type").Str() != "string" && items.Lookup("type").Kind() != jsonv.KindNull) {
		return fmt.Errorf("%s: a form's array is a choice of several strings: its items are strings of an enum", where(at))
	}
	for kw := range items.Members() {
		if kw != "type" && kw != "enum" && kw != "title" && kw != "description" {
			return fmt.Errorf("%s: %q is beyond what an MCP form asks of a choice's items", where(at), kw)
		}
	}
	return nil
}

// titled gives a field of a multi-step form a title that names its step.
func titled(field, s jsonv.Value, step, prop string, single bool) jsonv.Value {
	if single || s.Lookup("title").Str() != "" {
		return field
	}
	field.Object().Insert(1, "title", jsonv.StringValue(step+": "+prop))
	return field
}

func where(at jsonv.Pointer) string {
	if at == "" {
		return "/"
	}
	return string(at)
}

// Answer builds the chunk's answer from a form's content, in the chunk's
// order of steps and fields.
func (f *Form) Answer(content map[string]any) (jsonv.Value, error) {
	values := map[formField]jsonv.Value{}
	for name, v := range content {
		field, ok := f.fields[name]
		if !ok {
			return jsonv.Value{}, fmt.Errorf("the form has no field %q", name)
		}
		b, err := json.Marshal(v)
		if err != nil {
			return jsonv.Value{}, fmt.Errorf("field %q: %w", name, err)
		}
		if values[field], err = jsonv.Parse(b); err != nil {
			return jsonv.Value{}, fmt.Errorf("field %q: %w", name, err)
		}
	}
	answer := jsonv.NewObject(len(values))
	for step, s := range schema.Properties(f.chunk).All() {
		if v, ok := values[formField{step: step}]; ok {
			answer.Set(step, v)
			continue
		}
		obj := jsonv.NewObject(4)
		for prop := range schema.Properties(s).All() {
			if v, ok := values[formField{step: step, prop: prop}]; ok {
				obj.Set(prop, v)
			}
		}
		if obj.Len() > 0 || slices.Contains(schema.Required(f.chunk), step) {
			answer.Set(step, obj.Value())
		}
	}
	return answer.Value(), nil
}
