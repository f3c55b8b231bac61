package process

import (
	"fmt"
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

// Validate refuses an answer at once when the process waits for none: the
// validator of the host's update, it runs before the update is accepted,
// so a refusal leaves no trace in the history.
func (r *Interpreter) Validate(answer jsonv.Value, by string) error {
	if r.view.Waiting == nil {
		return fmt.Errorf("process is not waiting for an answer (status %s)", r.view.Status)
	}
	return nil
}

// Accept checks the answer against the waited chunk's schema — in a local
// activity, so the workflow never runs the validator itself — and takes it
// when it fits. A bad answer is refused with its problems by path and the
// process keeps waiting. by is who sent it ("" when the sender did not
// say), kept with the time it is taken in View.Answers.
func (r *Interpreter) Accept(ctx workflow.Context, answer jsonv.Value, by string) (View, error) {
	w := r.view.Waiting
	if w == nil {
		return r.view, fmt.Errorf("process is not waiting for an answer (status %s)", r.view.Status)
	}
	problems, err := durable.Check(ctx, w.Schema, answer)
	if err != nil {
		return r.view, fmt.Errorf("check the answer: %w", err)
	}
	if len(problems) > 0 {
		return r.view, &AnswerError{Chunk: w.Chunk, Problems: problems}
	}
	if r.view.Waiting != w || r.answer != nil {
		// Another answer was taken while this one was checked.
		return r.view, fmt.Errorf("process is not waiting for an answer (status %s)", r.view.Status)
	}
	r.answer = &answer
	r.answered = Answered{Chunk: w.Chunk, By: by, At: workflow.Now(ctx)}
	// Let the workflow take the answer before the update returns, so that
	// the view it returns shows the process moving on.
	_ = workflow.Await(ctx, func() bool { return r.view.Waiting != w })
	return r.view, nil
}

// AnswerError is a person's answer that breaks the waited chunk's schema.
type AnswerError struct {
	Chunk    string
	Problems []schema.Invalid
}

func (e *AnswerError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return fmt.Sprintf("the answer does not fit chunk %s: %s", e.Chunk, strings.Join(lines, "; "))
}
