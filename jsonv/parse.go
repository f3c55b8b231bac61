package jsonv

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// SyntaxError describes malformed JSON: where it is and what was wrong.
type SyntaxError struct {
	Offset  int64   // byte offset of the error in the input
	Line    int     // 1-based line of Offset
	Column  int     // 1-based column (in bytes) of Offset
	Pointer Pointer // the JSON Pointer of the value being read
	Msg     string  // what was wrong, without position
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at line %d, column %d: %s", e.Line, e.Column, e.Msg)
}

// Parse parses one JSON value. Objects keep their member order, numbers
// their literal text. Duplicate member names, invalid UTF-8 and trailing
// data are errors, reported as a *SyntaxError; a number past what a
// float64 holds is a *RangeError.
func Parse(data []byte) (Value, error) { return ParseWithin(data, Limits{}) }

// Limits bound what ParseWithin builds from a document, so that a small or
// hostile input cannot make the parser (or what walks the result
// recursively) use more memory or stack than its caller allows. The zero
// value bounds nothing beyond the parser's own limit of 10,000 levels.
type Limits struct {
	// MaxDepth is the deepest nesting of arrays and objects: {"a": [1]}
	// nests 2 deep. 0 means no bound.
	MaxDepth int
	// MaxValues is the most values the document may hold, every object,
	// array, member value, element and scalar counted: {"a": [1]} holds 3.
	// 0 means no bound.
	MaxValues int
}

// LimitError is a document that passes a bound of Limits. The document
// may be well-formed; it is refused for its size.
type LimitError struct {
	Pointer Pointer // where parsing stopped: the value that passed the bound
	Msg     string  // which bound, and its value
}

func (e *LimitError) Error() string { return e.Msg }

// RangeError is a number past what a float64 holds (±1.8e308), such as
// 1e400: what reads it as a number would take ±1.797e308 or an infinity
// in its place, so it is refused rather than changed silently.
type RangeError struct {
	Pointer Pointer // where the number is
	Literal string  // the number as written (cut short past 40 bytes)
}

func (e *RangeError) Error() string {
	return fmt.Sprintf("number %s is out of range: beyond ±1.8e308, the most a float64 holds", e.Literal)
}

// checkRange returns a *RangeError for a number literal beyond ±MaxFloat64.
// A literal with no exponent and 308 bytes or fewer cannot be.
func checkRange(lit string, at Pointer) error {
	if len(lit) <= 308 && !strings.ContainsAny(lit, "eE") {
		return nil
	}
	if f, err := strconv.ParseFloat(lit, 64); err == nil && !math.IsInf(f, 0) {
		return nil
	}
	if len(lit) > 40 {
		lit = lit[:40] + "…"
	}
	return &RangeError{Pointer: at, Literal: lit}
}

// ParseWithin is Parse with the bounds of lim. A document past a bound is a
// *LimitError, found while parsing: the parser stops there, before it has
// built the rest.
func ParseWithin(data []byte, lim Limits) (Value, error) {
	d := &decoder{dec: jsontext.NewDecoder(bytes.NewReader(data)), lim: lim}
	v, err := d.value()
	if err == nil {
		// Anything but whitespace after the value is an error.
		end := d.dec.InputOffset()
		if _, err = d.dec.ReadToken(); err == io.EOF {
			return v, nil
		}
		end += int64(len(data[end:]) - len(bytes.TrimLeft(data[end:], " \t\r\n")))
		err = &jsontext.SyntacticError{ByteOffset: end, Err: errors.New("unexpected data after the JSON value")}
	}
	var le *LimitError
	if errors.As(err, &le) {
		return Value{}, le
	}
	var re *RangeError
	if errors.As(err, &re) {
		return Value{}, re
	}
	return Value{}, syntaxError(data, d.dec, err)
}

// Decode reads the next JSON value from dec, keeping member order and
// number literals. Errors are jsontext's, and *RangeError for a number
// past what a float64 holds.
func Decode(dec *jsontext.Decoder) (Value, error) { return (&decoder{dec: dec}).value() }

// decoder reads values from dec within lim.
type decoder struct {
	dec    *jsontext.Decoder
	lim    Limits
	values int // read so far
}

func (d *decoder) value() (Value, error) {
	dec := d.dec
	tok, err := dec.ReadToken()
	if err != nil {
		return Value{}, err
	}
	if d.values++; d.lim.MaxValues > 0 && d.values > d.lim.MaxValues {
		return Value{}, &LimitError{Pointer: Pointer(dec.StackPointer()), Msg: fmt.Sprintf("the document holds more than %d values", d.lim.MaxValues)}
	}
	switch tok.Kind() {
	case 'n':
		return Value{}, nil
	case 't', 'f':
		return BoolValue(tok.Bool()), nil
	case '"':
		return StringValue(tok.String()), nil
	case '0':
		lit := tok.String()
		if err := checkRange(lit, Pointer(dec.StackPointer())); err != nil {
			return Value{}, err
		}
		return Value{kind: KindNumber, s: lit}, nil
	case '[', '{':
		if d.lim.MaxDepth > 0 && dec.StackDepth() > d.lim.MaxDepth {
			return Value{}, &LimitError{Pointer: Pointer(dec.StackPointer()), Msg: fmt.Sprintf("arrays and objects nest more than %d levels deep", d.lim.MaxDepth)}
		}
	}
	if tok.Kind() == '[' {
		arr := []Value{}
		for dec.PeekKind() != ']' {
			e, err := d.value()
			if err != nil {
				return Value{}, err
			}
			arr = append(arr, e)
		}
		if _, err := dec.ReadToken(); err != nil {
			return Value{}, err
		}
		return Value{kind: KindArray, arr: arr}, nil
	}
	if tok.Kind() == '{' {
		o := &Object{}
		for dec.PeekKind() != '}' {
			tok, err := dec.ReadToken()
			if err != nil {
				return Value{}, err
			}
			name := tok.String() // before the next read voids tok
			m, err := d.value()
			if err != nil {
				return Value{}, err
			}
			// jsontext rejects duplicate names, so a plain append keeps names unique.
			o.members = append(o.members, Member{Name: name, Value: m})
		}
		if _, err := dec.ReadToken(); err != nil {
			return Value{}, err
		}
		return o.Value(), nil
	}
	return Value{}, fmt.Errorf("unexpected token %v", tok)
}

// syntaxError turns a jsontext error into a *SyntaxError with a line and
// column.
func syntaxError(data []byte, dec *jsontext.Decoder, err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		err = &jsontext.SyntacticError{ByteOffset: int64(len(data)), JSONPointer: dec.StackPointer(), Err: io.ErrUnexpectedEOF}
	}
	se := &SyntaxError{Msg: err.Error()}
	var je *jsontext.SyntacticError
	if errors.As(err, &je) {
		se.Offset = je.ByteOffset
		se.Pointer = Pointer(je.JSONPointer)
		se.Msg = describe(je.Err)
	}
	if se.Offset > int64(len(data)) {
		se.Offset = int64(len(data))
	}
	se.Line, se.Column = 1, 1
	for _, c := range data[:se.Offset] {
		if c == '\n' {
			se.Line++
			se.Column = 1
		} else {
			se.Column++
		}
	}
	return se
}

// describe words a jsontext error without its package prefix.
func describe(err error) string {
	switch {
	case err == nil:
		return "malformed JSON"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "unexpected end of input"
	case errors.Is(err, jsontext.ErrDuplicateName):
		return "duplicate member name"
	}
	msg := err.Error()
	for _, p := range []string{"jsontext: ", "json: "} {
		if len(msg) > len(p) && msg[:len(p)] == p {
			msg = msg[len(p):]
		}
	}
	return msg
}
