package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/augceo/vibe/internal/llmtest"
)

// TestReplayProviderBatch: vibe replay --provider-batch sends the changed
// chunk's calls through each provider's test Batch API, all in one
// provider batch, and no call directly; every item comes out changed as
// on the direct path.
func TestReplayProviderBatch(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	const n, k = 40, 8
	dir, led := batchSetup(t, n, nil, 0)
	data := filepath.Join(dir, "data")
	model := llmtest.NewServer(t, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{})
	status, _, stderr := run(t, "", "batch", filepath.Join(dir, "moderate.json"), "--in", filepath.Join(dir, "items.jsonl"), "--out", filepath.Join(dir, "out.jsonl"),
		"--id", "moderation", "--data", data, "--actions-file", filepath.Join(dir, "actions.json"), "--llm", "openai:test-model", "--llm-base-url", model.URL)
	if status != exitOK {
		t.Fatalf("vibe batch: status %d\n%s", status, stderr)
	}
	acted, _, _ := led.counts()
	enum := filepath.Join(dir, "enum.json")
	os.WriteFile(enum, []byte(strings.Replace(moderateProcess, `"enum": ["positive", "negative"]`, `"enum": ["positive", "neutral", "negative"]`, 1)), 0o644)
	neutral := llmtest.Multiplexed(func(step, prompt string, repair bool) string {
		if step == "assess" {
			return `{"sentiment":"neutral"}`
		}
		return llmtest.Verdict(step, prompt, repair)
	})
	t.Setenv("ANTHROPIC_API_KEY", "test-key")
	oa := llmtest.NewServer(t, neutral, llmtest.Options{})
	an := llmtest.NewAnthropic(t, neutral, llmtest.Options{})
	for _, w := range []struct {
		llm, url string
		batches  *llmtest.Batches
		direct   func() int
	}{
		// Each its own model's name: the answers one replay kept are not
		// another's.
		{"openai:test-model", oa.URL, oa.Batches, oa.Requests},
		{"anthropic:test-anthropic", an.URL, an.Batches, an.Requests},
	} {
		t.Run(strings.Split(w.llm, ":")[0], func(t *testing.T) {
			status, stdout, stderr := run(t, "", "replay", "moderation", "--process", enum, "--data", data, "--batch-size", fmt.Sprint(k),
				"--actions-file", filepath.Join(dir, "actions.json"), "--llm", w.llm, "--llm-base-url", w.url,
				"--provider-batch", "--provider-batch-poll", "50ms")
			if status != exitOK || !strings.Contains(stderr, fmt.Sprintf("vibe: replayed %d of %d items: %d changed, 0 same", n, n, n)) ||
				!strings.Contains(stderr, fmt.Sprintf("; %d LLM requests", n/k)) {
				t.Fatalf("vibe replay --provider-batch: status %d\n%s\n%.600s", status, stderr, stdout)
			}
			if got := strings.Count(stdout, `"outcome":"changed"`); got != n {
				t.Errorf("%d items changed in the report, want %d:\n%s", got, n, stdout)
			}
			if w.direct() != 0 || w.batches.Created() != 1 || w.batches.Answered() != n/k {
				t.Errorf("%d direct calls, %d provider batches with %d requests answered; want 0, 1 with %d", w.direct(), w.batches.Created(), w.batches.Answered(), n/k)
			}
		})
	}
	if calls, _, _ := led.counts(); calls != acted {
		t.Errorf("the replays ran the action %d times", calls-acted)
	}
	status, _, stderr = run(t, "", "replay", "moderation", "--process", enum, "--data", data, "--provider-batch", "--llm", "replay:"+filepath.Join(dir, "none.jsonl"))
	if status != exitUsage || !strings.Contains(stderr, "a recording has none") {
		t.Errorf("--provider-batch with a recording: status %d\n%s", status, stderr)
	}
}
