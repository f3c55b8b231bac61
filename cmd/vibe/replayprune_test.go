package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
