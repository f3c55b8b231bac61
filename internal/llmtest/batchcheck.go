package llmtest

import (
	"context"
	"reflect"
	"testing"

	"github.com/augceo/vibe/llm"
)

// AwaitBatch polls batch id through api until it has ended, and returns
// its last status. A poll moves a test server's batch one step (unless
// its clock is held), so 20 polls end any batch but a held one.
func AwaitBatch(t testing.TB, api llm.BatchAPI, id string) *llm.BatchStatus {
	t.Helper()
	for range 20 {
		st, err := api.BatchStatus(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if st.Ended {
			return st
		}
	}
	t.Fatalf("batch %s did not end in 20 polls", id)
	return nil
}

// CheckDirect checks that the result of each of reqs read from a batch
// (res) is the answer a direct call of the same request gets through p —
// content, usage, id and all but the latency.
func CheckDirect(t testing.TB, p llm.Provider, reqs []llm.BatchRequest, res map[string]llm.BatchResult) {
	t.Helper()
	if len(res) != len(reqs) {
		t.Fatalf("%d results, want %d: %v", len(res), len(reqs), res)
	}
	for _, r := range reqs {
		direct, err := p.Complete(context.Background(), r.Request)
		if err != nil {
			t.Fatal(err)
		}
		got := res[r.ID]
		if got.Response == nil {
			t.Fatalf("%s: %+v", r.ID, got)
		}
		direct.Latency = 0
		if !reflect.DeepEqual(*got.Response, *direct) {
			t.Errorf("%s: batch %+v, direct %+v", r.ID, *got.Response, *direct)
		}
	}
}
