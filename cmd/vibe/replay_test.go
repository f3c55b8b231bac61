package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/augceo/vibe/internal/llmtest"
	"github.com/augceo/vibe/replay"
)

// TestReplayCommand runs a batch of moderation runs, then replays it
// against changed processes: an enum the model now answers otherwise
// changes every item, with no action run and only the changed chunk asked,
// multiplexed, and --fail-on-change exits 1; a description the model
// answers alike changes none and exits 0. An id with no record is said to
// have none, and --prune removes the records.
func TestReplayCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	const n = 20
	dir, led := batchSetup(t, n, nil, 0)
	data := filepath.Join(dir, "data")
	model := llmtest.NewServer(t, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{})
	status, _, stderr := run(t, "", "batch", filepath.Join(dir, "moderate.json"), "--in", filepath.Join(dir, "items.jsonl"), "--out", filepath.Join(dir, "out.jsonl"),
		"--id", "moderation", "--batch-size", "8", "--data", data,
		"--actions-file", filepath.Join(dir, "actions.json"), "--llm", "openai:test-model", "--llm-base-url", model.URL)
	if status != exitOK {
		t.Fatalf("vibe batch: status %d\n%s", status, stderr)
	}
	acted, _, _ := led.counts()
	write := func(name, from, to string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(strings.Replace(moderateProcess, from, to, 1)), 0o644)
		return p
	}
	enum := write("enum.json", `"enum": ["positive", "negative"]`, `"enum": ["positive", "neutral", "negative"]`)
	described := write("described.json", `"sentiment": {"type": "string",`, `"sentiment": {"type": "string", "description": "How the comment sounds",`)

	neutralAnswer := llmtest.Multiplexed(func(step, prompt string, repair bool) string {
		if step == "assess" {
			return `{"sentiment":"neutral"}`
		}
		return llmtest.Verdict(step, prompt, repair)
	})
	neutral := llmtest.NewServer(t, neutralAnswer, llmtest.Options{})
	prices := filepath.Join(dir, "prices.json")
	os.WriteFile(prices, []byte(`{"models": {"test-model": {"input": 1, "output": 2}}}`), 0o600)
	status, stdout, stderr := run(t, "", "replay", "moderation", "missing-1", "--process", enum, "--data", data, "--batch-size", "8", "--prices", prices,
		"--actions-file", filepath.Join(dir, "actions.json"), "--llm", "openai:test-model", "--llm-base-url", neutral.URL, "--fail-on-change")
	if status != exitError || !strings.Contains(stderr, fmt.Sprintf("vibe: replayed %d of %d items: %d changed, 0 same, 1 have no record", n, n+1, n)) ||
		!strings.Contains(stderr, "/assess/sentiment changed in 20 items") || !strings.Contains(stderr, `/assess/sentiment: "negative" → "neutral"  10`) ||
		!strings.Contains(stderr, "--fail-on-change") || !strings.Contains(stderr, "actions not run: 20; 3 LLM requests") || !strings.Contains(stderr, "USD") {
		t.Fatalf("replay of an enum change: status %d\n%s", status, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != n+1 {
		t.Fatalf("%d report lines, want %d:\n%s", len(lines), n+1, stdout)
	}
	var first, last replay.Item
	json.Unmarshal([]byte(lines[0]), &first)
	json.Unmarshal([]byte(lines[n]), &last)
	if !first.Changed || first.Line != 1 || len(first.Changes) != 1 || first.Changes[0].Path != "/assess/sentiment" ||
		first.Changes[0].Before.Str() != "negative" || first.Changes[0].After.Str() != "neutral" {
		t.Errorf("line 1: %s", lines[0])
	}
	if last.ID != "missing-1" || last.Outcome != replay.NoRecord {
		t.Errorf("the id with no record: %s", lines[n])
	}
	if calls, _, _ := led.counts(); calls != acted {
		t.Errorf("the replay ran the action %d times", calls-acted)
	}
	if r := neutral.Requests(); r < 1 || r > (n+7)/8 {
		t.Errorf("the replay made %d model requests, want at most %d", r, (n+7)/8)
	}
	// The replay is a batch of its own: vibe batches lists it, kind
	// replay, with its items and the requests it made.
	m := regexp.MustCompile(`vibe: replay (\S+): 21 items`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no replay id in\n%s", stderr)
	}
	_, stdout, _ = run(t, "", "batches", "--data", data)
	if row := regexp.MustCompile(regexp.QuoteMeta(m[1]) + `\s+moderate\s+replay\s+failed\s+21\s+20\s+1\s+0\s+3\s`); !row.MatchString(stdout) ||
		!regexp.MustCompile(`moderation\s+moderate\s+batch\s+completed`).MatchString(stdout) {
		t.Errorf("vibe batches:\n%s", stdout)
	}
	_, stdout, _ = run(t, "", "batches", m[1], "--data", data)
	if !strings.Contains(stdout, `"kind": "replay"`) || !strings.Contains(stdout, `"changed": 20`) {
		t.Errorf("vibe batches %s:\n%s", m[1], stdout)
	}

	status, _, stderr = run(t, "", "replay", "moderation", "--process", described, "--data", data, "--batch-size", "8", "--json",
		"--actions-file", filepath.Join(dir, "actions.json"), "--llm", "openai:test-model", "--llm-base-url", model.URL, "--fail-on-change")
	if status != exitOK || !strings.Contains(stderr, fmt.Sprintf("vibe: replayed %d of %d items: 0 changed, %d same", n, n, n)) {
		t.Fatalf("replay of a description change: status %d\n%s", status, stderr)
	}

	// The baseline asks the unchanged process, whose enum has no
	// neutral: the model answers it as recorded.
	either := llmtest.NewServer(t, func(name, body string) string {
		if strings.Contains(body, "neutral") {
			return neutralAnswer(name, body)
		}
		return llmtest.Multiplexed(llmtest.Verdict)(name, body)
	}, llmtest.Options{})
	status, _, stderr = run(t, "", "replay", "moderation", "--process", enum, "--data", data, "--batch-size", "8", "--sample", "10", "--seed", "3",
		"--baseline", "8", "--baseline-process", filepath.Join(dir, "moderate.json"), "--out", filepath.Join(dir, "sampled.jsonl"),
		"--actions-file", filepath.Join(dir, "actions.json"), "--llm", "openai:test-model", "--llm-base-url", either.URL)
	if status != exitOK || !strings.Contains(stderr, "vibe: replayed 10 of 10 items: 10 changed") ||
		!strings.Contains(stderr, "a random sample of 10 of 20 recorded items (--seed 3 chooses it again)") ||
		!strings.Contains(stderr, "vibe: changed 10 of 10 (100 %, 95% 72.2–100 %); the unchanged process changes 0 of 8 (0 %, 95% 0–32.4 %): the edit's effect beyond noise ≈ 100 %") ||
		!strings.Contains(stderr, "vibe: the baseline asked 8 items again with the unchanged process: 1 LLM requests") {
		t.Fatalf("replay of a sample, with a baseline: status %d\n%s", status, stderr)
	}

	status, _, stderr = run(t, "", "replay", "--prune", "--retention", "1ns", "--data", data)
	if status != exitOK || !strings.Contains(stderr, "pruned 6 replay files (records and kept answers)") {
		t.Fatalf("--prune: status %d\n%s", status, stderr)
	}
	status, _, stderr = run(t, "", "replay", "moderation", "--process", enum, "--data", data, "--actions-file", filepath.Join(dir, "actions.json"))
	if status != exitOK || !strings.Contains(stderr, "vibe: replayed 0 of 1 items: 0 changed, 0 same, 1 have no record") {
		t.Fatalf("after --prune: status %d\n%s", status, stderr)
	}
}

// TestReplaySummary: the summary says the sample and its seed, the
// changed share with its interval beside the baseline's, and the items
// that had not completed by their recorded status.
func TestReplaySummary(t *testing.T) {
	beyond := 0.145
	low, high := replay.Wilson(37, 200)
	blow, bhigh := replay.Wilson(2, 50)
	rep := &replay.Report{Summary: replay.Summary{Items: 200, Replayed: 200, Changed: 37, Same: 163, Unfinished: 3,
		UnfinishedBy: map[string]int{"waiting": 2, "failed": 1},
		Sample:       &replay.Sample{Items: 200, Of: 10000, Seed: 7},
		Share:        &replay.Share{Changed: 37, Of: 200, Rate: 0.185, Low: low, High: high},
		Baseline:     &replay.Baseline{Items: 50, Changed: 2, Requests: 2, Share: &replay.Share{Changed: 2, Of: 50, Rate: 0.04, Low: blow, High: bhigh}},
		Beyond:       &beyond}}
	var b strings.Builder
	summarize(&b, rep, "")
	for _, want := range []string{
		"vibe: replayed 200 of 200 items: 37 changed, 163 same, 3 had not completed when recorded (1 failed, 2 waiting: replayed up to where they got)\n",
		"  a random sample of 200 of 10000 recorded items (--seed 7 chooses it again)\n",
		"vibe: changed 37 of 200 (18.5 %, 95% 13.7–24.5 %); the unchanged process changes 2 of 50 (4 %, 95% 1.1–13.5 %): the edit's effect beyond noise ≈ 14.5 %\n",
		"vibe: the baseline asked 50 items again with the unchanged process: 2 LLM requests",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the summary has no %q:\n%s", want, b.String())
		}
	}
}
