package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/augceo/vibe/internal/llmtest"
)

// otherVerdict is a drifting model's answer past its position: the other
// verdict.
func otherVerdict(step, prompt string, repair bool) string {
	n, _ := strconv.Atoi(strings.TrimPrefix(prompt, "comment "))
	return llmtest.Verdict(step, "comment "+strconv.Itoa(n+1), repair)
}

// TestCalibrateThenBatch: against a model whose answers drift past the 8th
// item of a call, vibe calibrate over 64 of 1,000 comments chooses K
// between 2 and 8 and shows agreement at most 0.5 at K=16 and below 0.5 at
// K=32 and more; vibe batch on the same data directory then takes that K
// and gives every one of the 1,000 items its one-by-one answer. Against a
// model that does not drift, it chooses 32 or more.
func TestCalibrateThenBatch(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a batch of 1,000 items")
	}
	dir, led := batchSetup(t, 1000, nil, 0)
	data := filepath.Join(dir, "data")
	for _, tc := range []struct {
		name     string
		model    func(name, body string) string
		low, top int
	}{
		{"drifting", llmtest.Drifting(8, llmtest.Verdict, otherVerdict), 2, 8},
		{"steady", llmtest.Multiplexed(llmtest.Verdict), 32, 64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model := llmtest.NewServer(t, tc.model, llmtest.Options{Tokens: true}) // tokens of the request's size, for the table
			llmArgs := []string{"--llm", "openai:test-model-" + tc.name, "--llm-base-url", model.URL}
			status, stdout, stderr := run(t, "", append([]string{"calibrate", filepath.Join(dir, "moderate.json"), "--in", filepath.Join(dir, "items.jsonl"),
				"--data", data, "--json"}, llmArgs...)...)
			if status != 0 {
				t.Fatalf("vibe calibrate: status %d\n%s", status, stderr)
			}
			var cal struct {
				Chunks []struct {
					Chunk   string `json:"chunk"`
					ChosenK int    `json:"chosen_k"`
					Floor   float64
					Rows    []struct {
						K         int     `json:"k"`
						Agreement float64 `json:"agreement"`
						Low, High float64
						Shuffled  bool `json:"shuffled"`
					} `json:"rows"`
				} `json:"chunks"`
			}
			if err := json.Unmarshal([]byte(stdout), &cal); err != nil || len(cal.Chunks) != 1 {
				t.Fatalf("vibe calibrate --json: %v\n%s", err, stdout)
			}
			cc := cal.Chunks[0]
			t.Logf("vibe calibrate --json (%s model):\n%s", tc.name, stdout)
			if cc.ChosenK < tc.low || cc.ChosenK > tc.top {
				t.Errorf("chose K=%d, want %d to %d", cc.ChosenK, tc.low, tc.top)
			}
			for _, r := range cc.Rows {
				if tc.name == "drifting" && (r.K == 16 && !r.Shuffled && r.Agreement > 0.5 || r.K >= 32 && r.Agreement >= 0.5) {
					t.Errorf("K=%d: agreement %.2f", r.K, r.Agreement)
				}
			}
			if !strings.Contains(stderr, "vibe: calibration: ") || !strings.Contains(stderr, "LLM requests") || !strings.Contains(stderr, "recorded in "+filepath.Join(data, "calibration")) {
				t.Errorf("vibe calibrate's stderr:\n%s", stderr)
			}
			if tc.name != "drifting" {
				// --audit keeps the calibrated K of a model that does not drift.
				status, _, stderr = run(t, "", append([]string{"batch", filepath.Join(dir, "moderate.json"), "--in", filepath.Join(dir, "items.jsonl"),
					"--out", filepath.Join(dir, "steady.jsonl"), "--data", data, "--actions-file", filepath.Join(dir, "actions.json"), "--audit", "0.05", "--id", "steady"}, llmArgs...)...)
				if status != 0 || !strings.Contains(stderr, "(calibrated: "+strconv.Itoa(cc.ChosenK)) || strings.Contains(stderr, "audit: LLM_llmContext1: K") ||
					!regexp.MustCompile(`audit of LLM_llmContext1: \d+ items asked alone too, 0 answered otherwise`).MatchString(stderr) {
					t.Errorf("vibe batch --audit 0.05: status %d\n%s", status, stderr)
				}
				return
			}
			out := filepath.Join(dir, "out.jsonl")
			status, _, stderr = run(t, "", append([]string{"batch", filepath.Join(dir, "moderate.json"), "--in", filepath.Join(dir, "items.jsonl"), "--out", out,
				"--data", data, "--actions-file", filepath.Join(dir, "actions.json")}, llmArgs...)...)
			if status != 0 || !strings.Contains(stderr, "LLM_llmContext1 K=8, auto (calibrated: 8") {
				t.Fatalf("vibe batch: status %d\n%s", status, stderr)
			}
			checkResults(t, readResults(t, out), 1000, nil)
			if _, keys, _ := led.counts(); keys != 1000 {
				t.Errorf("%d decisions recorded, want 1000", keys)
			}
		})
	}
}

// TestAuditDrift: with the drifting model and no calibration, --audit 0.05
// finds the disagreement, halves K until it holds, and gives the items it
// audited their answers alone: at least 900 of 1,000 outputs are their
// one-by-one answers, and the summary says what K fell to.
func TestAuditDrift(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a batch of 1,000 items")
	}
	dir, _ := batchSetup(t, 1000, nil, 0)
	model := llmtest.NewServer(t, llmtest.Drifting(8, llmtest.Verdict, otherVerdict), llmtest.Options{})
	out := filepath.Join(dir, "out.jsonl")
	status, _, stderr := run(t, "", "batch", filepath.Join(dir, "moderate.json"), "--in", filepath.Join(dir, "items.jsonl"), "--out", out,
		"--data", filepath.Join(dir, "data"), "--actions-file", filepath.Join(dir, "actions.json"), "--audit", "0.05",
		"--llm", "openai:test-model", "--llm-base-url", model.URL)
	if status != 0 || !strings.Contains(stderr, "audit: LLM_llmContext1: K 32 → 16") || !strings.Contains(stderr, "→ 8 (audited agreement significantly below 0.98)") {
		t.Fatalf("vibe batch --audit: status %d\n%s", status, stderr)
	}
	right := 0
	for _, r := range readResults(t, out) {
		prompt := fmt.Sprintf("comment %d", r.Line)
		if strings.Contains(string(r.Output), fmt.Sprintf(`"decide":%s`, llmtest.Verdict("decide", prompt, false))) {
			right++
		}
	}
	if right < 900 {
		t.Errorf("%d of 1,000 outputs are their one-by-one answers, want at least 900\n%s", right, stderr)
	}
	t.Logf("%d of 1,000 outputs are their one-by-one answers", right)
}
