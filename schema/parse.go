package schema

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/augceo/vibe/jsonv"
)

// Bounds on one document: a schema, a process, a Vessel, a stored Request,
// an input. Every document Vibe reads goes through Parse, so these hold for
// files, standard input, registry documents and delegates alike; a document
// past one is refused with an error naming the file (and, for depth and
// values, the JSON path where it passed the bound) before the rest of it is
// built.
const (
	// MaxBytes bounds a document's size: 4 MiB. A process travels to the
	// engine inside its workflow's input, which Temporal caps at 2 MB, and
	// the largest example schema is a few kilobytes; twice the engine's cap
	// refuses nothing that could run, while a device such as /dev/zero or a
	// mistaken multi-gigabyte file is refused at once.
	MaxBytes = 4 << 20
	// MaxDepth bounds how deep arrays and objects nest: 64 levels. A model
	// provider takes at most 10 levels of nested objects in a schema
	// (OpenAI), each of which is two JSON levels (the schema and its
	// "properties"); 64 is three times that, and keeps every recursive walk
	// of compose and compile shallow.
	MaxDepth = 64
	// MaxValues bounds the values a document holds, every object, array,
	// member and scalar counted: 1,048,576, the same bound as the values
	// composition may inline (compose.MaxInlined). A parsed value costs
	// about a hundred bytes, so a document within MaxBytes but made of tiny
	// values ("[0,0,0,…") stays near 100 MB instead of 400.
	MaxValues = 1 << 20
)

// limits are the bounds Parse applies.
var limits = jsonv.Limits{MaxDepth: MaxDepth, MaxValues: MaxValues}

// Parse parses a JSON document read from file. A syntax error is an *Error
// naming file, the JSON path where reading stopped, and the line and column;
// a document past MaxBytes, MaxDepth or MaxValues is an *Error naming file
// and the bound.
func Parse(file string, data []byte) (jsonv.Value, error) {
	if len(data) > MaxBytes {
		return jsonv.Value{}, tooLarge(file, int64(len(data)))
	}
	v, err := jsonv.ParseWithin(data, limits)
	if err != nil {
		var se *jsonv.SyntaxError
		var le *jsonv.LimitError
		var re *jsonv.RangeError
		switch {
		case errors.As(err, &re):
			return jsonv.Value{}, &Error{File: file, Path: re.Pointer, Message: re.Error(), Err: err}
		case errors.As(err, &se):
			return jsonv.Value{}, &Error{File: file, Path: se.Pointer, Message: se.Error(), Err: err}
		case errors.As(err, &le):
			return jsonv.Value{}, &Error{File: file, Path: le.Pointer, Message: "too large: " + le.Msg + ", over the limit for one document", Err: err}
		}
		return jsonv.Value{}, &Error{File: file, Message: err.Error(), Err: err}
	}
	return v, nil
}

// tooLarge is the error for a document past MaxBytes; size is its size,
// or -1 when it was cut short.
func tooLarge(file string, size int64) *Error {
	msg := fmt.Sprintf("over the limit of %d bytes (4 MiB) for one document", MaxBytes)
	if size >= 0 {
		msg = fmt.Sprintf("%d bytes, %s", size, msg)
	}
	return &Error{File: file, Message: "too large: " + msg}
}

// ReadFile reads and parses the JSON document in the named file. Only a
// regular file or a pipe is read: a directory or a device is refused at
// once, a regular file larger than MaxBytes without reading it, and a pipe
// as soon as it passes MaxBytes.
//
// A named pipe is opened without waiting for a writer, which would be for
// ever when none comes: one that has no writer then reads as empty, and
// the error says so.
func ReadFile(name string) (jsonv.Value, error) {
	flag := os.O_RDONLY
	fi, err := os.Stat(name)
	fifo := err == nil && fi.Mode()&fs.ModeNamedPipe != 0
	if fifo {
		flag |= syscall.O_NONBLOCK
	}
	f, err := os.OpenFile(name, flag, 0)
	if err != nil {
		return jsonv.Value{}, &Error{File: name, Message: fmt.Sprintf("cannot read: %v", unwrapPath(err)), Err: err}
	}
	defer f.Close()
	if fifo {
		// A first byte, or the end: a pipe that no one has opened to
		// write ends at once.
		var first [1]byte
		if n, _ := io.ReadFull(f, first[:]); n == 0 {
			return jsonv.Value{}, &Error{File: name, Message: "cannot read: it is a named pipe that no one writes to (open it for writing before reading it)"}
		}
		return Read(name, io.MultiReader(bytes.NewReader(first[:]), f))
	}
	return readFile(name, f)
}

// ReadFileFS is ReadFile for the file name of fsys; file names it in
// errors. An error for a file that does not exist wraps fs.ErrNotExist.
func ReadFileFS(fsys fs.FS, name, file string) (jsonv.Value, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return jsonv.Value{}, &Error{File: file, Message: fmt.Sprintf("cannot read: %v", unwrapPath(err)), Err: err}
	}
	defer f.Close()
	return readFile(file, f)
}

// readFile checks what f is and reads it within MaxBytes.
func readFile(file string, f fs.File) (jsonv.Value, error) {
	fi, err := f.Stat()
	if err != nil {
		return jsonv.Value{}, &Error{File: file, Message: fmt.Sprintf("cannot read: %v", unwrapPath(err)), Err: err}
	}
	switch mode := fi.Mode(); {
	case mode.IsDir():
		return jsonv.Value{}, &Error{File: file, Message: "cannot read: it is a directory, not a file"}
	case mode.IsRegular():
		if fi.Size() > MaxBytes {
			return jsonv.Value{}, tooLarge(file, fi.Size())
		}
	case mode&fs.ModeNamedPipe == 0:
		// A device (/dev/zero, a terminal) or a socket: no document has
		// an end there, or one can arrive without a person typing it.
		return jsonv.Value{}, &Error{File: file, Message: fmt.Sprintf("cannot read: it is %s, not a file (only regular files and pipes are read)", kind(mode))}
	}
	return Read(file, f)
}

func kind(mode fs.FileMode) string {
	switch {
	case mode&fs.ModeCharDevice != 0, mode&fs.ModeDevice != 0:
		return "a device"
	case mode&fs.ModeSocket != 0:
		return "a socket"
	}
	return "a special file"
}

// Read reads and parses the JSON document r holds; file names it in errors.
// It reads at most MaxBytes: a larger document is refused once that much
// has arrived.
func Read(file string, r io.Reader) (jsonv.Value, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxBytes+1))
	if err != nil {
		return jsonv.Value{}, &Error{File: file, Message: fmt.Sprintf("cannot read: %v", unwrapPath(err)), Err: err}
	}
	if len(data) > MaxBytes {
		return jsonv.Value{}, tooLarge(file, -1)
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
