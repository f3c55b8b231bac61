package golden

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
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

// ReplayHistories replays every history under testdata/histories of the
// package pkg ("./batch") with r, which has today's workflow code
// registered: one subtest per file, failing on a nondeterministic change.
func ReplayHistories(t *testing.T, pkg string, r worker.WorkflowReplayer) {
	t.Helper()
	files, err := filepath.Glob("testdata/histories/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded histories (%v): run go test %s -run TestReplayHistories -update", err, pkg)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			if err := r.ReplayWorkflowHistoryFromJSONFile(nil, f); err != nil {
				t.Errorf("replay of %s: %v", f, err)
			}
		})
	}
}
