package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestErrorSaidOnce: a missing recording is said once, with where it
// happened, on every surface — vibe run, vibe show, the batch's result
// lines, a Vessel request — and without Temporal's envelopes (issue 27,
// 1). Before, vibe run said it three times and vibe vessel six.
func TestErrorSaidOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.jsonl")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	const cause = "no recorded answer for step"
	once := func(what, text, where string) {
		t.Helper()
		if n := strings.Count(text, cause); n != 1 {
			t.Errorf("%s says the cause %d times:\n%s", what, n, text)
		}
		if !strings.Contains(text, where) {
			t.Errorf("%s does not say where (%s):\n%s", what, where, text)
		}
		for _, noise := range []string{"(type:", "retryable", "scheduledEventID", "identity:", "activity error", "workflow execution error"} {
			if strings.Contains(text, noise) {
				t.Errorf("%s says %q:\n%s", what, noise, text)
			}
		}
	}
	data := filepath.Join(dir, "data")
	common := []string{"--registry", "testdata/registry", "--pipeline", "identifyParticipants", "--llm", "replay:" + empty, "--data", data}

	status, _, stderr := run(t, "", append([]string{"run", "--prompt", "Meet Bob"}, common...)...)
	if status != exitError {
		t.Fatalf("run: status %d\n%s", status, stderr)
	}
	once("vibe run", stderr, "chunk ")
	id := strings.Fields(stderr[strings.Index(stderr, "vibe: started ")+len("vibe: started "):])[0]

	status, stdout, stderr := run(t, "", "show", id, "--data", data)
	if status != exitOK {
		t.Fatalf("show: status %d\n%s", status, stderr)
	}
	once("vibe show", stdout, "chunk ")

	items := filepath.Join(dir, "items.jsonl")
	os.WriteFile(items, []byte("\"Meet Bob\"\n\"Meet Carol\"\n"), 0o600)
	status, stdout, stderr = run(t, "", append([]string{"batch", "--in", items}, common...)...)
	if status != exitError {
		t.Fatalf("batch: status %d\n%s", status, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 2 {
		t.Fatalf("batch wrote %d lines:\n%s", len(lines), stdout)
	}
	for _, l := range lines {
		once("a batch's result line", l, "chunk ")
	}

	music := "../../examples/music"
	status, _, stderr = run(t, "", "vessel", music+"/producer.vessel.json", "--registry", music+"/registry", "--context", music+"/context.json",
		"--prompt", "Make a song", "--llm", "replay:"+empty, "--data", data)
	if status != exitError {
		t.Fatalf("vessel: status %d\n%s", status, stderr)
	}
	once("vibe vessel", stderr, "decision: ")
	if len(stderr) > 600 {
		t.Errorf("vibe vessel's failure takes %d bytes:\n%s", len(stderr), stderr)
	}
}

// TestFlagSuggestions: an unknown flag is answered with the command's
// flags nearest to it, as an unknown command is with commands.
func TestFlagSuggestions(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--promt", "x"}, "vibe: unknown flag: --promt\n\nDid you mean this?\n\t--prompt\n\nRun 'vibe help' for usage.\n"},
		{[]string{"ask", "x.json", "--prmpt=x"}, "vibe: unknown flag: --prmpt\n\nDid you mean this?\n\t--prompt\n\nRun 'vibe help' for usage.\n"},
		{[]string{"ps", "--stat", "waiting"}, "vibe: unknown flag: --stat\n\nDid you mean this?\n\t--status\n\nRun 'vibe help' for usage.\n"},
		{[]string{"compile", "--action-file", "a.json", "x.json"}, "vibe: unknown flag: --action-file\n\nDid you mean this?\n\t--actions-file\n\nRun 'vibe help' for usage.\n"},
		{[]string{"run", "--zzzzzz"}, "vibe: unknown flag: --zzzzzz\nRun 'vibe help' for usage.\n"},
		{[]string{"run", "-z"}, "vibe: unknown shorthand flag: 'z' in -z\nRun 'vibe help' for usage.\n"},
	} {
		status, stdout, stderr := run(t, "", tt.args...)
		if status != exitUsage || stdout != "" || stderr != tt.want {
			t.Errorf("vibe %s: %d %q, want\n%s", strings.Join(tt.args, " "), status, stderr, tt.want)
		}
	}
}

// TestNoModelRefused: vibe run and vibe batch of a process that asks a
// model, with no model selected, refuse before anything starts (as vibe
// ask does): exit 2, no process started, no item failed, no results file.
func TestNoModelRefused(t *testing.T) {
	t.Setenv("VIBE_LLM", "")
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	common := []string{"--registry", "testdata/registry", "--pipeline", "identifyParticipants", "--data", data}
	const want = "vibe: identify-participants asks a model (LLM_step1_identify_participants)"
	const how = "and no model is selected: give --llm openai:MODEL, anthropic:MODEL or replay:FILE (or set VIBE_LLM)"

	status, _, stderr := run(t, "", append([]string{"run", "--prompt", "Meet Bob"}, common...)...)
	if status != exitUsage || !strings.Contains(stderr, want) || !strings.Contains(stderr, how) || strings.Contains(stderr, "started") {
		t.Errorf("run: status %d\n%s", status, stderr)
	}

	items := filepath.Join(dir, "items.jsonl")
	out := filepath.Join(dir, "out.jsonl")
	os.WriteFile(items, []byte("\"Meet Bob\"\n\"Meet Carol\"\n"), 0o600)
	status, stdout, stderr := run(t, "", append([]string{"batch", "--in", items, "--out", out}, common...)...)
	if status != exitUsage || !strings.Contains(stderr, want) || stdout != "" {
		t.Errorf("batch: status %d\n%s%s", status, stdout, stderr)
	}
	if b, err := os.ReadFile(out); err == nil && len(b) > 0 {
		t.Errorf("batch wrote results: %s", b)
	}
	status, stdout, _ = run(t, "", "ps", "--data", data)
	if status != exitOK || strings.Contains(stdout, "pipeline") {
		t.Errorf("ps after the refusals: %d\n%s", status, stdout)
	}
}
