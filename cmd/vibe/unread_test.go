package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/augceo/vibe/internal/llmtest"
)

// TestUnreadInput: an input no step reads — a model is sent only what its
// steps reference — is warned of: once by vibe run, naming its fields, and
// in vibe batch's summary, naming the fields of the items' inputs. An
// input-less run says nothing of it.
func TestUnreadInput(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	model := llmtest.NewWith(t, llmtest.FirstValue)
	llm := []string{"--registry", "testdata/registry", "--pipeline", "identifyParticipants", "--llm", "openai:m", "--llm-base-url", model.URL}
	const warning = "no step reads the input's k, j: a model is sent only what its steps reference, and only a server step that references nothing is given the input"
	for _, tt := range []struct {
		name string
		args []string
		want int // warnings
	}{
		{"an input", []string{"run", "--prompt", "Meet Bob", "--input", `{"k": "…", "j": 2}`}, 1},
		{"no input", []string{"run", "--prompt", "Meet Bob"}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, _, stderr := run(t, "", append(append(tt.args, llm...), "--data", t.TempDir())...)
			if status != 0 {
				t.Fatalf("%d %s", status, stderr)
			}
			if got := strings.Count(stderr, "vibe: warning: "+warning+"\n"); got != tt.want {
				t.Errorf("%d warnings, want %d:\n%s", got, tt.want, stderr)
			}
		})
	}
	t.Run("a batch", func(t *testing.T) {
		in := filepath.Join(t.TempDir(), "items.jsonl")
		os.WriteFile(in, []byte(`{"prompt": "Meet Bob", "input": {"k": 1}}`+"\n"+`{"prompt": "Meet Ann", "input": {"j": 2, "k": 3}}`+"\n"+`"Meet Eve"`+"\n"), 0o600)
		status, _, stderr := run(t, "", append(append([]string{"batch", "--in", in, "--out", filepath.Join(t.TempDir(), "out.jsonl")}, llm...), "--data", t.TempDir())...)
		if status != 0 {
			t.Fatalf("%d %s", status, stderr)
		}
		if !strings.Contains(stderr, "warning: no step reads the items' input's k, j: a model is sent only what its steps reference") {
			t.Errorf("the summary does not warn:\n%s", stderr)
		}
	})
}
