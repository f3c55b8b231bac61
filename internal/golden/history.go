package golden

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/encoding/protojson"
)

// WriteHistory writes the history of workflow id (its latest run) to path
// in Temporal's JSON, for replay tests to replay with later code
// (worker.WorkflowReplayer.ReplayWorkflowHistoryFromJSONFile).
func WriteHistory(t testing.TB, ctx context.Context, c client.Client, id, path string) {
	t.Helper()
	h := &historypb.History{}
	it := c.GetWorkflowHistory(ctx, id, "", false, 0)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		h.Events = append(h.Events, ev)
	}
	b, err := protojson.MarshalOptions{Indent: "  "}.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Histories are the recorded histories of the package under test:
// testdata/histories/*.json, which -update records again with today's
// code, and testdata/histories/VERSION/*.json, recorded with an earlier
// release and kept as they are, so that workflows started before an
// upgrade are shown to go on after it. It fails t when there are none.
func Histories(t *testing.T, pkg string) []string {
	t.Helper()
	files, err := filepath.Glob("testdata/histories/*.json")
	if err == nil {
		var kept []string
		kept, err = filepath.Glob("testdata/histories/*/*.json")
		files = append(files, kept...)
	}
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded histories (%v): run go test %s -run TestReplayHistories -update", err, pkg)
	}
	return files
}

// HistoryName names a history file in subtests: its version directory,
// if any, and its base name ("a556503/moderate.json").
func HistoryName(file string) string {
	if dir := filepath.Base(filepath.Dir(file)); dir != "histories" {
		return dir + "/" + filepath.Base(file)
	}
	return filepath.Base(file)
}

// ReplayHistories replays every history of the package pkg ("./batch")
// (Histories) with r, which has today's workflow code registered: one
// subtest per file, failing on a nondeterministic change. Each replays
// under the workflow id it ran with, its file's name (WriteHistory's path):
// a workflow derives its children's ids, its activities' keys and the
// keys of its signals from its own.
func ReplayHistories(t *testing.T, pkg string, r worker.WorkflowReplayer) {
	t.Helper()
	for _, f := range Histories(t, pkg) {
		t.Run(HistoryName(f), func(t *testing.T) {
			file, err := os.Open(f)
			if err != nil {
				t.Fatal(err)
			}
			defer file.Close()
			h, err := client.HistoryFromJSON(file, client.HistoryJSONOptions{})
			if err != nil {
				t.Fatal(err)
			}
			id := strings.TrimSuffix(filepath.Base(f), ".json")
			if err := r.ReplayWorkflowHistoryWithOptions(nil, h, worker.ReplayWorkflowHistoryOptions{OriginalExecution: workflow.Execution{ID: id, RunID: "replayed"}}); err != nil {
				t.Errorf("replay of %s: %v", f, err)
			}
		})
	}
}
