package batch

import (
	"context"
	"errors"
	"fmt"
)

// InputChangedError is the error of a batch given an id that names a batch
// made from another input: running it would write that batch's results
// for these lines, and drop the lines it does not have. The digests are
// the inputs' (Digest): the one the batch's record keeps, and this one's
// ("" when it is not known before reading: stdin).
type InputChangedError struct {
	ID       string
	Recorded string
	Given    string
}

func (e *InputChangedError) Error() string {
	given := "this input's (stdin: not known before it is read; give the batch's own input file to resume it)"
	if e.Given != "" {
		given = "this input's is " + e.Given
	}
	return fmt.Sprintf("batch %s was made from another input: its input's digest is %s, %s; give another id (or none, to have one derived from the input), or the batch's own input to resume it",
		e.ID, e.Recorded, given)
}

// CheckInput refuses to run the batch opts name over an input other than
// the one its record keeps the digest of. Without both digests — a batch
// not yet made, or made from stdin, or opts without a Digest — there is
// nothing to tell the inputs apart by, and nothing is refused.
func (c *Client) CheckInput(ctx context.Context, opts Options) error {
	if opts.ID == "" || opts.Digest == "" {
		return nil
	}
	st, err := c.record(ctx, opts.ID)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("read batch %s: %w", opts.ID, err)
	case st.Digest == "" || st.Digest == opts.Digest:
		return nil
	}
	return &InputChangedError{ID: opts.ID, Recorded: st.Digest, Given: opts.Digest}
}

// RecordedDigest is the digest of the input batch id was made from, ""
// when it keeps none or there is no such batch.
func (c *Client) RecordedDigest(ctx context.Context, id string) string {
	st, err := c.record(ctx, id)
	if err != nil {
		return ""
	}
	return st.Digest
}
