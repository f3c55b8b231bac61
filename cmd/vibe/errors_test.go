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
