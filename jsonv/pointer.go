package jsonv

import (
	"errors"
	"fmt"
	"iter"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// Pointer is an RFC 6901 JSON Pointer: "" is the whole value, "/a/0/b~1c"
// is member "b/c" of element 0 of member "a".
type Pointer string

// ParsePointer checks that s is a JSON Pointer ("" or starting with "/",
// "~" only in "~0" and "~1").
func ParsePointer(s string) (Pointer, error) {
	if !jsontext.Pointer(s).IsValid() {
		if s != "" && s[0] != '/' {
			return "", fmt.Errorf("JSON pointer %q does not start with \"/\"", s)
		}
		return "", fmt.Errorf("JSON pointer %q has a \"~\" not followed by 0 or 1, or is not UTF-8", s)
	}
	return Pointer(s), nil
}

// PointerTo builds a pointer from unescaped reference tokens.
func PointerTo(tokens ...string) Pointer {
	var p Pointer
	for _, t := range tokens {
		p = p.Append(t)
	}
	return p
}

// Append returns p extended by the unescaped reference token tok.
func (p Pointer) Append(tok string) Pointer {
	return Pointer(jsontext.Pointer(p).AppendToken(tok))
}

// AppendIndex returns p extended by an array index.
func (p Pointer) AppendIndex(i int) Pointer {
	return p + "/" + Pointer(strconv.Itoa(i))
}

// Tokens iterates over p's unescaped reference tokens.
func (p Pointer) Tokens() iter.Seq[string] { return jsontext.Pointer(p).Tokens() }

// Parent returns p without its last token; the parent of "" is "".
func (p Pointer) Parent() Pointer { return Pointer(jsontext.Pointer(p).Parent()) }

// Last returns p's last unescaped token, and "" for the whole value.
func (p Pointer) Last() string { return jsontext.Pointer(p).LastToken() }

// String returns p as written, and "/" for the whole value so that an error
// line never shows an empty path.
func (p Pointer) String() string {
	if p == "" {
		return "/"
	}
	return string(p)
}

// ErrNotFound is wrapped by the errors of At and Set when a pointer leads
// nowhere.
var ErrNotFound = errors.New("not found")

// At returns the value p points to inside v.
func (v Value) At(p Pointer) (Value, error) {
	cur := v
	var at Pointer
	for tok := range p.Tokens() {
		next, err := step(cur, tok)
		if err != nil {
			return Value{}, fmt.Errorf("%s: %w", at.Append(tok), err)
		}
		cur, at = next, at.Append(tok)
	}
	return cur, nil
}

func step(v Value, tok string) (Value, error) {
	switch v.kind {
	case KindObject:
		if m, ok := v.obj.Get(tok); ok {
			return m, nil
		}
		return Value{}, fmt.Errorf("no member %q: %w", tok, ErrNotFound)
	case KindArray:
		i, err := arrayIndex(tok, len(v.arr))
		if err != nil {
			return Value{}, err
		}
		return v.arr[i], nil
	}
	return Value{}, fmt.Errorf("cannot index a %s: %w", v.kind, ErrNotFound)
}

func arrayIndex(tok string, n int) (int, error) {
	i, err := strconv.Atoi(tok)
	if err != nil || i < 0 || (len(tok) > 1 && tok[0] == '0') {
		return 0, fmt.Errorf("%q is not an array index: %w", tok, ErrNotFound)
	}
	if i >= n {
		return 0, fmt.Errorf("index %d out of range (length %d): %w", i, n, ErrNotFound)
	}
	return i, nil
}

// Set puts x at p inside root and returns the new root. Objects on the way
// are changed in place (they are shared); a missing last object member is
// added, "-" as the last token appends to an array. Every container on the
// way must exist. Set with p == "" returns x.
func Set(root Value, p Pointer, x Value) (Value, error) {
	if p == "" {
		return x, nil
	}
	parent, err := root.At(p.Parent())
	if err != nil {
		return root, err
	}
	last := p.Last()
	switch parent.kind {
	case KindObject:
		parent.obj.Set(last, x)
		return root, nil
	case KindArray:
		if last == "-" {
			// Appending may move the array, so the parent's own parent
			// must point at the new slice.
			return Set(root, p.Parent(), ArrayValue(append(parent.arr, x)...))
		}
		i, err := arrayIndex(last, len(parent.arr))
		if err != nil {
			return root, fmt.Errorf("%s: %w", p, err)
		}
		parent.arr[i] = x
		return root, nil
	}
	return root, fmt.Errorf("%s: cannot set a member of a %s: %w", p.Parent(), parent.kind, ErrNotFound)
}

// SetAll is Set that first adds the objects missing on the way, as
// os.MkdirAll adds directories: a missing member on the way becomes an empty
// object. A member on the way that exists and is not an object is an error
// wrapping ErrNotFound; nothing is replaced. Arrays on the way are not
// entered.
func SetAll(root Value, p Pointer, x Value) (Value, error) {
	if p == "" {
		return x, nil
	}
	cur, at := root, Pointer("")
	for tok := range p.Parent().Tokens() {
		if cur.kind != KindObject {
			return root, fmt.Errorf("%s: %s, not an object: %w", at, cur.kind, ErrNotFound)
		}
		next, ok := cur.obj.Get(tok)
		if !ok {
			next = NewObject(1).Value()
			cur.obj.Set(tok, next)
		}
		cur, at = next, at.Append(tok)
	}
	if cur.kind != KindObject {
		return root, fmt.Errorf("%s: %s, not an object: %w", at, cur.kind, ErrNotFound)
	}
	cur.obj.Set(p.Last(), x)
	return root, nil
}

// SkipChildren, returned by a Walk function, skips the members or elements
// of the value just visited.
//
//lint:ignore ST1012 a sentinel that is no failure, named like fs.SkipDir
var SkipChildren = errors.New("skip children")

// Walk calls fn for v and then, depth first in document order, for every
// member and element inside it, with its pointer relative to v. An error
// from fn stops the walk and is returned, except SkipChildren.
func Walk(v Value, fn func(p Pointer, v Value) error) error {
	err := walk("", v, fn)
	if err == SkipChildren {
		return nil
	}
	return err
}

func walk(p Pointer, v Value, fn func(Pointer, Value) error) error {
	if err := fn(p, v); err != nil {
		return err
	}
	switch v.kind {
	case KindObject:
		for _, m := range v.obj.members {
			if err := walk(p.Append(m.Name), m.Value, fn); err != nil && err != SkipChildren {
				return err
			}
		}
	case KindArray:
		for i, e := range v.arr {
			if err := walk(p.AppendIndex(i), e, fn); err != nil && err != SkipChildren {
				return err
			}
		}
	}
	return nil
}

// Pick returns a new object that holds, for each pointer, a copy of the
// value v has there, at that same place and with the objects on the way:
// Pick({"a": {"b": 1, "c": 2}, "d": 3}, "/a/b") is {"a": {"b": 1}}. A
// pointer v has no value at is an error naming it.
func Pick(v Value, ps ...Pointer) (Value, error) {
	out := NewObject(len(ps)).Value()
	for _, p := range ps {
		x, err := v.At(p)
		if err != nil {
			return Value{}, err
		}
		if _, err := SetAll(out, p, x.Clone()); err != nil {
			return Value{}, err
		}
	}
	return out, nil
}
