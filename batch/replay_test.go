package batch_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/worker"

	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/internal/golden"
	"github.com/augceo/vibe/internal/llmtest"
	"github.com/augceo/vibe/process"
)

// TestReplayHistories replays the group and batch-record histories
// recorded under testdata/histories with today's workflow code: a change
// that would make running batches nondeterministic after an upgrade fails
// here. Run with -update to record them again on the embedded engine.
func TestReplayHistories(t *testing.T) {
	if golden.Update() {
		recordHistories(t)
	}
	r := worker.NewWorkflowReplayer()
	batch.RegisterWorkflows(r, nil)
	process.RegisterWorkflows(r, nil)
	golden.ReplayHistories(t, "./batch", r)
}

// recordHistories runs four batches on the embedded engine — the moderate
// process over six comments and a line that is not JSON, in groups of
// four; the review process, whose person's step one item has refused
// before the four are answered; moderate again through the provider's
// Batch API; and review again, cancelled while its items wait — and
// writes their groups', records' and provider batches' histories.
func recordHistories(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	model := llmtest.NewServer(t, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{})
	c := stack(t, model.URL, (&recorder{}).actions())
	if err := os.MkdirAll("testdata/histories", 0o755); err != nil {
		t.Fatal(err)
	}
	save := func(id string) {
		t.Helper()
		if err := c.Processes.Temporal.GetWorkflow(ctx, id, "").Get(ctx, nil); err != nil {
			t.Fatal(err)
		}
		golden.WriteHistory(t, ctx, c.Processes.Temporal, id, filepath.Join("testdata/histories", id+".json"))
	}
	input := llmtest.Comments(3) + "{not json\n" + llmtest.Comments(6)[len(llmtest.Comments(3)):]
	if _, err := c.Run(ctx, strings.NewReader(input), func(batch.Result) error { return nil },
		batch.Options{Process: moderate(t), ID: "moderate", Size: 4}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"moderate", batch.GroupID("moderate", 0), batch.GroupID("moderate", 1)} {
		save(id)
	}

	review := reviewProcess(t)
	done := make(chan error, 1)
	go func() {
		_, err := c.Run(ctx, strings.NewReader(llmtest.Comments(4)), func(batch.Result) error { return nil }, batch.Options{Process: review, ID: "review", Size: 4})
		done <- err
	}()
	for line := 1; line <= 4; line++ {
		id := batch.ItemID("review", line)
		for {
			info, err := c.Processes.Get(ctx, id)
			if err == nil && info.Status == process.Waiting {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if line == 2 {
			if _, err := c.Processes.Answer(ctx, id, mustParse(t, `{"confirm":{"approve":"maybe"}}`)); err == nil {
				t.Fatal("a bad answer was accepted")
			}
		}
		if _, err := c.Processes.Answer(ctx, id, mustParse(t, `{"confirm":{"approve":"yes"}}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"review", batch.GroupID("review", 0)} {
		save(id)
	}

	// The moderate process through the provider's Batch API.
	if _, err := c.Run(ctx, strings.NewReader(llmtest.Comments(6)), func(batch.Result) error { return nil },
		batch.Options{Process: moderate(t), ID: "provider", Size: 4, Call: providerCall}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"provider", batch.ProviderID("provider"), batch.GroupID("provider", 0), batch.GroupID("provider", 1)} {
		save(id)
	}

	// The review process again, cancelled while its items wait for a
	// person: the group has reported what its call spent, and its record
	// takes the group's last report before it ends.
	cancelled := make(chan error, 1)
	go func() {
		_, err := c.Run(ctx, strings.NewReader(llmtest.Comments(4)), func(batch.Result) error { return nil }, batch.Options{Process: review, ID: "cancelled", Size: 4})
		cancelled <- err
	}()
	for {
		if ids, err := c.Waiting(ctx, "cancelled"); err == nil && len(ids) == 4 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := c.Cancel(ctx, "cancelled"); err != nil {
		t.Fatal(err)
	}
	if err := <-cancelled; !errors.Is(err, batch.ErrCancelled) {
		t.Fatal(err)
	}
	for _, id := range []string{"cancelled", batch.GroupID("cancelled", 0)} {
		save(id)
	}
}
