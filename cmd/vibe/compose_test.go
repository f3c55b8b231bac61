package main

import (
	"os"
	"strings"
	"testing"
)

const example = "../../examples/schedule-meeting"

func TestComposeExample(t *testing.T) {
	want, err := os.ReadFile("../../compose/testdata/schedule-meeting-tool.json")
	if err != nil {
		t.Fatal(err)
	}
	status, stdout, stderr := run(t, "", "compose", "--registry", example+"/registry", example+"/tool.json")
	if status != 0 || stderr != "" {
		t.Fatalf("status %d, stderr %s", status, stderr)
	}
	if stdout != string(want) {
		t.Errorf("vibe compose differs from the compose package's golden file:\n%s", stdout)
	}
	tool, _ := os.ReadFile(example + "/tool.json")
	status, stdin, _ := run(t, string(tool), "compose", "--registry", example+"/registry", "-")
	if status != 0 || stdin != stdout {
		t.Errorf("compose - (stdin) differs: status %d", status)
	}
	t.Setenv("VIBE_REGISTRY", example+"/registry")
	if status, env, _ := run(t, "", "compose", example+"/tool.json"); status != 0 || env != stdout {
		t.Errorf("$VIBE_REGISTRY not used: status %d", status)
	}
}

func TestComposePipeline(t *testing.T) {
	status, stdout, stderr := run(t, "", "compose", "--registry", "testdata/registry",
		"--pipeline", `"Schedule a meeting" | identifyParticipants | fetchAvailability`)
	if status != 0 {
		t.Fatalf("status %d: %s", status, stderr)
	}
	for _, want := range []string{`"prompt": "Schedule a meeting"`, `"step1_identify_participants": {`, `"step2_fetch_availability": {`, `"references": [`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
}

// TestComposePipelineConst: the seed's sequential form is the same
// pipeline as the chain; its name errors are located at line:column.
func TestComposePipelineConst(t *testing.T) {
	_, chain, _ := run(t, "", "compose", "--registry", "testdata/registry",
		"--pipeline", `"Schedule a meeting" | identifyParticipants | fetchAvailability`)
	status, stdout, stderr := run(t, "", "compose", "--registry", "testdata/registry",
		"--pipeline", "const participants = identifyParticipants(\"Schedule a meeting\");\nconst availability = fetchAvailability(participants);")
	if status != 0 || stdout != chain {
		t.Fatalf("status %d: %s\n%s\nwant\n%s", status, stderr, stdout, chain)
	}
	status, _, stderr = run(t, "", "compose", "--registry", "testdata/registry",
		"--pipeline", "const a = identifyParticipants(prompt);\nconst a = fetchAvailability(b);\nconst b = fetchAvailability(a);")
	for _, want := range []string{"<pipeline>:2:7: a is bound twice: first at 1:7", "<pipeline>:2:29: b is used before it is bound at 3:7"} {
		if status != 1 || !strings.Contains(stderr, want) {
			t.Errorf("status %d, stderr lacks %q:\n%s", status, want, stderr)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"compose"},
		{"compose", "a.json", "b.json"},
		{"compose", "--pipeline", "A", "a.json"},
		{"compose", "--no-such-flag", "a.json"},
		{"compose", "--registry", "/no/such/dir", "a.json"},
		{"no-such-command"},
		{"ps", "--limit", "0"},
		{"ps", "--all", "--limit", "5"},
	} {
		status, _, stderr := run(t, "", args...)
		if status != 2 || !strings.Contains(stderr, "vibe help") {
			t.Errorf("vibe %s: status %d, stderr %q; want 2 and a pointer to help", strings.Join(args, " "), status, stderr)
		}
	}
	if status, stdout, _ := run(t, "", "help", "compose"); status != 0 || !strings.Contains(stdout, "FILE: /json/path: message") {
		t.Errorf("help compose: %d %s", status, stdout)
	}
}
