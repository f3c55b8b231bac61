package replay

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/augceo/vibe/llm"
)

// batchModel is a fakeModel with a Batch API that answers every request
// of a batch at once, but the ones named in fail.
type batchModel struct {
	fakeModel
	fail    map[string]bool
	batches map[string][]llm.BatchRequest
}

func (m *batchModel) SubmitBatch(ctx context.Context, s llm.BatchSubmission) (string, error) {
	id := fmt.Sprintf("batch_%d", len(m.batches)+1)
	m.batches[id] = s.Requests
	return id, nil
}

func (m *batchModel) BatchStatus(ctx context.Context, id string) (*llm.BatchStatus, error) {
	n := len(m.batches[id])
	return &llm.BatchStatus{ID: id, Status: "completed", Ended: true, Total: n, Succeeded: n}, nil
}

func (m *batchModel) BatchResults(ctx context.Context, id string, requests []llm.BatchRequest) (map[string]llm.BatchResult, error) {
	out := map[string]llm.BatchResult{}
	for _, r := range m.batches[id] {
		if m.fail[r.ID] {
			out[r.ID] = llm.BatchResult{Error: "refused"}
			continue
		}
		resp, err := m.Complete(ctx, r.Request)
		if err != nil {
			return nil, err
		}
		out[r.ID] = llm.BatchResult{Response: resp}
	}
	return out, nil
}

func (m *batchModel) CancelBatch(ctx context.Context, id string) error { return nil }

func (m *batchModel) BatchLimits() llm.BatchLimits {
	return llm.BatchLimits{MaxRequests: 100, MaxBytes: 1 << 20}
}

// TestRecordBatches: answers read from a provider batch through a
// Recorder are recorded as direct answers are — a replay answers the same
// requests sent directly — and a failed request records nothing.
func TestRecordBatches(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	model := &batchModel{fail: map[string]bool{"r3": true}, batches: map[string][]llm.BatchRequest{}}
	rec, err := Record(model, path)
	if err != nil {
		t.Fatal(err)
	}
	api, ok := llm.BatchAPIOf(rec)
	if !ok {
		t.Fatal("a recorder of a provider with a Batch API has none")
	}
	ctx := context.Background()
	reqs := []llm.BatchRequest{{ID: "r1", Request: request("chunk1", "a")}, {ID: "r2", Request: request("chunk1", "b")}, {ID: "r3", Request: request("chunk1", "c")}}
	id, err := api.SubmitBatch(ctx, llm.BatchSubmission{Key: "k", Requests: reqs})
	if err != nil {
		t.Fatal(err)
	}
	results, err := api.BatchResults(ctx, id, reqs)
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}

	rp, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs[:2] {
		got, err := rp.Complete(ctx, r.Request)
		if err != nil {
			t.Fatalf("%s: %v", r.ID, err)
		}
		if want := results[r.ID].Response.Content; got.Content != want || !got.Replayed {
			t.Errorf("%s: replayed %q (replayed %v), read from the batch %q", r.ID, got.Content, got.Replayed, want)
		}
	}
	if _, err := rp.Complete(ctx, reqs[2].Request); err == nil {
		t.Error("the failed request r3 was recorded")
	}

	// A recorder of a provider without a Batch API has none.
	plain, err := Record(&fakeModel{}, filepath.Join(t.TempDir(), "plain.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if _, ok := llm.BatchAPIOf(plain); ok {
		t.Error("a recorder of a provider without a Batch API has one")
	}
}
