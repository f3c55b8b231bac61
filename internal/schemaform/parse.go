package schemaform

import (
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

// Parse is the answer a posted form gives for schema s: members in the
// schema's order, an empty optional field left out (a required one too,
// so that the engine's check says it is missing, at its field). A number
// field that is not a number, or JSON text that is not JSON, is kept as
// its text, for the engine's check to name at its path.
func Parse(s jsonv.Value, form url.Values) jsonv.Value {
	v, ok := parse(s, "", true, form, 0)
	if !ok {
		return jsonv.NewObject(0).Value()
	}
	return v
}

func parse(s jsonv.Value, name string, required bool, form url.Values, depth int) (jsonv.Value, bool) {
	k := kindOf(s, required)
	if depth >= maxDepth && (k == kindObject || k == kindArray) {
		k = kindJSON
	}
	text := form.Get(name)
	switch k {
	case kindText, kindTextarea:
		if text == "" {
			return jsonv.Value{}, false
		}
		return jsonv.StringValue(text), true
	case kindNumber:
		if text == "" {
			return jsonv.Value{}, false
		}
		if n, ok := jsonv.NumberValue(strings.TrimSpace(text)); ok {
			return n, true
		}
		return jsonv.StringValue(text), true
	case kindCheckbox:
		if !slices.Contains(form[boolMarker], name) {
			return jsonv.Value{}, false
		}
		return jsonv.BoolValue(text == "true"), true
	case kindChoice, kindConst:
		if text == "" {
			return jsonv.Value{}, false
		}
		return decoded(text), true
	case kindMulti:
		vs := form[name]
		if len(vs) == 0 && !required {
			return jsonv.Value{}, false
		}
		items := make([]jsonv.Value, len(vs))
		for i, t := range vs {
			items[i] = decoded(t)
		}
		return jsonv.ArrayValue(items...), true
	case kindObject:
		o := jsonv.NewObject(0)
		req := schema.Required(s)
		for m, ms := range schema.Properties(s).All() {
			if v, ok := parse(ms, name+"/"+escape(m), slices.Contains(req, m), form, depth+1); ok {
				o.Set(m, v)
			}
		}
		return o.Value(), o.Len() > 0 || required
	case kindArray:
		var items []jsonv.Value
		for _, i := range rows(form, name) {
			if v, ok := parse(s.Lookup("items"), name+"/"+strconv.Itoa(i), true, form, depth+1); ok {
				items = append(items, v)
			}
		}
		return jsonv.ArrayValue(items...), len(items) > 0 || required
	}
	if strings.TrimSpace(text) == "" {
		return jsonv.Value{}, false
	}
	return decoded(text), true
}

// decoded is JSON text as its value, or as a string when it is not JSON.
func decoded(text string) jsonv.Value {
	if v, err := jsonv.Parse([]byte(text)); err == nil {
		return v
	}
	return jsonv.StringValue(text)
}

// rows are the indices of the rows the form posted for the array at name,
// in order.
func rows(form url.Values, name string) []int {
	var out []int
	for _, item := range form[itemMarker] {
		rest, ok := strings.CutPrefix(item, name+"/")
		if !ok {
			continue
		}
		if i, err := strconv.Atoi(rest); err == nil && i >= 0 && !slices.Contains(out, i) {
			out = append(out, i)
		}
	}
	slices.Sort(out)
	return out
}
