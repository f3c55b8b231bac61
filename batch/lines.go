package batch

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/jsonv"
)

// MaxLineSize bounds one input line: what one process start may carry.
const MaxLineSize = durable.MaxPayloadSize

// lineReader reads a batch's input line by line, never more of the
// underlying reader than the line it returns needs (bufio fills its
// buffer with one Read at a time).
type lineReader struct {
	r    *bufio.Reader
	file string
	line int
}

func newLineReader(r io.Reader, file string) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), file: file}
}

// next reads the next item: nil at the end of the input; blank lines are
// skipped, their numbers kept.
func (lr *lineReader) next() (*Item, error) {
	for {
		raw, err := lr.readLine()
		if raw == nil && err != nil {
			if errors.Is(err, io.EOF) {
				return nil, nil
			}
			return nil, fmt.Errorf("%s: line %d: %w", lr.file, lr.line+1, err)
		}
		lr.line++
		if errors.Is(err, errLong) {
			return &Item{Line: lr.line, Error: fmt.Sprintf("%s:%d: the line is longer than %d bytes", lr.file, lr.line, MaxLineSize)}, nil
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		it := ParseLine(raw, lr.line)
		if it.Error != "" {
			it.Error = fmt.Sprintf("%s:%d: %s", lr.file, lr.line, it.Error)
		}
		return &it, nil
	}
}

var errLong = errors.New("line too long")

// pointerText is p as a line's errors name a JSON path: "/" for the whole
// line.
func pointerText(p jsonv.Pointer) string {
	if p == "" {
		return "/"
	}
	return string(p)
}

// valid calls f with each item of the rest of the input that reads (a
// line that does not, such as one that is no JSON, is passed over), and
// returns the first error reading the input.
func (lr *lineReader) valid(f func(Item)) error {
	for {
		it, err := lr.next()
		if err != nil || it == nil {
			return err
		}
		if it.Error == "" {
			f(*it)
		}
	}
}

// readLine returns one line without its newline; a line past MaxLineSize
// is read to its end and dropped, with errLong.
func (lr *lineReader) readLine() ([]byte, error) {
	var buf []byte
	long := false
	for {
		chunk, err := lr.r.ReadSlice('\n')
		if !long {
			if len(buf)+len(chunk) > MaxLineSize+1 {
				long, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil && (len(buf) > 0 || long):
			err = nil // the last line has no newline
		case err != nil:
			return nil, err
		}
		if long {
			return []byte{}, errLong
		}
		return bytes.TrimSuffix(bytes.TrimSuffix(buf, []byte("\n")), []byte("\r")), nil
	}
}

// ParseLine reads one input line of a batch: what POST /v1/processes
// takes without the process — {"prompt": …, "input": …} — or a bare JSON
// string, the prompt. A line that is neither comes back with Error set,
// naming the JSON path.
func ParseLine(raw []byte, line int) Item {
	it := Item{Line: line}
	v, err := jsonv.Parse(raw)
	if re, ok := errors.AsType[*jsonv.RangeError](err); ok {
		it.Error = fmt.Sprintf("%s: %v", pointerText(re.Pointer), re)
		return it
	}
	if err != nil {
		it.Error = fmt.Sprintf("/: not JSON: %v", err)
		return it
	}
	switch v.Kind() {
	case jsonv.KindString:
		it.Prompt = v.Str()
		return it
	case jsonv.KindObject:
	default:
		it.Error = fmt.Sprintf("/: a line is an object {\"prompt\", \"input\"} or a string (the prompt), not %s", v.Kind())
		return it
	}
	for name, m := range v.Members() {
		at := string(jsonv.PointerTo(name))
		switch name {
		case "prompt":
			if m.Kind() != jsonv.KindString {
				it.Error = fmt.Sprintf("%s: must be a string, not %s", at, m.Kind())
				return it
			}
			it.Prompt = m.Str()
		case "input":
			it.Input = m
		default:
			it.Error = fmt.Sprintf("%s: unknown field %q (want prompt, input)", at, name)
			return it
		}
	}
	return it
}
