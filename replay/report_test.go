package replay_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/augceo/vibe/replay"
)

// TestPruneReports: the reports written longer ago than the retention go,
// with the files a SaveReport stopped midway left; the others stay. A
// directory that does not exist prunes nothing.
func TestPruneReports(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "replays")
	if ids, err := replay.PruneReports(dir, 0, time.Now()); err != nil || ids != nil {
		t.Fatalf("no directory: %v, %v", ids, err)
	}
	rep := &replay.Report{Summary: replay.Summary{Items: 1}}
	for _, id := range []string{"old-replay-1", "old-replay-2", "young-replay-3"} {
		if err := replay.SaveReport(dir, id, rep); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "old-replay-4.123.tmp"), []byte("{"), 0o600)
	os.WriteFile(filepath.Join(dir, "notes.txt"), nil, 0o600)
	long := time.Now().Add(-31 * 24 * time.Hour)
	for _, name := range []string{"old-replay-1.json", "old-replay-2.json", "old-replay-4.123.tmp", "notes.txt"} {
		if err := os.Chtimes(filepath.Join(dir, name), long, long); err != nil {
			t.Fatal(err)
		}
	}
	ids, err := replay.PruneReports(dir, 0, time.Now())
	if err != nil || !slices.Equal(ids, []string{"old-replay-1", "old-replay-2"}) {
		t.Fatalf("pruned %v, %v; want the two old reports", ids, err)
	}
	for _, id := range []string{"old-replay-1", "old-replay-2"} {
		if _, err := replay.LoadReport(dir, id); !errors.Is(err, replay.ErrNoReport) {
			t.Errorf("%s after the prune: %v", id, err)
		}
	}
	if _, err := replay.LoadReport(dir, "young-replay-3"); err != nil {
		t.Errorf("the young report: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "old-replay-4.123.tmp")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the old partial report stayed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "notes.txt")); err != nil {
		t.Errorf("a file that is no report went: %v", err)
	}
	if ids, err := replay.PruneReports(dir, time.Hour, time.Now().Add(2*time.Hour)); err != nil || !slices.Equal(ids, []string{"young-replay-3"}) {
		t.Errorf("with a retention of an hour, two hours on: %v, %v", ids, err)
	}
}
