package record

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// DefaultRetention is how long a Store keeps a record when its Retention
// is 0: thirty days.
const DefaultRetention = 30 * 24 * time.Hour

// ErrNoRecord is the error of a process that has no record: it never
// ended nor waited, ended before records were kept, or its record was
// pruned.
var ErrNoRecord = errors.New("no replay record")

// Store keeps records under a directory: processes/ID.json.gz for a
// process of its own, batches/BATCH/LINE.jsonl.gz for the items of a
// batch's group (one file per group, named by its first line). A nil
// Store keeps nothing.
type Store struct {
	// Dir is the directory, DATA/replay for the embedded engine's data
	// directory DATA; "" keeps nothing.
	Dir string
	// Retention is how long a record is kept (Prune); 0 means
	// DefaultRetention.
	Retention time.Duration
}

func (s *Store) retention() time.Duration {
	if s.Retention > 0 {
		return s.Retention
	}
	return DefaultRetention
}

// Keep writes recs: a process's record on its own, or the records of one
// batch group's items together. Writing the same records again (a group
// run again) replaces them. It is the local activity durable.KeepName.
func (s *Store) Keep(ctx context.Context, recs []Record) error {
	if s == nil || s.Dir == "" || len(recs) == 0 {
		return nil
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	enc := json.NewEncoder(zw)
	for i := range recs {
		if err := enc.Encode(&recs[i]); err != nil {
			return fmt.Errorf("replay record %s: %w", recs[i].ID, err)
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	var path string
	if b := recs[0].Batch; b != "" {
		path = filepath.Join(s.Dir, "batches", escape(b), fmt.Sprintf("%09d.jsonl.gz", recs[0].Line))
	} else {
		path = filepath.Join(s.Dir, "processes", escape(recs[0].ID)+".json.gz")
	}
	return writeFile(path, buf.Bytes())
}

// writeFile writes data to path whole or not at all.
func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("keep a replay record: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".keep-*")
	if err != nil {
		return fmt.Errorf("keep a replay record: %w", err)
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("keep a replay record in %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("keep a replay record in %s: %w", path, err)
	}
	return nil
}

func escape(id string) string {
	e := url.PathEscape(id)
	if strings.HasPrefix(e, ".") {
		e = "%2E" + e[1:]
	}
	return e
}

// Process returns the record of the process id (not a batch item):
// ErrNoRecord, wrapped, when there is none.
func (s *Store) Process(id string) (Record, error) {
	if s == nil || s.Dir == "" {
		return Record{}, fmt.Errorf("process %s: %w", id, ErrNoRecord)
	}
	recs, err := readFile(filepath.Join(s.Dir, "processes", escape(id)+".json.gz"))
	if errors.Is(err, fs.ErrNotExist) {
		return Record{}, fmt.Errorf("process %s: %w", id, ErrNoRecord)
	}
	if err != nil {
		return Record{}, err
	}
	return recs[0], nil
}

// Processes returns the records of every process of its own that keep
// says to keep, oldest first.
func (s *Store) Processes(keep func(*Record) bool) ([]Record, error) {
	var out []Record
	if s == nil || s.Dir == "" {
		return nil, nil
	}
	err := s.each(filepath.Join(s.Dir, "processes"), func(recs []Record) {
		for _, r := range recs {
			if keep == nil || keep(&r) {
				out = append(out, r)
			}
		}
	})
	slices.SortStableFunc(out, func(a, b Record) int { return a.Ended.Compare(b.Ended) })
	return out, err
}

// Batch returns the records of a batch's items, by line.
func (s *Store) Batch(batch string) ([]Record, error) {
	var out []Record
	if s == nil || s.Dir == "" {
		return nil, nil
	}
	err := s.each(filepath.Join(s.Dir, "batches", escape(batch)), func(recs []Record) { out = append(out, recs...) })
	slices.SortStableFunc(out, func(a, b Record) int { return a.Line - b.Line })
	return out, err
}

// each reads every record file in dir; a directory not there has none.
func (s *Store) each(dir string, f func([]Record)) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read replay records: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".gz") {
			continue
		}
		recs, err := readFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		f(recs)
	}
	return nil
}

// readFile reads a record file.
func readFile(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(bufio.NewReader(f))
	if err != nil {
		return nil, fmt.Errorf("%s: not a replay record: %w", path, err)
	}
	dec := json.NewDecoder(zr)
	var out []Record
	for n := 1; ; n++ {
		var r Record
		err := dec.Decode(&r)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: record %d: %w", path, n, err)
		}
		out = append(out, r)
	}
}

// Prune removes the records written longer ago than the retention before
// now, and the batch directories left empty; it returns how many files it
// removed.
func (s *Store) Prune(now time.Time) (int, error) {
	if s == nil || s.Dir == "" {
		return 0, nil
	}
	cut := now.Add(-s.retention())
	n := 0
	var dirs []string
	err := filepath.WalkDir(s.Dir, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, path)
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil // gone meanwhile
		}
		if info.ModTime().Before(cut) {
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return n, fmt.Errorf("prune replay records in %s: %w", s.Dir, err)
	}
	batches := filepath.Join(s.Dir, "batches")
	for _, d := range slices.Backward(dirs) {
		if filepath.Dir(d) == batches {
			_ = os.Remove(d) // only when empty
		}
	}
	return n, nil
}
