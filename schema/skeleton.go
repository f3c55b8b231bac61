package schema

import "github.com/augceo/vibe/jsonv"

// Skeleton is a placeholder value of the shape s describes, for showing a
// person what to fill in: an object with every property, the first enum
// value or the const where there is one, true, 0, [] or "…" by type.
func Skeleton(s jsonv.Value) jsonv.Value {
	if e := s.Lookup("enum").Array(); len(e) > 0 {
		return e[0]
	}
	if c, ok := s.Get("const"); ok {
		return c
	}
	if props := Properties(s); props != nil {
		o := jsonv.NewObject(props.Len())
		for name, sub := range props.All() {
			o.Set(name, Skeleton(sub))
		}
		return o.Value()
	}
	switch s.Lookup("type").Str() {
	case "boolean":
		return jsonv.BoolValue(true)
	case "integer", "number":
		return jsonv.IntValue(0)
	case "array":
		return jsonv.ArrayValue()
	}
	return jsonv.StringValue("…")
}
