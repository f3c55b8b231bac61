package schema

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/augceo/vibe/jsonv"
)

// Parse parses a JSON document read from file. A syntax error is an *Error
// naming file, the JSON path where reading stopped, and the line and column.
func Parse(file string, data []byte) (jsonv.Value, error) {
	v, err := jsonv.Parse(data)
	if err != nil {
		var se *jsonv.SyntaxError
		if errors.As(err, &se) {
			return jsonv.Value{}, &Error{File: file, Path: se.Pointer, Message: se.Error(), Err: err}
		}
		return jsonv.Value{}, &Error{File: file, Message: err.Error(), Err: err}
	}
	return v, nil
}

// ReadFile reads and parses the JSON document in the named file.
func ReadFile(name string) (jsonv.Value, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return jsonv.Value{}, &Error{File: name, Message: fmt.Sprintf("cannot read: %v", unwrapPath(err)), Err: err}
	}
	return Parse(name, data)
}

// Read reads and parses the JSON document r holds; file names it in errors.
func Read(file string, r io.Reader) (jsonv.Value, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return jsonv.Value{}, &Error{File: file, Message: fmt.Sprintf("cannot read: %v", err), Err: err}
	}
	return Parse(file, data)
}

// unwrapPath drops the file name an *os.PathError repeats.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
