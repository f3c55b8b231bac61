package record_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/replay/record"
)

func TestStore(t *testing.T) {
	ctx := context.Background()
	s := &record.Store{Dir: t.TempDir()}
	ended := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	input := jsonv.ObjectValue(jsonv.Member{Name: "z", Value: jsonv.IntValue(1)}, jsonv.Member{Name: "a", Value: jsonv.IntValue(2)})
	procs := []record.Record{
		{ID: "review-1", Process: "review", Status: "completed", Ended: ended, Input: input, Chunks: []record.Chunk{}},
		{ID: "review/2", Process: "review", Status: "failed", Ended: ended.Add(time.Hour), Chunks: []record.Chunk{}},
		{ID: "other-1", Process: "other", Status: "completed", Ended: ended.Add(-time.Hour), Chunks: []record.Chunk{}},
	}
	for _, r := range procs {
		if err := s.Keep(ctx, []record.Record{r}); err != nil {
			t.Fatal(err)
		}
	}
	group := func(first, n int) []record.Record {
		var recs []record.Record
		for line := first; line < first+n; line++ {
			recs = append(recs, record.Record{ID: "b-" + string(rune('0'+line)), Batch: "b", Line: line, Status: "completed", Chunks: []record.Chunk{}})
		}
		return recs
	}
	for _, g := range [][]record.Record{group(4, 3), group(1, 3), group(1, 3)} { // the first group kept twice: run again
		if err := s.Keep(ctx, g); err != nil {
			t.Fatal(err)
		}
	}

	tests := []struct {
		name string
		keep func(*record.Record) bool
		want []string
	}{
		{name: "all, oldest first", want: []string{"other-1", "review-1", "review/2"}},
		{name: "by process", keep: func(r *record.Record) bool { return r.Process == "review" }, want: []string{"review-1", "review/2"}},
		{name: "by status", keep: func(r *record.Record) bool { return r.Status == "failed" }, want: []string{"review/2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Processes(tc.keep)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, r := range got {
				ids = append(ids, r.ID)
			}
			if !slices.Equal(ids, tc.want) {
				t.Errorf("got %v, want %v", ids, tc.want)
			}
		})
	}
	r, err := s.Process("review-1")
	if err != nil || string(jsonv.Marshal(r.Input)) != `{"z":1,"a":2}` {
		t.Errorf("review-1: %s %v; want its input in its order", jsonv.Marshal(r.Input), err)
	}
	if _, err := s.Process("nope"); !errors.Is(err, record.ErrNoRecord) {
		t.Errorf("a process with no record: %v", err)
	}
	items, err := s.Batch("b")
	if err != nil || len(items) != 6 || items[0].Line != 1 || items[5].Line != 6 {
		t.Fatalf("the batch's items: %d %v", len(items), err)
	}

	// Prune: only what is past the retention goes.
	old := time.Now().Add(-31 * 24 * time.Hour)
	os.Chtimes(filepath.Join(s.Dir, "processes", "other-1.json.gz"), old, old)
	n, err := s.Prune(time.Now())
	if err != nil || n != 1 {
		t.Fatalf("prune removed %d, %v; want 1", n, err)
	}
	if n, err := (&record.Store{Dir: s.Dir, Retention: time.Nanosecond}).Prune(time.Now().Add(time.Second)); err != nil || n != 4 {
		t.Fatalf("prune of all removed %d, %v; want 4", n, err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir, "batches", "b")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the emptied batch directory is left: %v", err)
	}

	var none *record.Store // keeps nothing, finds nothing
	if err := none.Keep(ctx, procs); err != nil {
		t.Error(err)
	}
	if recs, err := none.Batch("b"); err != nil || recs != nil {
		t.Error(recs, err)
	}
}
