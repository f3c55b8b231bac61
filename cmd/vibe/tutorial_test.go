package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The README's second tutorial, "Add a person and a server action", lies
// between these markers. It goes on from the first: in the repository's
// root, with vibe installed and the first section's instructions written.
// Its ```sh blocks are commands; a ```json or ```text block after one is
// what it prints on standard output, and a ```terminal block what a person
// sees on the terminal (standard error) and types: a line "PROMPT> TYPED"
// is a question answered with TYPED. In all three a line "…" stands for
// any lines and a "…" within a line for any text, and a process id's eight
// hex digits may differ. The last block is `vibe serve`, which runs until
// it is stopped.
const (
	tutorialBegin = "<!-- tutorial: the commands of this section are run by cmd/vibe TestReadmeTutorial -->"
	tutorialEnd   = "<!-- /tutorial -->"
	// tutorialRecording is the file the section's commands replay the
	// model from.
	tutorialRecording = "examples/person-and-action/answers.jsonl"
	// tutorialAddr is where the section's action endpoint listens; the
	// test gives it a free port instead, and vibe serve a free port too,
	// so that the test runs beside anything else on the machine.
	tutorialAddr = "127.0.0.1:8765"
	// tutorialServe is the section's last command.
	tutorialServe = "vibe serve "
)

// tutorialFiles are the files the section writes, each the same as the
// one shipped in examples/person-and-action.
var tutorialFiles = map[string]string{
	"hello/instructions/ApproveReply_User.json":  "registry/instructions/ApproveReply_User.json",
	"hello/instructions/SendReply_Activity.json": "registry/instructions/SendReply_Activity.json",
	"hello/processes/answer-ticket.json":         "registry/processes/answer-ticket.json",
	"hello/outbox/main.go":                       "outbox/main.go",
	"hello/actions.json":                         "actions.json",
}

// TestReadmeTutorial follows the README's second tutorial word for word,
// as TestReadmeNewcomer follows the first: in a fresh directory that holds
// what the first section leaves (its instructions; vibe on the path), one
// shell runs the command blocks, standard input a pseudo-terminal on which
// the test types what a ```terminal block shows typed. Each block's output
// must be what the README shows, the files it writes the ones shipped in
// examples/person-and-action, and the closing vibe serve must serve the
// console with the section's processes in it and stop on Ctrl-C. With
// -update, the recording is made again from a test model (as
// TestReadmeNewcomer does), and the composed process shipped is written
// again.
func TestReadmeTutorial(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded Temporal server")
	}
	tty, typist, err := openPTY()
	if err != nil {
		t.Skipf("no pseudo-terminal to answer on: %v", err)
	}
	defer tty.Close()
	defer typist.Close()

	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := sectionBlocks(t, string(b), tutorialBegin, tutorialEnd)
	root, dir := readmeDir(t, "examples", "go.mod", "go.sum")
	// What the first section leaves: its two instructions.
	if err := os.MkdirAll(filepath.Join(dir, "hello/instructions"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"TriageTicket.json", "DraftReply.json"} {
		b, err := os.ReadFile(filepath.Join(root, "examples/first-instruction/registry/instructions", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "hello/instructions", name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	addr := freeAddr(t)

	// The script: each command block, then a line that ends its output
	// on both streams; the last, vibe serve, replaces the shell.
	const sep = "\n@@@ end of block @@@\n"
	var script strings.Builder
	script.WriteString("set -eu\n")
	var want, wantTerm []string // per command block: its output, its terminal
	var typed []string          // the answers typed, in order: prompt, then text
	served := false
	for i, bl := range blocks {
		switch bl.lang {
		case "sh":
			if served {
				t.Fatalf("block %d: a command block after %q", i+1, tutorialServe)
			}
			text := strings.ReplaceAll(bl.text, tutorialAddr, addr)
			if strings.HasPrefix(text, tutorialServe) && strings.Count(text, "\n") == 1 {
				served = true
				script.WriteString("exec " + strings.TrimSpace(text) + " --addr 127.0.0.1:0\n")
				break
			}
			script.WriteString(text)
			script.WriteString("printf '\\n@@@ end of block @@@\\n'; printf '\\n@@@ end of block @@@\\n' >&2\n")
			want, wantTerm = append(want, ""), append(wantTerm, "")
		case "json", "text", "terminal":
			if len(want) == 0 || served {
				t.Fatalf("block %d: an output block that follows no command block", i+1)
			}
			if bl.lang == "terminal" {
				wantTerm[len(wantTerm)-1] += bl.text
				for _, line := range strings.Split(bl.text, "\n") {
					if m := typedLine.FindStringSubmatch(line); m != nil {
						typed = append(typed, m[1], m[2])
					}
				}
				break
			}
			want[len(want)-1] += bl.text
		default:
			t.Fatalf("a ```%s block in the tutorial: only sh is run, and json, text or terminal checked", bl.lang)
		}
	}
	if !served {
		t.Fatalf("the tutorial does not end with %q", tutorialServe)
	}
	text := script.String()
	if !strings.Contains(text, "replay:"+tutorialRecording) {
		t.Fatalf("the tutorial does not replay %s", tutorialRecording)
	}

	// GOTOOLCHAIN as the first section exports it.
	text, env, rec := recordInstead(t, text, append(readmeEnv(vibeShim(t)), "GOTOOLCHAIN=auto"), tutorialRecording)
	var stdout, stderr streamed
	cmd := exec.Command("bash", "-c", text)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, &stdout, &stderr
	// The shell, the action endpoint it starts and vibe serve are one
	// process group, ended together whatever happens.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	exited := make(chan struct{}) // closed when the shell has ended, waitErr set
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s\nscript:\n%s\nstdout:\n%s\nstderr:\n%s", fmt.Sprintf(format, args...), text, stdout.String(), stderr.String())
	}

	// Type each answer when its question is asked.
	at := 0
	for i := 0; i < len(typed); i += 2 {
		var ok bool
		if at, ok = stderr.waitFor(typed[i], at, exited, 3*time.Minute); !ok {
			fail("the question %q was not asked", typed[i])
		}
		if _, err := io.WriteString(typist, typed[i+1]+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	const serving = "vibe: the console is at "
	end, ok := stderr.waitFor(serving, at, exited, 3*time.Minute)
	if !ok {
		fail("vibe serve did not serve")
	}
	rest := stderr.String()[end:]
	url, _, _ := strings.Cut(rest, "\n")

	// The console shows the section's processes, offers its process to
	// start, and has an inbox.
	ids := regexp.MustCompile(`vibe: started (\S+)`).FindAllStringSubmatch(stderr.String(), -1)
	if len(ids) == 0 {
		fail("no process was started")
	}
	page := func(path string) string {
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s%s: %s\n%s", url, path, resp.Status, b)
		}
		return string(b)
	}
	processes := page("processes")
	for _, id := range ids {
		if !strings.Contains(processes, id[1]) {
			t.Errorf("the console's processes do not list %s:\n%s", id[1], processes)
		}
	}
	if start := page("start"); !strings.Contains(start, "aug:processes/answer-ticket") {
		t.Errorf("the console's start page does not offer aug:processes/answer-ticket:\n%s", start)
	}
	// What the section says to do in the console — start the process with
	// the same request, answer it in the inbox — through the API the
	// console's forms use: it waits in the inbox, and the answer sends.
	post := func(path, body string) string {
		resp, err := http.Post(url+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode/100 != 2 {
			t.Fatalf("POST %s%s: %s\n%s", url, path, resp.Status, b)
		}
		return string(b)
	}
	m := regexp.MustCompile(`"id":\s*"([^"]+)"`).FindStringSubmatch(post("v1/processes",
		`{"process": "aug:processes/answer-ticket", "prompt": "We were charged twice for March and our finance team is blocked. Please fix it today."}`))
	if m == nil {
		t.Fatal("the start gave no id")
	}
	until := func(status string) string {
		t.Helper()
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			if p := page("v1/processes/" + m[1]); strings.Contains(p, `"status": "`+status+`"`) || strings.Contains(p, `"status":"`+status+`"`) {
				return p
			}
		}
		t.Fatalf("process %s did not become %s:\n%s", m[1], status, page("v1/processes/"+m[1]))
		return ""
	}
	until("waiting")
	if inbox := page("inbox"); !strings.Contains(inbox, m[1]) {
		t.Errorf("the console's inbox does not hold %s:\n%s", m[1], inbox)
	}
	post("v1/processes/"+m[1]+"/answer", `{"step3_approve_reply_User": {"decision": "send"}}`)
	if done := until("completed"); !regexp.MustCompile(`"sent":\s*true`).MatchString(done) {
		t.Errorf("the process answered in the inbox did not send:\n%s", done)
	}

	// Ctrl-C stops vibe serve.
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		if code := cmd.ProcessState.ExitCode(); code != exitInterrupted {
			fail("vibe serve ended with %v on Ctrl-C, want exit status %d", waitErr, exitInterrupted)
		}
	case <-time.After(time.Minute):
		fail("vibe serve did not stop within a minute of Ctrl-C")
	}
	t.Logf("stderr:\n%s", stderr.String())

	got := strings.Split(stdout.String(), sep)
	gotTerm := strings.Split(stderr.String(), sep)
	if len(got) != len(want)+1 || len(gotTerm) != len(want)+1 {
		fail("%d blocks printed, %d run", len(got)-1, len(want))
	}
	for i := range want {
		if !matchOutput(got[i], want[i]) {
			t.Errorf("command block %d prints\n%s\nthe README shows\n%s", i+1, got[i], want[i])
		}
		if wantTerm[i] == "" || rec != "" {
			continue // with -update the terminal says it records, not that it replays
		}
		term := gotTerm[i]
		for j := 0; j < len(typed); j += 2 {
			// Standard error is not the terminal: the answer typed is
			// not echoed there, and the next line follows the prompt.
			term = strings.ReplaceAll(term, typed[j], typed[j]+"\n")
		}
		shown := typedLine.ReplaceAllString(wantTerm[i], "$1")
		if !matchOutput(term, shown) {
			t.Errorf("command block %d shows on the terminal\n%s\nthe README shows\n%s", i+1, term, wantTerm[i])
		}
	}

	for written, shipped := range tutorialFiles {
		w, err := os.ReadFile(filepath.Join(dir, written))
		if err != nil {
			t.Fatal(err)
		}
		w = bytes.ReplaceAll(w, []byte(addr), []byte(tutorialAddr))
		path := filepath.Join(root, "examples/person-and-action", shipped)
		if rec != "" && strings.HasPrefix(written, "hello/processes/") {
			if err := os.WriteFile(path, w, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		s, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(w, s) {
			t.Errorf("the README writes %s unlike examples/person-and-action/%s:\n%s", written, shipped, w)
		}
	}
	keepRecording(t, root, rec, tutorialRecording, stderr.String())
}

// typedLine is a terminal line on which the person types: the question,
// up to its "> ", then what is typed.
var typedLine = regexp.MustCompile(`(?m)^(\S.*?> )(\S.*)$`)

// processID is a process's id: its name, then eight hex digits that differ
// from run to run.
var processID = regexp.MustCompile(`\b([a-z]+(?:-[a-z]+)*)-[0-9a-f]{8}\b`)

// matchOutput reports whether got is the output want shows: line by line,
// but that a want line "…" stands for any lines (none included), a "…"
// within a line for any text, and process ids' hex digits are not
// compared.
func matchOutput(got, want string) bool {
	norm := func(s string) []string {
		s = processID.ReplaceAllString(s, "$1-########")
		lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
		for i, l := range lines {
			lines[i] = strings.TrimRight(l, " ")
		}
		return lines
	}
	g, w := norm(got), norm(want)
	// matches[i][j]: g[i:] matches w[j:].
	matches := make([][]bool, len(g)+1)
	for i := range matches {
		matches[i] = make([]bool, len(w)+1)
	}
	matches[len(g)][len(w)] = true
	for i := len(g); i >= 0; i-- {
		for j := len(w) - 1; j >= 0; j-- {
			if strings.TrimSpace(w[j]) == "…" {
				matches[i][j] = matches[i][j+1] || (i < len(g) && matches[i+1][j])
				continue
			}
			matches[i][j] = i < len(g) && lineMatches(g[i], w[j]) && matches[i+1][j+1]
		}
	}
	return matches[0][0]
}

// lineMatches reports whether got is the line want, each "…" in it any
// text.
func lineMatches(got, want string) bool {
	if !strings.Contains(want, "…") {
		return got == want
	}
	parts := strings.Split(want, "…")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".*") + "$").MatchString(got)
}

// streamed is a command's output as it comes, for a test to wait on.
type streamed struct {
	mu      sync.Mutex
	b       []byte
	changed chan struct{} // closed at the next write
}

func (s *streamed) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b = append(s.b, p...)
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
	return len(p), nil
}

func (s *streamed) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.b)
}

// waitFor waits until text has come after offset from, and returns the
// offset after it; ok is false when the command exits or timeout passes
// first.
func (s *streamed) waitFor(text string, from int, exited <-chan struct{}, timeout time.Duration) (end int, ok bool) {
	deadline := time.After(timeout)
	for {
		s.mu.Lock()
		if i := bytes.Index(s.b[from:], []byte(text)); i >= 0 {
			s.mu.Unlock()
			return from + i + len(text), true
		}
		if s.changed == nil {
			s.changed = make(chan struct{})
		}
		changed := s.changed
		s.mu.Unlock()
		select {
		case <-changed:
		case <-exited:
			return 0, false
		case <-deadline:
			return 0, false
		}
	}
}
