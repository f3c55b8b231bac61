package batch_test

import (
	"fmt"

	"github.com/augceo/vibe/batch"
)

// A batch's input line is a bare string (the prompt) or what starting a
// process takes without the process; a line that is neither says why,
// at its JSON path.
func ExampleParseLine() {
	for i, line := range []string{
		`"The delivery was late again."`,
		`{"prompt": "Moderate this.", "input": {"author": "kim"}}`,
		`{"prompt": 7}`,
		`{"comment": "hi"}`,
	} {
		it := batch.ParseLine([]byte(line), i+1)
		fmt.Printf("%d: prompt %q input %s error %q\n", it.Line, it.Prompt, it.Input.String(), it.Error)
	}
	// Output:
	// 1: prompt "The delivery was late again." input null error ""
	// 2: prompt "Moderate this." input {"author":"kim"} error ""
	// 3: prompt "" input null error "/prompt: must be a string, not number"
	// 4: prompt "" input null error "/comment: unknown field \"comment\" (want prompt, input)"
}
