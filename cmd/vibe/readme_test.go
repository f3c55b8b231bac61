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
	"GOTOOLCHAIN=auto go test -timeout 30m ./...",
}

// readmeBlock is a fenced block of the newcomer section.
type readmeBlock struct {
	lang string // "sh" or "json"
	text string
}

// sectionBlocks returns the fenced blocks of the README between the
// markers begin and end.
func sectionBlocks(t *testing.T, readme, begin, end string) []readmeBlock {
	t.Helper()
	_, rest, ok := strings.Cut(readme, begin)
	if !ok {
		t.Fatalf("README.md has no %q", begin)
	}
	section, _, ok := strings.Cut(rest, end)
	if !ok {
		t.Fatalf("README.md has no %q", end)
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
	blocks := sectionBlocks(t, string(b), newcomerBegin, newcomerEnd)
	root, dir := readmeDir(t, "examples")
	bin := vibeShim(t)

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

	text, env, rec := recordInstead(t, text, readmeEnv(bin), recording)
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
	keepRecording(t, root, rec, recording, stderr.String())
}

// recordInstead, with -update, has a README section's commands ask a test
// model that gives the answers written for the README (readmeAnswers)
// instead of replaying the section's recording, and record what it
// answers through VIBE_LLM_RECORD to rec, as a reader's real model would
// be recorded; without -update it changes nothing and rec is "".
func recordInstead(t *testing.T, script string, env []string, recording string) (string, []string, string) {
	if !goldenfile.Update() {
		return script, env, ""
	}
	srv := llmtest.NewServer(t, readmeAnswers, llmtest.Options{Tokens: true, Model: "authored-for-the-readme"})
	rec := filepath.Join(t.TempDir(), "answers.jsonl")
	script = strings.ReplaceAll(script, "replay:"+recording, "openai:authored-for-the-readme")
	return script, append(env, "VIBE_LLM_BASE_URL="+srv.URL, "VIBE_LLM_API_KEY=none", "VIBE_LLM_RECORD="+rec), rec
}

// keepRecording ends a README section's run: with -update (rec set) the
// answers recorded become the section's recording; without, the commands
// must have said that they replay it.
func keepRecording(t *testing.T, root, rec, recording, stderr string) {
	t.Helper()
	if rec == "" {
		if !strings.Contains(stderr, "replaying recorded answers from "+recording) {
			t.Errorf("the commands do not say they replay a recording:\n%s", stderr)
		}
		return
	}
	b, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, recording), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// readmeDir returns the repository's root and a fresh directory for a
// README section's commands to run in, as in the repository's root: links
// to the root's files named.
func readmeDir(t *testing.T, names ...string) (root, dir string) {
	t.Helper()
	root, dir = repoRoot(t), t.TempDir()
	for _, name := range names {
		if err := os.Symlink(filepath.Join(root, name), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return root, dir
}

// repoRoot is the repository's root directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// vibeShim returns a directory holding a `vibe` that runs this test binary
// as the command: it stands in for what `go install ./cmd/vibe` installs.
func vibeShim(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	shim := "#!/bin/sh\nVIBE_TEST_MAIN=1 exec " + shellQuote([]string{self}) + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "vibe"), []byte(shim), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// readmeEnv is the environment a README section runs in: the shim's
// directory first on the path, and the Go settings of this test's.
func readmeEnv(bin string) []string {
	env := []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for _, v := range []string{"GOPATH", "GOCACHE", "GOMODCACHE", "GOFLAGS", "GOPROXY", "TMPDIR"} {
		if s, ok := os.LookupEnv(v); ok {
			env = append(env, v+"="+s)
		}
	}
	return env
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
