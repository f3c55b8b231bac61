package main

import (
	"bufio"
	"encoding/json"
	goio "io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/augceo/vibe"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/process"
)

// The CLI's conventions (issue 27, 3).

// TestVersion: vibe version and vibe --version name Vibe's version and
// those of Temporal and the model SDKs, from the build information.
func TestVersion(t *testing.T) {
	status, out, stderr := run(t, "", "version")
	if status != 0 || stderr != "" {
		t.Fatalf("version: %d %s", status, stderr)
	}
	if !strings.HasPrefix(out, "vibe ") {
		t.Errorf("version does not start with vibe: %s", out)
	}
	for _, m := range []string{"go.temporal.io/server v", "go.temporal.io/sdk v", "github.com/openai/openai-go/v3 v", "github.com/anthropics/anthropic-sdk-go v"} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), m) {
			t.Errorf("version does not name %s:\n%s", m, out)
		}
	}
	if status, flag, _ := run(t, "", "--version"); status != 0 || flag != out {
		t.Errorf("--version: %d\n%s\nwant\n%s", status, flag, out)
	}
	// --json says the same as JSON.
	status, js, stderr := run(t, "", "version", "--json")
	var v buildVersions
	if err := json.Unmarshal([]byte(js), &v); status != 0 || err != nil {
		t.Fatalf("version --json: %d %v %s\n%s", status, err, stderr, js)
	}
	if !strings.HasPrefix(out, "vibe "+v.Vibe+" ("+v.Go+")\n") || len(v.Modules) != len(versionModules) {
		t.Errorf("version --json %+v, the text:\n%s", v, out)
	}
	for _, m := range v.Modules {
		if !strings.Contains(out, m.Path) || !strings.Contains(out, m.Version) || m.Version == "" {
			t.Errorf("version --json: %+v is not in the text", m)
		}
	}
}

// TestHelp: the root's help documents the environment and the exit
// statuses; every main command's help has examples; completion is there.
func TestHelp(t *testing.T) {
	_, out, _ := run(t, "", "--help")
	golden(t, "testdata/help.txt", out)
	for _, want := range []string{"VIBE_DATA", "VIBE_LOG", "VIBE_LLM", "130 interrupted"} {
		if !strings.Contains(out, want) {
			t.Errorf("vibe --help does not say %s", want)
		}
	}
	for _, c := range []string{"ask", "compose", "compile", "run", "answer", "show", "ps", "requests", "batch", "batches", "serve", "worker", "vessel", "plan", "mcp", "version"} {
		status, out, _ := run(t, "", c, "--help")
		if status != 0 || !strings.Contains(out, "\nExamples:\n  vibe "+c) {
			t.Errorf("vibe %s --help has no examples:\n%s", c, out)
		}
	}
	status, out, _ := run(t, "", "completion", "bash")
	if status != 0 || !strings.Contains(out, "__start_vibe") {
		t.Errorf("vibe completion bash: %d\n%.200s", status, out)
	}
}

// TestReadOnlyCreatesNothing: a command that only reads, in a directory
// where nothing has run, finds nothing and creates no data directory —
// whether --data or $VIBE_DATA names it.
func TestReadOnlyCreatesNothing(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, ".vibe")
	tests := []struct {
		args   []string
		status int
		out    string
	}{
		{[]string{"ps", "--data", data}, 0, "ID  PROCESS  STATUS  STARTED\n"},
		{[]string{"ps", "--json", "--data", data}, 0, "[]\n"},
		{[]string{"ps", "--status", "waiting", "--json"}, 0, "[]\n"}, // $VIBE_DATA
		{[]string{"requests", "--json"}, 0, "[]\n"},
		{[]string{"batches", "--json"}, 0, "[]\n"},
		{[]string{"show", "p-1"}, 1, ""},
		{[]string{"batches", "b-1"}, 1, ""},
	}
	t.Setenv("VIBE_DATA", data)
	for _, tt := range tests {
		status, out, stderr := run(t, "", tt.args...)
		if status != tt.status || out != tt.out {
			t.Errorf("vibe %s: %d %q %s, want %d %q", strings.Join(tt.args, " "), status, out, stderr, tt.status, tt.out)
		}
		if tt.status == 1 && !strings.Contains(stderr, "nothing has run here") {
			t.Errorf("vibe %s: %s", strings.Join(tt.args, " "), stderr)
		}
		if _, err := os.Stat(data); !os.IsNotExist(err) {
			t.Fatalf("vibe %s created %s", strings.Join(tt.args, " "), data)
		}
	}
	if status, _, stderr := run(t, "", "ps", "--status", "asleep"); status != exitUsage || !strings.Contains(stderr, "give running, waiting, completed or failed") {
		t.Errorf("ps --status asleep: %d %s", status, stderr)
	}
}

// TestInterrupted: Ctrl-C ends a command with 130, here one waiting for
// the model's answer.
func TestInterrupted(t *testing.T) {
	asked := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case asked <- struct{}{}:
		default:
		}
		// Read whole, a request's end is seen when the client leaves.
		goio.Copy(goio.Discard, r.Body)
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	go func() {
		<-asked
		syscall.Kill(os.Getpid(), syscall.SIGINT)
	}()
	status, _, stderr := run(t, "", "ask", instruction, "--prompt", "Meet Bob", "--llm", "openai:m", "--llm-base-url", srv.URL)
	if status != exitInterrupted || !strings.Contains(stderr, "interrupted") {
		t.Errorf("interrupted ask: %d %s", status, stderr)
	}
}

// TestChoices: a person's choice is asked as numbered options and y/n,
// and the answer is built from them; any other schema is asked as JSON.
func TestChoices(t *testing.T) {
	tests := []struct {
		name, schema, input, want string
		asked                     []string
	}{
		{"an enum in an object", `{"type":"object","properties":{"confirm":{"type":"object","properties":{"decision":{"enum":["Approve","Reject"],"description":"send it?"}}}}}`,
			"2\n", `{"confirm":{"decision":"Reject"}}`, []string{"confirm.decision — send it?:", "  1) Approve", "  2) Reject", "choose 1-2> "}},
		{"an option by its text, after a wrong one", `{"type":"object","properties":{"d":{"enum":["a","b"]}}}`,
			"3\nb\n", `{"d":"b"}`, []string{"give a number from 1 to 2"}},
		{"booleans and a constant", `{"type":"object","properties":{"kind":{"const":"vote"},"approve":{"type":"boolean"},"notify":{"type":"boolean"}}}`,
			"y\nmaybe\nno\n", `{"kind":"vote","approve":true,"notify":false}`, []string{"approve [y/n]> ", "answer y or n"}},
		{"a number enum", `{"enum":[1,2,3]}`, "3\n", `3`, []string{"  3) 3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			qs, ok := choiceQuestions(mustJSON(t, tt.schema))
			if !ok {
				t.Fatal("not a choice")
			}
			var out strings.Builder
			got, err := askChoices(bufio.NewScanner(strings.NewReader(tt.input)), &out, qs)
			if err != nil || string(jsonv.Marshal(got)) != tt.want {
				t.Errorf("answer %s (%v), want %s", jsonv.Marshal(got), err, tt.want)
			}
			for _, a := range tt.asked {
				if !strings.Contains(out.String(), a) {
					t.Errorf("asked:\n%s\nwant %q", out.String(), a)
				}
			}
		})
	}
	for _, s := range []string{`{"type":"object","properties":{"note":{"type":"string"}}}`, `{"type":"object"}`, `{"type":"array"}`} {
		if _, ok := choiceQuestions(mustJSON(t, s)); ok {
			t.Errorf("%s is asked as a choice", s)
		}
	}
	if _, err := askChoices(bufio.NewScanner(strings.NewReader("")), &strings.Builder{}, []question{{path: []string{"b"}}}); err == nil {
		t.Error("no answer given: no error")
	}
}

// TestListings: ps lists newest first, filters by --status, prints JSON
// with --json (here with $VIBE_DATA for --data); ids and registry URIs
// complete; the person's choice of a real waiting process is a choice; and
// --llm while a vibe serve has the data directory is refused, where it
// used to be silently unused.
func TestListings(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	t.Setenv("VIBE_DATA", data)
	model := newMeetingModel(t)
	actions, _ := meetingActions(t)
	status, _, stderr := run(t, "", "run", "aug:processes/schedule-meeting", "--registry", example+"/registry", "--prompt", "Meet Bob",
		"--actions-file", actions, "--llm", "openai:test-model", "--llm-base-url", model.URL)
	if status != 0 || !strings.Contains(stderr, "waits for a person's answer") {
		t.Fatalf("run: %d\n%s", status, stderr)
	}
	waiting := strings.Fields(stderr[strings.Index(stderr, "vibe: started ")+len("vibe: started "):])[0]
	empty := filepath.Join(dir, "empty.jsonl")
	os.WriteFile(empty, nil, 0o600)
	time.Sleep(10 * time.Millisecond) // distinct start times
	status, _, stderr = run(t, "", "run", "--registry", "testdata/registry", "--pipeline", "identifyParticipants", "--prompt", "Meet Carol", "--llm", "replay:"+empty)
	if status != 1 {
		t.Fatalf("run: %d\n%s", status, stderr)
	}
	failed := strings.Fields(stderr[strings.Index(stderr, "vibe: started ")+len("vibe: started "):])[0]

	ps := func(args ...string) []process.Summary {
		t.Helper()
		status, out, stderr := run(t, "", append([]string{"ps", "--json"}, args...)...)
		var list []process.Summary
		if err := json.Unmarshal([]byte(out), &list); status != 0 || err != nil {
			t.Fatalf("ps --json %v: %d %v\n%s%s", args, status, err, out, stderr)
		}
		return list
	}
	ids := func(list []process.Summary) (s []string) {
		for _, p := range list {
			s = append(s, p.ID)
		}
		return s
	}
	if got := ids(ps()); strings.Join(got, " ") != failed+" "+waiting {
		t.Errorf("ps: %v, want newest first: %s %s", got, failed, waiting)
	}
	if got := ids(ps("--status", "waiting")); strings.Join(got, " ") != waiting {
		t.Errorf("ps --status waiting: %v", got)
	}
	if got := ids(ps("--status", "failed")); strings.Join(got, " ") != failed {
		t.Errorf("ps --status failed: %v", got)
	}

	// Completion: every process for show, the waiting ones for answer,
	// the registry's processes for run.
	complete := func(args ...string) string {
		t.Helper()
		status, out, stderr := run(t, "", append([]string{"__complete"}, args...)...)
		if status != 0 {
			t.Fatalf("__complete %v: %d %s", args, status, stderr)
		}
		return out
	}
	if out := complete("show", ""); !strings.Contains(out, failed+"\tidentify-participants, failed") || !strings.Contains(out, waiting+"\t") {
		t.Errorf("show's ids:\n%s", out)
	}
	if out := complete("answer", ""); !strings.Contains(out, waiting) || strings.Contains(out, failed) {
		t.Errorf("answer's ids:\n%s", out)
	}
	if out := complete("run", "--registry", example+"/registry", "aug:"); !strings.Contains(out, "aug:processes/schedule-meeting\n") {
		t.Errorf("run's URIs:\n%s", out)
	}

	// The waiting process's question, as vibe run asks it on a terminal.
	status, out, _ := run(t, "", "show", waiting)
	var info process.Info
	if err := json.Unmarshal([]byte(out), &info); status != 0 || err != nil || info.Waiting == nil {
		t.Fatalf("show: %d %v\n%s", status, err, out)
	}
	qs, ok := choiceQuestions(info.Waiting.Schema)
	if !ok {
		t.Fatalf("the decision is not asked as a choice: %s", jsonv.Marshal(info.Waiting.Schema))
	}
	var asked strings.Builder
	a, err := askChoices(bufio.NewScanner(strings.NewReader("1\n")), &asked, qs)
	if err != nil || string(jsonv.Marshal(a)) != `{"confirmInvitation":{"decision":"Approve"}}` || !strings.Contains(asked.String(), "1) Approve") {
		t.Errorf("asked:\n%s\nanswer %s (%v)", asked.String(), jsonv.Marshal(a), err)
	}

	// A vibe serve on the data directory: the listings go through its API;
	// --llm would not be used, and says so.
	child(t, "serve", "--data", data, "--addr", freeAddr(t), "--registry", example+"/registry")
	waitUntil(t, "the server", 60*time.Second, func() bool { _, ok := vibe.RunningEndpoint(data); return ok })
	if got := ids(ps("--status", "waiting")); strings.Join(got, " ") != waiting {
		t.Errorf("ps --status waiting through the server: %v", got)
	}
	status, _, stderr = run(t, "", "run", "--registry", "testdata/registry", "--pipeline", "identifyParticipants", "--prompt", "Meet Dan", "--llm", "replay:"+empty)
	if status != exitUsage || !strings.Contains(stderr, "--llm replay:"+empty+": the vibe serve at ") || !strings.Contains(stderr, "drop --llm") {
		t.Errorf("--llm with a serve: %d %s", status, stderr)
	}
}
