package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/augceo/vibe/internal/llmtest"
	"github.com/augceo/vibe/jsonv"
)

// chatServer is a test model that gives content to every request.
func chatServer(t *testing.T, content string) (*llmtest.Server, *llmtest.Server) {
	s := llmtest.New(t, llmtest.Fixed(content))
	return s, s
}

const instruction = "testdata/registry/instructions/identifyParticipants.json"

const answer = `{"organizer":"alice@example.com","attendee":"bob@example.com"}`

func TestAskShowPromptSendsNothing(t *testing.T) {
	srv, n := chatServer(t, answer)
	status, stdout, stderr := run(t, "", "ask", instruction, "--prompt", "Meet Alice and Bob", "--llm", "openai:m", "--llm-base-url", srv.URL, "--show-prompt")
	if status != 0 {
		t.Fatalf("status %d: %s", status, stderr)
	}
	if n.Requests() != 0 {
		t.Errorf("--show-prompt sent %d requests", n.Requests())
	}
	v, err := jsonv.Parse([]byte(stdout))
	if err != nil {
		t.Fatal(err)
	}
	if got := v.Lookup("messages").Array()[0].Lookup("content").Str(); got != "Meet Alice and Bob\n\nGenerate the JSON for step identifyParticipants." {
		t.Errorf("user message %q", got)
	}
	if got := v.Lookup("schema").Lookup("properties").Object().Names(); strings.Join(got, ",") != "organizer,attendee" {
		t.Errorf("schema %v", got)
	}
	if _, ok := v.Lookup("schema").Get("$schema"); !ok || v.Lookup("name").Str() != "identifyParticipants" {
		t.Errorf("request %s", stdout)
	}
	// Without a model, --show-prompt still works: nothing is sent.
	if status, _, stderr := run(t, "", "ask", instruction, "--show-prompt"); status != 0 {
		t.Errorf("--show-prompt without --llm: %d %s", status, stderr)
	}
}

func TestAskLiveAndRaw(t *testing.T) {
	srv, n := chatServer(t, "```json\n"+`{"organizer":"alice@example.com","attendee":"bob@example.com"}`+"\n```")
	status, stdout, stderr := run(t, "", "ask", instruction, "--prompt", "Meet Alice and Bob", "--llm", "openai:m", "--llm-base-url", srv.URL)
	if status != 0 || n.Requests() != 1 {
		t.Fatalf("status %d after %d requests: %s", status, n.Requests(), stderr)
	}
	if stdout != "{\n  \"organizer\": \"alice@example.com\",\n  \"attendee\": \"bob@example.com\"\n}\n" {
		t.Errorf("output %q", stdout)
	}
	_, raw, _ := run(t, "", "ask", instruction, "--llm", "openai:m", "--llm-base-url", srv.URL, "--raw")
	v, err := jsonv.Parse([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if tok, _ := v.Lookup("usage").Lookup("promptTokens").Int(); tok != 100 || v.Lookup("usage").Lookup("model").Str() != "test-model" {
		t.Errorf("--raw %s", raw)
	}
	if status, _, stderr := run(t, "", "ask", instruction); status != 2 || !strings.Contains(stderr, "no model selected") {
		t.Errorf("no --llm: %d %s", status, stderr)
	}
	if status, _, stderr := run(t, "", "ask", instruction, "--llm", "gpt-4o"); status != 2 || !strings.Contains(stderr, "want openai:MODEL") {
		t.Errorf("bad --llm: %d %s", status, stderr)
	}
}

func TestAskRecordThenReplay(t *testing.T) {
	srv, n := chatServer(t, answer)
	rec := filepath.Join(t.TempDir(), "answers.jsonl")
	t.Setenv("VIBE_LLM_RECORD", rec)
	status, live, stderr := run(t, "", "ask", instruction, "--prompt", "Meet Alice and Bob", "--llm", "openai:m", "--llm-base-url", srv.URL)
	if status != 0 || !strings.Contains(stderr, "recording every answer to "+rec) {
		t.Fatalf("record: %d %s", status, stderr)
	}
	os.Unsetenv("VIBE_LLM_RECORD")
	srv.Close() // offline from here on
	status, replayed, stderr := run(t, "", "ask", instruction, "--prompt", "Meet Alice and Bob", "--llm", "replay:"+rec)
	if status != 0 || replayed != live || n.Requests() != 1 {
		t.Fatalf("replay: %d %q vs %q (%s)", status, replayed, live, stderr)
	}
	if !strings.Contains(stderr, "replaying recorded answers from "+rec+" (a recording, not a live model)") || !strings.Contains(stderr, "replayed from a recording") {
		t.Errorf("a replay must say so: %s", stderr)
	}
	status, _, stderr = run(t, "", "ask", instruction, "--prompt", "Meet Carol", "--llm", "replay:"+rec)
	if status != 1 || !strings.Contains(stderr, `no recorded answer for step "identifyParticipants"`) || !strings.Contains(stderr, "VIBE_LLM_RECORD=") {
		t.Errorf("a missing entry: %d %s", status, stderr)
	}
}

// TestAskStrict: --llm-strict sends OpenAI's strict form of the schema to
// any OpenAI-compatible endpoint; without it a base URL gets it as written.
func TestAskStrict(t *testing.T) {
	srv, n := chatServer(t, `{"organizer":"alice@example.com","attendee":"bob@example.com"}`)
	for _, strict := range []bool{false, true} {
		args := []string{"ask", instruction, "--llm", "openai:m", "--llm-base-url", srv.URL}
		if strict {
			args = append(args, "--llm-strict")
		}
		if status, _, stderr := run(t, "", args...); status != 0 {
			t.Fatalf("status %d: %s", status, stderr)
		}
		body := n.Bodies()[len(n.Bodies())-1]
		if got := strings.Contains(body, `"strict":true`) && strings.Contains(body, `"additionalProperties":false`); got != strict {
			t.Errorf("--llm-strict=%v: strict schema sent %v:\n%s", strict, got, body)
		}
	}
}
