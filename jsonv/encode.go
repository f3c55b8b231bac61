package jsonv

import (
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// AppendJSON appends v's compact JSON encoding to dst. Member order and
// number literals are kept; strings are escaped only where JSON requires it
// (non-ASCII text stays as is).
func (v Value) AppendJSON(dst []byte) []byte {
	return appendValue(dst, v, "", 0)
}

// Marshal returns v's compact JSON encoding.
func Marshal(v Value) []byte { return v.AppendJSON(nil) }

// MarshalIndent returns v's JSON encoding with each member and element on its
// own line, indented by indent per level, as encoding/json.MarshalIndent
// does; empty objects and arrays stay {} and [].
func MarshalIndent(v Value, indent string) []byte {
	return appendValue(nil, v, indent, 0)
}

// MarshalJSON implements json.Marshaler.
func (v Value) MarshalJSON() ([]byte, error) { return v.AppendJSON(nil), nil }

// UnmarshalJSON implements json.Unmarshaler; it keeps member order.
func (v *Value) UnmarshalJSON(data []byte) error {
	p, err := Parse(data)
	if err != nil {
		return err
	}
	*v = p
	return nil
}

func appendValue(dst []byte, v Value, indent string, depth int) []byte {
	switch v.kind {
	case KindNull:
		return append(dst, "null"...)
	case KindBool:
		if v.b {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case KindNumber:
		return append(dst, v.s...)
	case KindString:
		return appendString(dst, v.s)
	case KindArray:
		if len(v.arr) == 0 {
			return append(dst, "[]"...)
		}
		dst = append(dst, '[')
		for i, e := range v.arr {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = newline(dst, indent, depth+1)
			dst = appendValue(dst, e, indent, depth+1)
		}
		dst = newline(dst, indent, depth)
		return append(dst, ']')
	case KindObject:
		if v.obj.Len() == 0 {
			return append(dst, "{}"...)
		}
		dst = append(dst, '{')
		for i, m := range v.obj.members {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = newline(dst, indent, depth+1)
			dst = appendString(dst, m.Name)
			dst = append(dst, ':')
			if indent != "" {
				dst = append(dst, ' ')
			}
			dst = appendValue(dst, m.Value, indent, depth+1)
		}
		dst = newline(dst, indent, depth)
		return append(dst, '}')
	}
	return append(dst, "null"...)
}

func newline(dst []byte, indent string, depth int) []byte {
	if indent == "" {
		return dst
	}
	dst = append(dst, '\n')
	for range depth {
		dst = append(dst, indent...)
	}
	return dst
}

func appendString(dst []byte, s string) []byte {
	out, err := jsontext.AppendQuote(dst, s)
	if err != nil {
		// Only invalid UTF-8 fails; a Value built from Go may hold some.
		out, _ = jsontext.AppendQuote(dst, strings.ToValidUTF8(s, "\uFFFD"))
	}
	return out
}
