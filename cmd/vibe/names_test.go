package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/process"
)

// startedID is the id a run's "vibe: started ID" line names.
func startedID(t *testing.T, stderr string) string {
	t.Helper()
	i := strings.Index(stderr, "vibe: started ")
	if i < 0 {
		t.Fatalf("nothing started:\n%s", stderr)
	}
	return strings.Fields(stderr[i+len("vibe: started "):])[0]
}

// TestNames: a pipeline's process is labelled by its steps, or by --name;
// a batch too, and its id does not depend on the label.
func TestNames(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	empty := filepath.Join(dir, "empty.jsonl")
	os.WriteFile(empty, nil, 0o600)
	common := []string{"--registry", "testdata/registry", "--data", data, "--llm", "replay:" + empty}
	review := filepath.Join(dir, "review.json")
	os.WriteFile(review, []byte(`{"title": "Review", "type": "object", "properties": {"review": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}}`), 0o600)
	tests := []struct {
		args       []string
		name, slug string
	}{
		{[]string{"--pipeline", "identifyParticipants | DraftInvitation"}, "identify-participants+draft-invitation", "identify-participants-draft-invitation-"},
		{[]string{"--pipeline", "identifyParticipants", "--name", "Carol's meeting"}, "Carol's meeting", "carol-s-meeting-"},
		{[]string{review, "--name", "weekly"}, "weekly", "weekly-"},
		{[]string{review}, "review", "review-"},
	}
	for _, tt := range tests {
		// The model has no answer: each process fails at once, named.
		status, _, stderr := run(t, "", append(append([]string{"run", "--prompt", "Meet Carol"}, common...), tt.args...)...)
		if status != 1 {
			t.Fatalf("%v: %d\n%s", tt.args, status, stderr)
		}
		id := startedID(t, stderr)
		status, out, stderr := run(t, "", "show", id, "--data", data)
		var info process.Info
		if err := json.Unmarshal([]byte(out), &info); status != 0 || err != nil {
			t.Fatalf("show %s: %d %v %s", id, status, err, stderr)
		}
		if _, js, _ := run(t, "", "show", id, "--data", data, "--json"); js != out {
			t.Errorf("show --json differs from show piped:\n%s\n%s", js, out)
		}
		if info.Process != tt.name || !strings.HasPrefix(id, tt.slug) {
			t.Errorf("%v: id %s, process %q, want %q and an id that starts with %s", tt.args, id, info.Process, tt.name, tt.slug)
		}
		_, ps, _ := run(t, "", "ps", "--data", data)
		if i := strings.Index(ps, id+" "); i < 0 || !strings.HasPrefix(strings.TrimLeft(ps[i+len(id):], " "), tt.name+"  ") {
			t.Errorf("ps does not name %s %q:\n%s", id, tt.name, ps)
		}
	}

	// A batch: labelled by --name; its id is the one derived without it.
	items := filepath.Join(dir, "items.jsonl")
	os.WriteFile(items, []byte("\"Meet Alice\"\n\"Meet Bob\"\n"), 0o600)
	expr := "identifyParticipants"
	_, dry, stderr := run(t, "", append([]string{"batch", "--pipeline", expr, "--in", items, "--dry-run"}, common...)...)
	want, _, ok := strings.Cut(strings.TrimPrefix(dry, "batch "), ":")
	if !ok {
		t.Fatalf("dry run: %s%s", dry, stderr)
	}
	status, _, stderr := run(t, "", append([]string{"batch", "--pipeline", expr, "--in", items, "--name", "triage of the week"}, common...)...)
	if status != 1 {
		t.Fatalf("batch: %d\n%s", status, stderr)
	}
	status, out, stderr := run(t, "", "batches", want, "--json", "--data", data)
	var st batch.Status
	if err := json.Unmarshal([]byte(out), &st); status != 0 || err != nil {
		t.Fatalf("batches %s: %d %v\n%s%s", want, status, err, out, stderr)
	}
	if st.ID != want || st.Process != "triage of the week" {
		t.Errorf("the batch: id %s, process %q; want id %s, process %q", st.ID, st.Process, want, "triage of the week")
	}
}

// TestPrompt: a pipeline that takes the person's request at run time is
// refused without --prompt, before anything starts; a process that would
// start with an empty request, or an instruction asked without one, is
// warned of.
func TestPrompt(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	status, _, stderr := run(t, "", "run", "--registry", "testdata/registry", "--data", data, "--pipeline", "prompt | identifyParticipants")
	if status != exitUsage || !strings.Contains(stderr, "vibe: the pipeline begins with prompt, the person's request: give it with --prompt TEXT\n") {
		t.Errorf("prompt | …: %d %s", status, stderr)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Errorf("the engine started: %v", err)
	}
	status, _, stderr = run(t, "", "ask", instruction, "--llm", "replay:"+filepath.Join(t.TempDir(), "none.jsonl"))
	if !strings.Contains(stderr, "vibe: no --prompt: the model fills the instruction without a request to fill it for (give --prompt TEXT)\n") {
		t.Errorf("ask without --prompt: %d %s", status, stderr)
	}
}
