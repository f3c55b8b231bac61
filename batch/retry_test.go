package batch_test

import (
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/internal/llmtest"
	"github.com/augceo/vibe/process"
)

// TestRetryFailed: items that failed for their own reason — the model's
// answer refused after its repairs — stay failed when the batch is run
// again; with RetryFailed they are asked again under the same id, and
// only they: the completed items are kept, not asked, and a group with
// no failed item is not run again. The batch's record takes the new
// counts, a kept item is still read by its id, and a further RetryFailed
// has nothing to ask.
func TestRetryFailed(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	const n, k = 12, 4
	failing := map[int]bool{3: true, 6: true} // groups 0 and 1; group 2 is whole
	var broken atomic.Bool
	broken.Store(true)
	answer := func(step, prompt string, repair bool) string {
		line, _ := strconv.Atoi(strings.TrimPrefix(prompt, "comment "))
		if broken.Load() && failing[line] && step == "assess" {
			return `{"sentiment":"furious"}` // not in the enum, repaired or not
		}
		return llmtest.Verdict(step, prompt, repair)
	}
	model := llmtest.NewServer(t, llmtest.Multiplexed(answer), llmtest.Options{})
	c := stack(t, model.URL, (&recorder{}).actions())
	ctx := t.Context()
	run := func(retry bool) ([]batch.Result, *batch.Summary) {
		t.Helper()
		var results []batch.Result
		sum, err := c.Run(ctx, strings.NewReader(llmtest.Comments(n)), func(r batch.Result) error { results = append(results, r); return nil },
			batch.Options{Process: moderate(t), ID: "retry", Size: k, RetryFailed: retry})
		if err != nil {
			t.Fatalf("run (retry %v): %v", retry, err)
		}
		return results, sum
	}

	results, sum := run(false)
	if sum.Done != n-len(failing) || sum.Failed != len(failing) {
		t.Fatalf("first run: %+v", sum)
	}
	for _, r := range results {
		if failing[r.Line] != (r.Status == batch.StatusFailed) {
			t.Fatalf("first run, line %d: %+v", r.Line, r)
		}
	}
	broken.Store(false)

	// The same run again asks nothing: the failures are the items' own.
	asked := model.Requests()
	if _, sum = run(false); sum.Failed != len(failing) || sum.Retried != 0 || model.Requests() != asked {
		t.Fatalf("a plain rerun: %+v, %d model requests, want the same failures and none", sum, model.Requests()-asked)
	}

	results, sum = run(true)
	checkVerdicts(t, results, n, "retry")
	if sum.Retried != len(failing) || sum.Done != n || sum.Failed != 0 {
		t.Fatalf("--retry-failed: %+v, want %d retried and every item ok", sum, len(failing))
	}
	var prompts []string
	for _, b := range model.Bodies()[asked:] {
		for _, p := range llmtest.Read(b).Prompts {
			prompts = append(prompts, p)
		}
	}
	if len(prompts) != len(failing) || !failing[line(prompts[0])] || !failing[line(prompts[len(prompts)-1])] || prompts[0] == prompts[len(prompts)-1] {
		t.Fatalf("--retry-failed asked the model about %q, want only the failed comments", prompts)
	}
	st, err := c.Status(ctx, "retry")
	if err != nil || st.Status != batch.StatusCompleted || st.Done != n || st.Failed != 0 || st.Items != n {
		t.Fatalf("the batch's record after the retry: %+v %v", st, err)
	}
	info, err := c.Processes.Get(ctx, batch.ItemID("retry", 1))
	if err != nil || info.Status != process.Completed || !strings.Contains(info.State.String(), `"decision":"hide"`) {
		t.Fatalf("a kept item read by its id: %+v %v", info, err)
	}

	asked = model.Requests()
	if _, sum = run(true); sum.Retried != 0 || sum.Done != n || model.Requests() != asked {
		t.Fatalf("a second --retry-failed: %+v, %d model requests, want nothing asked", sum, model.Requests()-asked)
	}
}

func line(prompt string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(prompt, "comment "))
	return n
}

// TestNumberOutOfRange: a line with a number past what a float64 holds is
// refused, its result naming the file, the line and the JSON path, and the
// other lines go on.
func TestNumberOutOfRange(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	model := llmtest.NewServer(t, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{})
	c := stack(t, model.URL, (&recorder{}).actions())
	in := llmtest.Comments(2) + `{"prompt":"comment 3","input":{"n":1e400}}` + "\n" + llmtest.Comments(4)[len(llmtest.Comments(3)):]
	var results []batch.Result
	sum, err := c.Run(t.Context(), strings.NewReader(in), func(r batch.Result) error { results = append(results, r); return nil },
		batch.Options{Process: moderate(t), ID: "range", Size: 4, File: "items.jsonl"})
	if err != nil || sum.Done != 3 || sum.Failed != 1 || len(results) != 4 {
		t.Fatalf("%+v %v", sum, err)
	}
	if r := results[2]; r.Status != batch.StatusFailed || !strings.HasPrefix(r.Error, "items.jsonl:3: /input/n: number 1e400 is out of range") {
		t.Fatalf("line 3: %+v", r)
	}
}
