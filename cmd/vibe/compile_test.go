package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/augceo/vibe/jsonv"
)

func TestCompileExample(t *testing.T) {
	want, err := os.ReadFile("../../compile/testdata/schedule-meeting.compiled.json")
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"compile", "--registry", example + "/registry", "--actions", "FetchAvailability_Activity,sendInvitation", example + "/registry/processes/schedule-meeting@2.json"}
	status, stdout, stderr := run(t, "", args...)
	if status != 0 {
		t.Fatalf("status %d: %s", status, stderr)
	}
	// The compile package's golden file names the file by its registry path.
	if stdout != string(want) {
		t.Errorf("vibe compile differs from compile/testdata/schedule-meeting.compiled.json:\n%s", stdout)
	}
	status, explain, stderr := run(t, "", append(args, "--explain")...)
	if status != 0 {
		t.Fatalf("--explain: status %d: %s", status, stderr)
	}
	golden(t, "testdata/schedule-meeting.explain.txt", explain)
	// --dot and --svg draw what package diagram draws.
	for flag, file := range map[string]string{"--dot": "schedule-meeting.dot", "--svg": "schedule-meeting.svg"} {
		status, out, stderr := run(t, "", append(args, flag)...)
		want, err := os.ReadFile("../../diagram/testdata/" + file)
		if err != nil {
			t.Fatal(err)
		}
		if status != 0 || out != string(want) {
			t.Errorf("%s: status %d, %s\n%s", flag, status, stderr, out)
		}
	}
	if status, _, stderr := run(t, "", append(args, "--dot", "--svg")...); status != 2 || !strings.Contains(stderr, "--dot, --svg: give one of them") {
		t.Errorf("--dot --svg: status %d, %s", status, stderr)
	}
}

func TestCompileSeedProcess(t *testing.T) {
	status, stdout, stderr := run(t, "", "compile", example+"/registry/processes/schedule-meeting@1.json")
	if status != 1 || stdout != "" {
		t.Fatalf("status %d, stdout %q", status, stdout)
	}
	if n := strings.Count(stderr, "\n"); n != 5 {
		t.Errorf("%d error lines, want 5:\n%s", n, stderr)
	}
}

func TestCompileBatch(t *testing.T) {
	status, stdout, stderr := run(t, "", "compile", "--registry", "../../compile/testdata/registry", "--batch", "40",
		"--pipeline", `"Moderate the comments" | Classify | Explain | Score | Decide`)
	if status != 0 {
		t.Fatalf("status %d: %s", status, stderr)
	}
	calls, err := jsonv.Parse([]byte(stdout))
	if err != nil {
		t.Fatal(err)
	}
	// 40 items at the default of 32 per call: two calls of 20.
	if calls.Len() != 2 {
		t.Fatalf("%d calls, want 2", calls.Len())
	}
	for i, c := range calls.Array() {
		items := c.Lookup("items").Array()
		if first, _ := items[0].Int(); first != int64(1+20*i) {
			t.Errorf("call %d starts at item %d", i, first)
		}
		if n := c.Lookup("schema").Lookup("properties").Len(); n != 80 {
			t.Errorf("call %d has %d properties, want 20 items × 4 steps", i, n)
		}
	}
	if status, _, stderr := run(t, "", "compile", "--batch", "0", "--registry", "../../compile/testdata/registry", "--pipeline", `"x" | Classify`); status != 2 || !strings.Contains(stderr, "--batch") {
		t.Errorf("--batch 0: status %d, %s", status, stderr)
	}
}

// TestCompileURI: vibe compile takes aug: URIs, as run, batch and the API
// do, fragments among them, and names an unknown one.
func TestCompileURI(t *testing.T) {
	want, err := os.ReadFile("../../compile/testdata/schedule-meeting.compiled.json")
	if err != nil {
		t.Fatal(err)
	}
	reg := example + "/registry"
	status, stdout, stderr := run(t, "", "compile", "--registry", reg, "--actions", "FetchAvailability_Activity,sendInvitation", "aug:processes/schedule-meeting")
	if status != 0 {
		t.Fatalf("status %d: %s", status, stderr)
	}
	if stdout != string(want) {
		t.Errorf("vibe compile aug:processes/schedule-meeting differs from the file's compilation:\n%s", stdout)
	}
	status, stdout, stderr = run(t, "", "compile", "--registry", reg, "--explain", "aug:processes/schedule-meeting:2#llmContext1")
	if status != 0 || !strings.Contains(stdout, "LLM_identifyParticipants") {
		t.Errorf("a fragment: status %d, %s%s", status, stdout, stderr)
	}
	status, _, stderr = run(t, "", "compile", "--registry", reg, "aug:processes/no-such")
	if status != 1 || !strings.Contains(stderr, "aug:processes/no-such") || strings.Contains(stderr, "no such file") {
		t.Errorf("an unknown URI: status %d, %s", status, stderr)
	}
	status, stdout, stderr = run(t, "", "compose", "--registry", reg, "aug:instructions/identifyParticipants")
	if status != 0 || !strings.Contains(stdout, `"properties"`) {
		t.Errorf("vibe compose of a URI: status %d, %s", status, stderr)
	}
}

// TestCompileActionsFile: vibe compile takes the actions file vibe run
// and vibe serve take, as --actions takes names; a bad file is told as
// they tell it.
func TestCompileActionsFile(t *testing.T) {
	dir := t.TempDir()
	actions := filepath.Join(dir, "actions.json")
	os.WriteFile(actions, []byte(`{"FetchAvailability_Activity": "http://127.0.0.1:9/fetch", "sendInvitation": {"url": "http://127.0.0.1:9/send"}}`), 0o600)
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"sendInvitation": 7}`), 0o600)
	file := example + "/registry/processes/schedule-meeting@2.json"
	_, byName, _ := run(t, "", "compile", "--registry", example+"/registry", "--actions", "FetchAvailability_Activity,sendInvitation", file)
	for _, tt := range []struct {
		args   []string
		status int
		out    string
		err    string
	}{
		{[]string{"--actions-file", actions}, 0, byName, ""},
		{[]string{"--actions-file", actions, "--actions", "sendInvitation"}, 0, byName, ""},
		{[]string{"--actions-file", bad}, 1, "", bad + `: /sendInvitation: action "sendInvitation" must be a URL or an object with "url" or "mcp", not number` + "\n"},
	} {
		status, out, stderr := run(t, "", append([]string{"compile", "--registry", example + "/registry", file}, tt.args...)...)
		if status != tt.status || out != tt.out || stderr != tt.err {
			t.Errorf("%v: %d %s\n%s", tt.args, status, stderr, out)
		}
	}
}

// TestPipelineFile: --pipeline @FILE reads the expression from FILE, as
// --input and --answer read JSON, and errors in it name FILE.
func TestPipelineFile(t *testing.T) {
	dir := t.TempDir()
	expr := `"Moderate the comments" | Classify | Explain`
	good := filepath.Join(dir, "moderate.pipe")
	os.WriteFile(good, []byte(expr+"\n"), 0o600)
	bad := filepath.Join(dir, "bad.pipe")
	os.WriteFile(bad, []byte("\"x\"\n  | Nope\n"), 0o600)
	reg := "../../compile/testdata/registry"
	for _, c := range []string{"compose", "compile"} {
		_, want, _ := run(t, "", c, "--registry", reg, "--pipeline", expr)
		if status, got, stderr := run(t, "", c, "--registry", reg, "--pipeline", "@"+good); status != 0 || got != want {
			t.Errorf("%s --pipeline @FILE: %d %s\n%s", c, status, stderr, got)
		}
		if status, _, stderr := run(t, "", c, "--registry", reg, "--pipeline", "@"+bad); status != 1 || !strings.HasPrefix(stderr, bad+`:2:5: unknown instruction "Nope"`) {
			t.Errorf("%s --pipeline @BAD: %d %s", c, status, stderr)
		}
		if status, _, stderr := run(t, "", c, "--registry", reg, "--pipeline", "@"+dir+"/none.pipe"); status != 1 || !strings.Contains(stderr, "vibe: --pipeline @"+dir+"/none.pipe: open ") {
			t.Errorf("%s --pipeline @MISSING: %d %s", c, status, stderr)
		}
	}
}

// longchain is the ten-step planning chain of compile/testdata/longchain.
const longchain = `"Plan the launch of a note-taking app" | FrameProblem | GatherFacts | ListOptions | WeighOptions | ChooseApproach | PlanSteps | EstimateCost | IdentifyRisks | MitigateRisks | WriteSummary`

func TestCompileBudget(t *testing.T) {
	models := t.TempDir() + "/models.json"
	os.WriteFile(models, []byte(`{"models": {"tiny-model": {"context": 2000, "output": 1000}}}`), 0o644)
	for _, tc := range []struct {
		name   string
		args   []string
		status int
		out    []string // lines of stdout that must be there
		err    string   // in stderr
	}{{
		name: "each chunk of an example, counted with OpenAI's tokenizer",
		args: []string{"--registry", example + "/registry", "--actions", "FetchAvailability_Activity,sendInvitation", example + "/registry/processes/schedule-meeting@2.json", "--llm", "openai:gpt-4o-mini"},
		out:  []string{"model gpt-4o-mini: context window 128000 tokens, output limit 16384", "LLM_llmContext1 ", "LLM_llmContext2 ", "tokens counted with o200k_base"},
	}, {
		name: "a multiplexed call at K",
		args: []string{"--registry", "../../examples/moderation-stream/registry", "--pipeline", "prompt | AssessSentiment | DecideModeration | RecordDecision_Activity", "--llm", "anthropic:claude-haiku-4-5", "--batch", "16"},
		out:  []string{"LLM_step1_assess_sentiment  16 ", "tokens estimated at 4 bytes a token"},
	}, {
		name:   "a chunk whose answer is over the model's output limit is refused",
		args:   []string{"--registry", "../../compile/testdata/longchain", "--pipeline", longchain, "--llm", "openai:tiny-model", "--models", models},
		status: 1,
		out:    []string{"model tiny-model: context window 2000 tokens, output limit 1000"},
		err:    "chunk LLM_step1_frame_problem cannot fit tiny-model: its answer, about 2123 tokens, is over tiny-model's output limit of 1000: split the chunk",
	}, {
		name:   "a call of K items that is over it is told to lower K",
		args:   []string{"--registry", "../../compile/testdata/longchain", "--pipeline", `"x" | FrameProblem | GatherFacts | ListOptions | WeighOptions`, "--llm", "openai:gpt-3.5-turbo", "--batch", "32"},
		status: 1,
		err:    "is over gpt-3.5-turbo's output limit of 4096: lower K to at most 4",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			status, stdout, stderr := run(t, "", append([]string{"compile", "--budget"}, tc.args...)...)
			if status != tc.status || !strings.Contains(stderr, tc.err) {
				t.Fatalf("status %d, want %d; stderr %s\n%s", status, tc.status, stderr, stdout)
			}
			for _, line := range tc.out {
				if !strings.Contains(stdout, line) {
					t.Errorf("no %q in\n%s", line, stdout)
				}
			}
		})
	}
	// Recorded answers size the free strings: the moderation example's
	// reasons are a sentence, not the default's 400 characters.
	args := []string{"compile", "--budget", "--registry", "../../examples/moderation-stream/registry", "--pipeline", "prompt | AssessSentiment | DecideModeration | RecordDecision_Activity", "--batch", "32"}
	_, guessed, _ := run(t, "", args...)
	status, recorded, stderr := run(t, "", append(args, "--answers", "../../examples/moderation-stream/answers.jsonl")...)
	output := func(table string) int {
		for _, line := range strings.Split(table, "\n") {
			if f := strings.Fields(line); len(f) == 9 && f[0] == "LLM_step1_assess_sentiment" {
				n, _ := strconv.Atoi(f[7])
				return n
			}
		}
		return 0
	}
	if status != 0 || output(recorded) == 0 || output(recorded)*2 > output(guessed) {
		t.Errorf("status %d %s: the answer's tokens from the recording %d, from the defaults %d", status, stderr, output(recorded), output(guessed))
	}
}
