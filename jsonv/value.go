package jsonv

import (
	"iter"
	"math"
	"strconv"
)

// Kind is the JSON type of a Value.
type Kind uint8

// The kinds of JSON values. The zero Value is Null.
const (
	KindNull Kind = iota
	KindBool
	KindNumber
	KindString
	KindArray
	KindObject
)

var kindNames = [...]string{"null", "boolean", "number", "string", "array", "object"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Value is a JSON value. The zero Value is JSON null.
type Value struct {
	kind Kind
	b    bool    // Bool
	s    string  // String: the text; Number: the literal as written
	arr  []Value // Array
	obj  *Object // Object
}

// Member is one name/value pair of an object.
type Member struct {
	Name  string
	Value Value
}

// NullValue returns JSON null (the same as the zero Value).
func NullValue() Value { return Value{} }

// BoolValue returns a JSON boolean.
func BoolValue(b bool) Value { return Value{kind: KindBool, b: b} }

// StringValue returns a JSON string.
func StringValue(s string) Value { return Value{kind: KindString, s: s} }

// IntValue returns a JSON number holding i.
func IntValue(i int64) Value { return Value{kind: KindNumber, s: strconv.FormatInt(i, 10)} }

// FloatValue returns a JSON number holding f in its shortest form. NaN and
// infinities have no JSON form and become null.
func FloatValue(f float64) Value {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return Value{}
	}
	return Value{kind: KindNumber, s: strconv.FormatFloat(f, 'g', -1, 64)}
}

// NumberValue returns a JSON number with the literal text lit, which must be
// a valid JSON number; ok is false (and v null) when it is not.
func NumberValue(lit string) (v Value, ok bool) {
	if !validNumber(lit) {
		return Value{}, false
	}
	return Value{kind: KindNumber, s: lit}, true
}

// ArrayValue returns a JSON array of vs. The array shares vs.
func ArrayValue(vs ...Value) Value {
	if vs == nil {
		vs = []Value{}
	}
	return Value{kind: KindArray, arr: vs}
}

// ObjectValue returns a JSON object with the members in the given order. A
// later member replaces an earlier one of the same name in place.
func ObjectValue(ms ...Member) Value {
	o := NewObject(len(ms))
	for _, m := range ms {
		o.Set(m.Name, m.Value)
	}
	return o.Value()
}

// Kind returns v's JSON type.
func (v Value) Kind() Kind { return v.kind }

// IsNull reports whether v is JSON null.
func (v Value) IsNull() bool { return v.kind == KindNull }

// Bool returns v's boolean; false unless v is true.
func (v Value) Bool() bool { return v.kind == KindBool && v.b }

// Str returns the text of a JSON string, and "" for other kinds.
func (v Value) Str() string {
	if v.kind == KindString {
		return v.s
	}
	return ""
}

// Literal returns the literal text of a JSON number, and "" for other kinds.
func (v Value) Literal() string {
	if v.kind == KindNumber {
		return v.s
	}
	return ""
}

// Int returns a number's value as an int64; ok is false when v is not a
// number or not an integer that fits.
func (v Value) Int() (i int64, ok bool) {
	if v.kind != KindNumber {
		return 0, false
	}
	if i, err := strconv.ParseInt(v.s, 10, 64); err == nil {
		return i, true
	}
	f, err := strconv.ParseFloat(v.s, 64)
	if err != nil || f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
		return 0, false
	}
	return int64(f), true
}

// Float returns a number's value as a float64; ok is false when v is not a
// number.
func (v Value) Float() (f float64, ok bool) {
	if v.kind != KindNumber {
		return 0, false
	}
	f, err := strconv.ParseFloat(v.s, 64)
	return f, err == nil
}

// Array returns the elements of a JSON array (shared, not copied), and nil
// for other kinds.
func (v Value) Array() []Value {
	if v.kind == KindArray {
		return v.arr
	}
	return nil
}

// Len returns the number of elements of an array or members of an object,
// and 0 for other kinds.
func (v Value) Len() int {
	switch v.kind {
	case KindArray:
		return len(v.arr)
	case KindObject:
		return v.obj.Len()
	}
	return 0
}

// Object returns the object v holds, shared, or nil when v is not an object.
func (v Value) Object() *Object {
	if v.kind == KindObject {
		return v.obj
	}
	return nil
}

// Get returns the member name of an object; ok is false when v is not an
// object or has no such member.
func (v Value) Get(name string) (m Value, ok bool) {
	if v.kind != KindObject {
		return Value{}, false
	}
	return v.obj.Get(name)
}

// Lookup returns the member name of an object, or null when there is none.
func (v Value) Lookup(name string) Value {
	m, _ := v.Get(name)
	return m
}

// Members iterates over an object's members in order; it yields nothing for
// other kinds.
func (v Value) Members() iter.Seq2[string, Value] {
	if v.kind != KindObject {
		return func(func(string, Value) bool) {}
	}
	return v.obj.All()
}

// Clone returns a deep copy of v: changing the copy never changes v.
func (v Value) Clone() Value {
	switch v.kind {
	case KindArray:
		arr := make([]Value, len(v.arr))
		for i, e := range v.arr {
			arr[i] = e.Clone()
		}
		return Value{kind: KindArray, arr: arr}
	case KindObject:
		return v.obj.Clone().Value()
	}
	return v
}

// String returns the text of a JSON string, and v's compact JSON encoding
// for other kinds (so that %v prints something useful).
func (v Value) String() string {
	if v.kind == KindString {
		return v.s
	}
	return string(v.AppendJSON(nil))
}

// Equal reports whether a and b are the same JSON value: objects are equal
// when they have the same members whatever their order, numbers when their
// values are equal (1.0 equals 1).
func Equal(a, b Value) bool {
	if a.kind != b.kind {
		return false
	}
	switch a.kind {
	case KindNull:
		return true
	case KindBool:
		return a.b == b.b
	case KindString:
		return a.s == b.s
	case KindNumber:
		if a.s == b.s {
			return true
		}
		fa, erra := strconv.ParseFloat(a.s, 64)
		fb, errb := strconv.ParseFloat(b.s, 64)
		return erra == nil && errb == nil && fa == fb
	case KindArray:
		if len(a.arr) != len(b.arr) {
			return false
		}
		for i := range a.arr {
			if !Equal(a.arr[i], b.arr[i]) {
				return false
			}
		}
		return true
	case KindObject:
		if a.obj == b.obj {
			return true
		}
		if a.obj.Len() != b.obj.Len() {
			return false
		}
		for _, m := range a.obj.members {
			bv, ok := b.obj.Get(m.Name)
			if !ok || !Equal(m.Value, bv) {
				return false
			}
		}
		return true
	}
	return false
}

// validNumber reports whether s is a JSON number literal (RFC 8259 §6).
func validNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == j {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == j {
			return false
		}
	}
	return i == len(s)
}
