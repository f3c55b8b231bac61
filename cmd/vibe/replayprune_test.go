package main

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/augceo/vibe"
	"github.com/augceo/vibe/replay/record"
)

// TestReplayPruneReports: vibe replay --prune removes the replay reports
// in DATA/replays older than the retention, with the records, and names
// them; the younger stay.
func TestReplayPruneReports(t *testing.T) {
	t.Parallel() // no engine: the prune reads and removes files of its own data directory
	data := t.TempDir()
	files := map[string]time.Duration{ // age
		"replay/processes/p-old.json.gz":   40 * 24 * time.Hour,
		"replay/processes/p-new.json.gz":   time.Hour,
		"replays/moderate-replay-old.json": 40 * 24 * time.Hour,
		"replays/moderate-replay-new.json": time.Hour,
	}
	for name, age := range files {
		p := filepath.Join(data, name)
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(-age)
		os.Chtimes(p, at, at)
	}
	status, _, stderr := run(t, "", "replay", "--prune", "--data", data)
	if status != exitOK || !strings.Contains(stderr, "vibe: pruned 1 replay files (records and kept answers) older than 720h0m0s") ||
		!strings.Contains(stderr, "vibe: pruned 1 replay reports older than 720h0m0s from "+filepath.Join(data, "replays")+": moderate-replay-old\n") {
		t.Fatalf("--prune: status %d\n%s", status, stderr)
	}
	for name, age := range files {
		_, err := os.Stat(filepath.Join(data, name))
		if gone := errors.Is(err, os.ErrNotExist); gone != (age > 30*24*time.Hour) {
			t.Errorf("%s, %s old: gone %v (%v)", name, age, gone, err)
		}
	}
}

// TestWorkerPrunesReports: a command that starts a worker prunes the
// replays' reports past the records' retention, as it prunes the records.
func TestWorkerPrunesReports(t *testing.T) {
	t.Parallel() // no engine: the runtime is only its records' store
	data := t.TempDir()
	reports := filepath.Join(data, "replays")
	os.MkdirAll(reports, 0o700)
	for name, age := range map[string]time.Duration{"old.json": 40 * 24 * time.Hour, "new.json": time.Hour, "half.json.tmp": 40 * 24 * time.Hour} {
		p := filepath.Join(reports, name)
		os.WriteFile(p, []byte("{}"), 0o600)
		at := time.Now().Add(-age)
		os.Chtimes(p, at, at)
	}
	pruneReports(&vibe.Runtime{Records: &record.Store{Dir: filepath.Join(data, "replay")}}, nil)
	entries, _ := os.ReadDir(reports)
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if !slices.Equal(left, []string{"new.json"}) {
		t.Errorf("left in DATA/replays: %v, want [new.json]", left)
	}
	pruneReports(&vibe.Runtime{}, nil) // no records kept: nothing to do, no panic
}
