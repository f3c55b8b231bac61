package jsonv

import (
	"bytes"
	"errors"
	"fmt"
	"io"

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
// data are errors, reported as a *SyntaxError.
func Parse(data []byte) (Value, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(data))
	v, err := decodeValue(dec)
	if err == nil {
		// Anything but whitespace after the value is an error.
		end := dec.InputOffset()
		if _, err = dec.ReadToken(); err == io.EOF {
			return v, nil
		}
		end += int64(len(data[end:]) - len(bytes.TrimLeft(data[end:], " \t\r\n")))
		err = &jsontext.SyntacticError{ByteOffset: end, Err: errors.New("unexpected data after the JSON value")}
	}
	return Value{}, syntaxError(data, dec, err)
}

// Decode reads the next JSON value from dec, keeping member order and
// number literals. Errors are jsontext's.
func Decode(dec *jsontext.Decoder) (Value, error) { return decodeValue(dec) }

func decodeValue(dec *jsontext.Decoder) (Value, error) {
	tok, err := dec.ReadToken()
	if err != nil {
		return Value{}, err
	}
	switch tok.Kind() {
	case 'n':
		return Value{}, nil
	case 't', 'f':
		return BoolValue(tok.Bool()), nil
	case '"':
		return StringValue(tok.String()), nil
	case '0':
		return Value{kind: KindNumber, s: tok.String()}, nil
	case '[':
		arr := []Value{}
		for dec.PeekKind() != ']' {
			e, err := decodeValue(dec)
			if err != nil {
				return Value{}, err
			}
			arr = append(arr, e)
		}
		if _, err := dec.ReadToken(); err != nil {
			return Value{}, err
		}
		return Value{kind: KindArray, arr: arr}, nil
	case '{':
		o := &Object{}
		for dec.PeekKind() != '}' {
			tok, err := dec.ReadToken()
			if err != nil {
				return Value{}, err
			}
			name := tok.String() // before the next read voids tok
			m, err := decodeValue(dec)
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
