package compile

import (
	"strings"
	"testing"

	"github.com/augceo/vibe/jsonv"
)

// TestActionInput: a server step's input in the process state, as the
// process's interpreter and a replay both take it.
func TestActionInput(t *testing.T) {
	state, err := jsonv.Parse([]byte(`{"input":{"topic":"launch"},` +
		`"llmContext1":{"draft":{"text":"hi","tone":"warm"}},` +
		`"serverContext1":{"send":{"input":{"to":"bob","output":null},"output":null}}}`))
	if err != nil {
		t.Fatal(err)
	}
	send := Path{"serverContext1", "send"}
	draft := Path{"llmContext1", "draft", "text"}
	for _, tt := range []struct {
		name string
		step ProgramStep
		want string
	}{
		{"no references: the process's input", ProgramStep{State: send}, `{"topic":"launch"}`},
		{"references: their minimal context", ProgramStep{State: send, References: []Path{draft}}, `{"llmContext1":{"draft":{"text":"hi"}}}`},
		{"inputs the model filled", ProgramStep{State: send, Inputs: true, References: []Path{draft}}, `{"to":"bob"}`},
		{"inputs and references beside", ProgramStep{State: send, Inputs: true, WithReferences: true, References: []Path{draft}}, `{"to":"bob","llmContext1":{"draft":{"text":"hi"}}}`},
		{"inputs never filled", ProgramStep{State: Path{"serverContext2", "log"}, Inputs: true}, "the model filled no inputs"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in, err := tt.step.ActionInput(state)
			got := string(jsonv.Marshal(in))
			if err != nil {
				got = err.Error()
			}
			if !strings.Contains(got, tt.want) {
				t.Errorf("ActionInput = %s, want %s", got, tt.want)
			}
		})
	}
}
