package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	goldenfile "github.com/augceo/vibe/internal/golden"
	"github.com/augceo/vibe/internal/llmtest"
)

// The README's newcomer section lies between these markers. Its ```sh
// blocks are commands, run in order by one shell as a reader would type
// them; a ```json block right after a command block is what that block
// prints on standard output.
const (
	newcomerBegin = "<!-- newcomer: the commands of this section are run by cmd/vibe TestReadmeNewcomer -->"
	newcomerEnd   = "<!-- /newcomer -->"
	// recording is the file the section's commands replay the model from.
	recording = "examples/first-instruction/answers.jsonl"
)

// setupCommands are the README's two set-up commands, exactly: one runs
// the main example on the embedded defaults, one runs the tests.
var setupCommands = []string{
	"GOTOOLCHAIN=auto go run ./examples/schedule-meeting",
	"GOTOOLCHAIN=auto go test ./...",
}

// readmeBlock is a fenced block of the newcomer section.
type readmeBlock struct {
	lang string // "sh" or "json"
	text string
}

// newcomerBlocks returns the fenced blocks between the newcomer markers.
func newcomerBlocks(t *testing.T, readme string) []readmeBlock {
	t.Helper()
	_, rest, ok := strings.Cut(readme, newcomerBegin)
	if !ok {
		t.Fatalf("README.md has no %q", newcomerBegin)
	}
	section, _, ok := strings.Cut(rest, newcomerEnd)
	if !ok {
		t.Fatalf("README.md has no %q", newcomerEnd)
	}
	var blocks []readmeBlock
	var cur *readmeBlock
	for _, line := range strings.SplitAfter(section, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && strings.HasPrefix(trimmed, "```"):
			cur = &readmeBlock{lang: strings.TrimPrefix(trimmed, "```")}
		case cur != nil && trimmed == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.text += line
		}
	}
	return blocks
}

// TestReadmeSetup: the top of the README keeps exactly the two set-up
// commands (the first is run by examples/schedule-meeting's TestRunEmbedded,
// which runs what its main runs).
func TestReadmeSetup(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	top, _, _ := strings.Cut(string(b), newcomerBegin)
	var got []string
	for _, line := range strings.Split(top, "\n") {
		if strings.HasPrefix(line, "    GOTOOLCHAIN=auto go ") {
			got = append(got, strings.TrimSpace(line))
		}
	}
	if strings.Join(got, "\n") != strings.Join(setupCommands, "\n") {
		t.Errorf("the README's set-up commands are\n%s\nwant exactly\n%s", strings.Join(got, "\n"), strings.Join(setupCommands, "\n"))
	}
}

// TestReadmeNewcomer follows the README's "first instruction" section word
// for word: its command blocks run in one shell, in a fresh directory, with
// `vibe` on the path (this test binary stands in for what `go install
// ./cmd/vibe` installs) and the model replayed from the section's
// recording; each block's standard output must be the output the README
// shows, and the schemas it writes must be the ones shipped in
// examples/first-instruction. With -update, the recording is made again
// from a test model that gives the authored answers below, through
// VIBE_LLM_RECORD, as a reader's real model would be recorded.
func TestReadmeNewcomer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded Temporal server")
	}
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := newcomerBlocks(t, string(b))
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, bin := t.TempDir(), t.TempDir()
	if err := os.Symlink(filepath.Join(root, "examples"), filepath.Join(dir, "examples")); err != nil {
		t.Fatal(err)
	}
	shim := "#!/bin/sh\nVIBE_TEST_MAIN=1 exec " + shellQuote([]string{self}) + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "vibe"), []byte(shim), 0o755); err != nil {
		t.Fatal(err)
	}

	// The script: each command block, then a line that ends its output.
	const sep = "\n@@@ end of block @@@\n"
	var script strings.Builder
	script.WriteString("set -eu\n")
	var want []string // per command block, the output shown after it
	installed := false
	for _, bl := range blocks {
		switch bl.lang {
		case "sh":
			text := bl.text
			if strings.Contains(text, "go install ./cmd/vibe\n") {
				// The shim on the path is this build of vibe.
				text = strings.Replace(text, "go install ./cmd/vibe\n", ":\n", 1)
				installed = true
			}
			script.WriteString(text)
			script.WriteString("printf '\\n@@@ end of block @@@\\n'\n")
			want = append(want, "")
		case "json", "text":
			if len(want) == 0 {
				t.Fatal("an output block before any command block")
			}
			want[len(want)-1] += bl.text
		default:
			t.Fatalf("a ```%s block in the newcomer section: only sh is run, and json or text checked", bl.lang)
		}
	}
	if !installed {
		t.Error("the newcomer section does not say `go install ./cmd/vibe`")
	}
	text := script.String()
	if !strings.Contains(text, "replay:"+recording) {
		t.Fatalf("the newcomer section does not replay %s", recording)
	}

	env := []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for _, v := range []string{"GOPATH", "GOCACHE", "GOMODCACHE", "GOFLAGS", "GOPROXY", "TMPDIR"} {
		if s, ok := os.LookupEnv(v); ok {
			env = append(env, v+"="+s)
		}
	}
	var rec string
	if goldenfile.Update() {
		srv := llmtest.NewServer(t, readmeAnswers, llmtest.Options{Tokens: true, Model: "authored-for-the-readme"})
		rec = filepath.Join(t.TempDir(), "answers.jsonl")
		text = strings.ReplaceAll(text, "replay:"+recording, "openai:authored-for-the-readme")
		env = append(env, "VIBE_LLM_BASE_URL="+srv.URL, "VIBE_LLM_API_KEY=none", "VIBE_LLM_RECORD="+rec)
	}
	cmd := exec.Command("bash", "-c", text)
	cmd.Dir, cmd.Env = dir, env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the newcomer section's commands: %v\nscript:\n%s\nstdout:\n%s\nstderr:\n%s", err, text, out, stderr.String())
	}
	t.Logf("stderr:\n%s", stderr.String())
	got := strings.Split(strings.TrimSuffix(string(out), sep), sep)
	if len(got) != len(want) {
		t.Fatalf("%d blocks printed, %d run:\n%s", len(got), len(want), out)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("command block %d prints\n%s\nthe README shows\n%s", i+1, got[i], want[i])
		}
	}
	for _, name := range []string{"TriageTicket.json", "DraftReply.json"} {
		written, err := os.ReadFile(filepath.Join(dir, "hello/instructions", name))
		if err != nil {
			t.Fatal(err)
		}
		shipped, err := os.ReadFile(filepath.Join(root, "examples/first-instruction/registry/instructions", name))
		if err != nil {
			t.Fatal(err)
		}
		if string(written) != string(shipped) {
			t.Errorf("the README writes hello/instructions/%s unlike examples/first-instruction's:\n%s", name, written)
		}
	}
	if rec != "" {
		b, err := os.ReadFile(rec)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, recording), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(stderr.String(), "replaying recorded answers from "+recording) && rec == "" {
		t.Errorf("the commands do not say they replay a recording:\n%s", stderr.String())
	}
}

// readmeAnswers are the model's answers the section's recording holds,
// written for the README: the one instruction asked alone (vibe ask), then
// the pipeline's one LLM chunk (vibe run).
func readmeAnswers(name, _ string) string {
	triage := `{"_need": "The customer was charged twice for March and needs the duplicate charge refunded today.", "category": "billing", "urgency": 4, "$confidence": 0.93}`
	if strings.HasPrefix(name, "LLM_") {
		return `{"step1_triage_ticket": ` + triage + `, "step2_draft_reply": {"subject": "Your March invoice: the double charge", ` +
			`"body": "Hello,\n\nYou are right: March was charged twice. We have refunded the duplicate charge today; it will show on your statement within three working days.\n\nSorry for the trouble,\nSupport"}}`
	}
	return triage
}
