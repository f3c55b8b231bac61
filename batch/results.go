package batch

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/augceo/vibe/durable"
)

// ResultsFile is a file of a batch's result lines (vibe batch --out) that
// a later run of the same batch continues: each item's line once, in
// input order, however often the runs were stopped. Create files are
// private to their owner (0600): they hold every answer.
type ResultsFile struct {
	// After is the input line of the file's last complete result line: a
	// run goes on after it (Options.After).
	After int
	// Repaired counts the lines an earlier run wrote "failed" for items
	// the batch's record says completed, rewritten; Cut is the first line
	// cut off, of a group that never started (0: none).
	Repaired, Cut int

	f *os.File
	w *bufio.Writer
}

// OpenResults opens the results file at path for batch id, creating it,
// and makes it ready for a run to go on: lines an earlier run wrote
// "failed" for items that completed — a run that lost its engine wrote
// them — are checked against the batch's record and rewritten, the file
// is cut back before a group that never started, so that this run runs
// it, and a torn last line is cut off. A file that holds lines of
// something other than a batch's results is refused, naming the line.
func (c *Client) OpenResults(ctx context.Context, path, id string) (*ResultsFile, error) {
	rf := &ResultsFile{}
	if err := c.repairResults(ctx, rf, path, id); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	keep, last, err := lastResult(f)
	if err == nil {
		err = f.Truncate(keep)
	}
	if err == nil {
		_, err = f.Seek(keep, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	rf.After, rf.f, rf.w = last, f, bufio.NewWriter(f)
	return rf, nil
}

// Rewrite empties the file, for a run that writes every result again
// (Options.RetryFailed): After is 0.
func (rf *ResultsFile) Rewrite() error {
	rf.w.Reset(rf.f)
	if err := rf.f.Truncate(0); err != nil {
		return err
	}
	_, err := rf.f.Seek(0, io.SeekStart)
	rf.After = 0
	return err
}

// Write writes result lines, buffered: Flush after each group's lines, so
// that a kill tears at most one line.
func (rf *ResultsFile) Write(p []byte) (int, error) { return rf.w.Write(p) }

// Flush writes what is buffered to the file.
func (rf *ResultsFile) Flush() error { return rf.w.Flush() }

// Close flushes and closes the file.
func (rf *ResultsFile) Close() error {
	return errors.Join(rf.w.Flush(), rf.f.Close())
}

// repairResults mends the lines of path that an earlier run wrote
// "failed" for items the batch's record says completed, and cuts the file
// back before a group that never started; the file is replaced
// atomically. Each line's group is the one the record says holds it.
func (c *Client) repairResults(ctx context.Context, rf *ResultsFile, path, id string) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) || len(data) == 0 {
		return nil
	}
	if err != nil {
		return err
	}
	groups := map[int]map[int]Result{} // group → line → the engine's result
	var b bytes.Buffer
	for _, l := range bytes.SplitAfter(data, []byte("\n")) {
		var r Result
		if !bytes.HasSuffix(l, []byte("\n")) || json.Unmarshal(l, &r) != nil || r.Status != StatusFailed || r.Line < 1 {
			b.Write(l) // OpenResults judges the rest
			continue
		}
		g, ok, err := c.groupOf(ctx, id, r.Line)
		if errors.Is(err, ErrNotFound) {
			return nil // no record to check against: the file stays as it is
		}
		if err != nil {
			return fmt.Errorf("%s: check line %d against the batch's record: %w", path, r.Line, err)
		}
		results, read := groups[g]
		if ok && !read {
			res, err := c.Group(ctx, id, g)
			if errors.Is(err, ErrNotFound) {
				ok = false
			} else if err != nil {
				return fmt.Errorf("%s: check line %d against the batch's record: %w", path, r.Line, err)
			} else {
				results = map[int]Result{}
				for _, e := range res.Results {
					results[e.Line] = e
				}
				groups[g] = results
			}
		}
		if !ok {
			// The line's group never started: this run runs it, and the
			// lines from here on are written again.
			rf.Cut = r.Line
			break
		}
		if e, found := results[r.Line]; found && e.Status == StatusCompleted {
			e.ID = cmp.Or(e.ID, r.ID)
			enc, err := json.Marshal(e)
			if err != nil {
				return err
			}
			b.Write(append(enc, '\n'))
			rf.Repaired++
			continue
		}
		b.Write(l)
	}
	if rf.Repaired == 0 && rf.Cut == 0 {
		return nil
	}
	tmp := path + ".repair"
	if err := os.WriteFile(tmp, b.Bytes(), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// groupOf is the group that holds input line line of batch id, as the
// batch's record says; ok is false when no group reported holding it (it
// never started). A batch with no record is ErrNotFound.
func (c *Client) groupOf(ctx context.Context, id string, line int) (int, bool, error) {
	if _, err := c.Status(ctx, id); err != nil {
		return 0, false, err
	}
	resp, err := durable.Query(ctx, c.temporal(), id, QueryGroup, line)
	if err != nil {
		return 0, false, fmt.Errorf("find the group of line %d: %w", line, err)
	}
	var g int
	if err := resp.Get(&g); err != nil {
		return 0, false, fmt.Errorf("find the group of line %d: %w", line, err)
	}
	return g, g >= 0, nil
}

// lastResult reads a results file: the length of its complete lines and
// the input line of the last one.
func lastResult(f *os.File) (keep int64, line int, err error) {
	r := bufio.NewReaderSize(f, 1<<20)
	var off int64
	for {
		b, err := r.ReadBytes('\n')
		if len(b) > 0 && b[len(b)-1] == '\n' {
			var res Result
			if json.Unmarshal(bytes.TrimSpace(b), &res) != nil || res.Line <= line {
				return 0, 0, fmt.Errorf("line %d is not a result line of a batch (a JSON object with a \"line\" after %d): use another file", line+1, line)
			}
			off += int64(len(b))
			keep, line = off, res.Line
		}
		if err == io.EOF {
			return keep, line, nil
		}
		if err != nil {
			return 0, 0, err
		}
	}
}
