package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompletion: vibe completion writes a script for each shell, and the
// completions it asks the program for — flags, their values, registry
// URIs — come back without an engine. Where bash and bash-completion are
// installed, the bash script itself is run as a shell runs it.
func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		if status, out, stderr := run(t, "", "completion", shell); status != 0 || !strings.Contains(out, "__complete") {
			t.Errorf("completion %s: %d %s\n%.200s", shell, status, stderr, out)
		}
	}
	reg := example + "/registry"
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"run", "--pro"}, []string{"--prompt\t"}},
		{[]string{"ps", "--status", ""}, []string{"running", "waiting", "completed", "failed"}},
		{[]string{"run", "--llm", ""}, []string{"openai:", "anthropic:", "replay:"}},
		{[]string{"run", "--registry", reg, "aug:"}, []string{"aug:processes/schedule-meeting"}},
		{[]string{"compile", "--registry", reg, "aug:"}, []string{"aug:processes/schedule-meeting"}},
		{[]string{"compose", "--registry", reg, "aug:"}, []string{"aug:instructions/identifyParticipants", "aug:processes/schedule-meeting"}},
		{[]string{"serve", "--registry", reg, "--processes", ""}, []string{"aug:processes/schedule-meeting"}},
	} {
		status, out, stderr := run(t, "", append([]string{"__complete"}, tt.args...)...)
		for _, w := range tt.want {
			if status != 0 || !strings.Contains(out, w) {
				t.Errorf("__complete %v: %d %s\n%s, want %q", tt.args, status, stderr, out, w)
			}
		}
	}

	// The bash script, as bash runs it on Tab.
	bash, err := exec.LookPath("bash")
	lib := "/usr/share/bash-completion/bash_completion"
	if _, serr := os.Stat(lib); err != nil || serr != nil {
		t.Skip("no bash with bash-completion here")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	shim := "#!/bin/sh\nVIBE_TEST_MAIN=1 exec " + shellQuote([]string{self}) + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "vibe"), []byte(shim), 0o755); err != nil {
		t.Fatal(err)
	}
	_, script, _ := run(t, "", "completion", "bash")
	if err := os.WriteFile(filepath.Join(dir, "vibe.bash"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	// tab completes the words after "vibe" as bash does on Tab, and
	// prints what it offers, one a line.
	const tab = `tab() { COMP_WORDS=(vibe "$@"); COMP_CWORD=$#; COMP_LINE="vibe $*"; COMP_POINT=${#COMP_LINE}; COMPREPLY=(); __start_vibe; printf '%s\n' "${COMPREPLY[@]}"; echo @@; }`
	cmd := exec.Command(bash, "-c", "source "+lib+"; source vibe.bash; "+tab+"; tab ps --sta; tab ps --status ''; tab ru; tab run --promt")
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.Output() // compopt complains on stderr outside a real completion
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	if got, want := string(out), "--status\n@@\nrunning\nwaiting\ncompleted\nfailed\n@@\nrun\n@@\n\n@@\n"; got != want {
		t.Errorf("bash completes\n%s\nwant\n%s", got, want)
	}
}
