package schema

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/augceo/vibe/jsonv"
)

// Error is a problem at one place of a JSON document.
type Error struct {
	// File names the document: a path as the user gave it, a registry URI,
	// "<stdin>", or "<pipeline>" for an expression.
	File string
	// Path is the JSON Pointer of the offending value inside File.
	Path jsonv.Pointer
	// Line and Column (1-based) locate the error instead of Path in inputs
	// that are not JSON, such as a pipeline expression.
	Line, Column int
	// Message says what is wrong and, where it helps, what was expected.
	Message string
	// Err is the underlying cause, if any.
	Err error
}

// Errorf returns an *Error at file and path with a formatted message. A %w
// verb in format sets Err.
func Errorf(file string, path jsonv.Pointer, format string, args ...any) *Error {
	wrapped := fmt.Errorf(format, args...)
	e := &Error{File: file, Path: path, Message: wrapped.Error()}
	e.Err = errors.Unwrap(wrapped)
	return e
}

// Error prints the error as "FILE: /json/path: message"; the whole document
// is shown as "/". An error located by line and column prints as
// "FILE:LINE:COLUMN: message". Control and invisible characters in the
// file name and the path (a property named with NUL or a bidirectional
// control) are printed as escapes, so the line reads as it is.
func (e *Error) Error() string {
	file := escapeInvisible(e.File)
	if file == "" {
		file = "<input>"
	}
	if e.Path == "" && e.Line > 0 {
		return fmt.Sprintf("%s:%d:%d: %s", file, e.Line, e.Column, e.Message)
	}
	return file + ": " + escapeInvisible(e.Path.String()) + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// ErrorList is a list of located errors, reported together: Vibe's commands
// print every error of an input, not only the first. The zero ErrorList is
// empty and ready to use.
type ErrorList []*Error

// Add appends an error at file and path.
func (l *ErrorList) Add(file string, path jsonv.Pointer, format string, args ...any) {
	*l = append(*l, Errorf(file, path, format, args...))
}

// Append appends err: the errors of an ErrorList or an *Error as they are;
// anything else located at file and the whole document. nil is ignored.
func (l *ErrorList) Append(file string, err error) {
	if err == nil {
		return
	}
	*l = append(*l, Errors(err, file)...)
}

// Len returns the number of errors.
func (l ErrorList) Len() int { return len(l) }

// Sort orders the errors by file, then path, then message, and drops exact
// duplicates.
func (l *ErrorList) Sort() {
	slices.SortStableFunc(*l, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Path, b.Path), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column), cmp.Compare(a.Message, b.Message))
	})
	*l = slices.CompactFunc(*l, func(a, b *Error) bool {
		return a.File == b.File && a.Path == b.Path && a.Line == b.Line && a.Column == b.Column && a.Message == b.Message
	})
}

// Err returns l as an error, or nil when l is empty.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l
}

// Error prints one error per line.
func (l ErrorList) Error() string {
	var b strings.Builder
	for i, e := range l {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// Unwrap returns the errors of the list, for errors.Is and errors.As.
func (l ErrorList) Unwrap() []error {
	errs := make([]error, len(l))
	for i, e := range l {
		errs[i] = e
	}
	return errs
}

// Errors flattens err into located errors: an ErrorList's errors, an
// *Error found in the chain, or else err itself located at file and the
// whole document.
func Errors(err error, file string) []*Error {
	if err == nil {
		return nil
	}
	var list ErrorList
	if errors.As(err, &list) {
		return list
	}
	var e *Error
	if errors.As(err, &e) {
		return []*Error{e}
	}
	return []*Error{{File: file, Message: err.Error(), Err: err}}
}
