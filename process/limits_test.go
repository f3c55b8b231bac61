package process

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/jsonv"
)

// greet is an inline process of one LLM chunk; approve one whose first
// chunk is a person's.
const (
	greet   = `{"title":"Greet","type":"object","properties":{"greet":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}}`
	approve = `{"title":"Approve","properties":{"approve_User":{"type":"object","properties":{"ok":{"type":"boolean"}}}}}`
)

// TestStartChecksFirst refuses a first value the process does not take
// before anything reaches the engine: the client has no engine at all, so
// a start that got that far would panic.
func TestStartChecksFirst(t *testing.T) {
	tests := []struct {
		name, doc, first string
		kind             compile.Kind
		want             string // the error's text
	}{
		{"wrong type", greet, `{"greet":{"text":5}}`, compile.LLM, "the first value does not fit chunk LLM_greet: /greet/text: got number, want string"},
		{"a step missing", greet, `{}`, compile.LLM, "the first value does not fit chunk LLM_greet: /: missing property 'greet'"},
		{"not an object", greet, `[1]`, compile.LLM, "the first value does not fit chunk LLM_greet: /: got array, want object"},
		{"every problem", `{"title":"Two","properties":{"a":{"type":"string"},"b":{"type":"integer"}}}`, `{"a":1,"b":"x"}`, compile.LLM,
			"the first value does not fit chunk LLM_a: /a: got number, want string; /b: got string, want integer"},
		{"first chunk is a person's", approve, `{"approve_User":{"ok":true}}`, compile.User, "the process's first chunk USER_approve_User is not filled by a model, so it takes no first value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := (&Client{}).Start(context.Background(), StartOptions{Document: mustParse(t, tt.doc), First: mustParse(t, tt.first)})
			var fe *FirstError
			if !errors.As(err, &fe) || fe.Kind != tt.kind || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v (%T), want a *FirstError of kind %s saying %q", err, err, tt.kind, tt.want)
			}
			if tt.kind == compile.LLM && len(fe.Problems) == 0 {
				t.Errorf("no problems listed")
			}
		})
	}
}

// TestFirstMissingStep: a chunk's schema need not require its steps, but
// the workflow takes only a value that has each.
func TestFirstMissingStep(t *testing.T) {
	prog := &compile.Program{Chunks: []compile.ProgramChunk{{
		Name: "LLM_a", Kind: compile.LLM, Schema: mustParse(t, `{"type":"object","properties":{"a":{},"b":{}}}`),
		Steps: []compile.ProgramStep{{Name: "a"}, {Name: "b"}},
	}}}
	err := checkFirst(prog, mustParse(t, `{"a":1}`))
	if err == nil || err.Error() != `the first value does not fit chunk LLM_a: /: missing step "b"` {
		t.Errorf("err = %v", err)
	}
	if err := checkFirst(prog, mustParse(t, `{"a":1,"b":2}`)); err != nil {
		t.Errorf("a fitting value: %v", err)
	}
	if err := checkFirst(prog, jsonv.Value{}); err != nil {
		t.Errorf("no first value: %v", err)
	}
}

// TestStartAndAnswerSizes refuses what the engine would refuse for its
// size, before anything reaches it (the client has no engine).
func TestStartAndAnswerSizes(t *testing.T) {
	ctx := context.Background()
	c := &Client{}
	tests := []struct {
		name string
		opts StartOptions
		want string
	}{
		// The parts alone pass the limit: refused before compiling.
		{"a 7 MB prompt", StartOptions{Document: mustParse(t, greet), Prompt: strings.Repeat("x", 7_000_000)},
			"the start's prompt, input, process and first value is 6.7 MiB, past the engine's limit of 2 MiB on one payload"},
		// The parts fit, the encoded start does not: JSON writes "<" as
		// \u003c, six bytes.
		{"a prompt that grows when encoded", StartOptions{Document: mustParse(t, greet), Prompt: strings.Repeat("<", 1<<20)},
			"the start of greet is 6.0 MiB, past the engine's limit of 2 MiB on one payload"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Start(ctx, tt.opts)
			var tl *durable.TooLargeError
			if !errors.As(err, &tl) || err.Error() != tt.want {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
	_, err := c.Answer(ctx, "p-1", jsonv.StringValue(strings.Repeat("y", durable.MaxPayloadSize)))
	var tl *durable.TooLargeError
	if !errors.As(err, &tl) || !strings.HasPrefix(err.Error(), "the answer is 2.0 MiB, past") {
		t.Errorf("answer: %v", err)
	}
}
