package golden

import (
	"context"
	"os"
	"testing"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
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
