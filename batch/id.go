package batch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"

	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/internal/wfid"
	"github.com/augceo/vibe/jsonv"
)

// ID is the id of the batch that runs the process opts name over the
// input of digest (a Digest's Sum): the process's name, then a hash of
// what makes the batch's results — the compiled program (so that a schema
// edited under the same URI is another batch), the system text, the
// prompt of items that give none — and of the input. What only shapes how
// the work is done does not enter it: K (Options.Size), the concurrency,
// how the calls are sent (CallOptions), a name that labels the process.
// So the same process over the same items is the same batch from the
// command line and from POST /v1/batches, however each is run, and running
// it again resumes it instead of paying for its calls again.
func (c *Client) ID(ctx context.Context, opts Options, digest string) (string, error) {
	opts.Process.Name = "" // a label, not what the batch is
	start, err := c.prepare(ctx, opts)
	if err != nil {
		return "", err
	}
	return idOf(start, digest)
}

// idOf is ID of the prepared process start (prepared without a name of
// its own: its name is the process's).
func idOf(start durable.Start, digest string) (string, error) {
	program, err := json.Marshal(start.Program)
	if err != nil {
		return "", fmt.Errorf("batch id: %w", err)
	}
	h := sha256.New()
	for _, part := range [][]byte{program, []byte(start.System), []byte(start.Prompt), []byte(digest)} {
		// Each part with its length first: no two different lists of parts
		// hash alike.
		fmt.Fprintf(h, "%d:", len(part))
		h.Write(part)
	}
	return wfid.Slug(start.Name, "batch") + "-" + hex.EncodeToString(h.Sum(nil))[:12], nil
}

// Digest hashes a batch's input as the batch reads it, line by line, so
// that the same items give the same digest however they were written: a
// line that is JSON counts as its compact form (member order and number
// literals kept), a blank line as empty (it keeps its number: an item's
// id is its line's) unless no item follows it, anything else as it is;
// "\r\n" ends a line as "\n" does. It is an io.Writer: copy the input into it (as it is spooled, or
// read a file once before the run), then Sum.
type Digest struct {
	h     hash.Hash
	line  []byte // the line being read, up to MaxLineSize bytes
	long  bool   // the line is past MaxLineSize: its bytes go to h as they come
	blank int    // blank lines read and not yet hashed: they count once a line follows
}

// NewDigest returns an empty Digest.
func NewDigest() *Digest { return &Digest{h: sha256.New()} }

// Write takes the next bytes of the input.
func (d *Digest) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		switch {
		case d.long:
			d.h.Write(chunk)
		case len(d.line)+len(chunk) > MaxLineSize:
			// No item: hashed as it is, without holding it.
			d.long = true
			d.flushBlank()
			d.h.Write(d.line)
			d.h.Write(chunk)
			d.line = d.line[:0]
		default:
			d.line = append(d.line, chunk...)
		}
		if i < 0 {
			break
		}
		d.endLine()
		p = p[i+1:]
	}
	return n, nil
}

// endLine hashes the line read, in its canonical form.
func (d *Digest) endLine() {
	defer func() { d.line, d.long = d.line[:0], false }()
	if !d.long {
		line := bytes.TrimSuffix(d.line, []byte("\r"))
		if len(bytes.TrimSpace(line)) == 0 {
			d.blank++
			return
		}
		d.flushBlank()
		if v, err := jsonv.Parse(line); err == nil {
			d.h.Write(jsonv.Marshal(v))
		} else {
			d.h.Write(line)
		}
	}
	d.h.Write([]byte{'\n'})
}

// flushBlank hashes the blank lines before a line that follows them.
func (d *Digest) flushBlank() {
	for ; d.blank > 0; d.blank-- {
		d.h.Write([]byte{'\n'})
	}
}

// Sum is the digest of the input written so far, a last line without its
// newline included, in hex.
func (d *Digest) Sum() string {
	if len(d.line) > 0 || d.long {
		d.endLine()
	}
	return hex.EncodeToString(d.h.Sum(nil))
}

// InputDigest reads r to its end and returns its Digest.
func InputDigest(r io.Reader) (string, error) {
	d := NewDigest()
	if _, err := io.Copy(d, r); err != nil {
		return "", err
	}
	return d.Sum(), nil
}
