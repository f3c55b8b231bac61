package process

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/internal/execution"
	"github.com/augceo/vibe/internal/wfid"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

// Answer sends a person's answer to the USER chunk a process waits on. An
// answer that breaks the chunk's schema is refused with a *RefusedError
// (Problems by path) and the process keeps waiting; a process that waits
// for nothing — running on, completed or failed — refuses any answer with
// a *NotWaitingError; an answer past MaxAnswerSize is not sent
// (*TooLargeError).
func (c *Client) Answer(ctx context.Context, id string, answer jsonv.Value) (*View, error) {
	return c.AnswerAs(ctx, id, answer, "")
}

// AnswerAs is Answer, and records who sent the answer (by: a console
// session, an API client) with the time the process took it, in the
// process's View.Answers.
func (c *Client) AnswerAs(ctx context.Context, id string, answer jsonv.Value, by string) (*View, error) {
	if err := durable.CheckSize("the answer", []any{answer}, durable.MaxAnswerSize); err != nil {
		return nil, err
	}
	uopts := client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: UpdateAnswer, Args: []any{answer, by}, WaitForStage: client.WorkflowUpdateStageCompleted}
	if _, err := execution.Describe(ctx, c.Temporal, id, ErrNotFound, durable.ProcessWorkflow, durable.DirectCallWorkflow); errors.Is(err, ErrNotFound) {
		host, ok, err := c.host(ctx, id)
		if err != nil {
			return nil, err
		}
		if ok {
			uopts.WorkflowID, uopts.UpdateName, uopts.Args = host, durable.UpdateItemAnswer, []any{id, answer, by}
			return c.answerHosted(ctx, id, uopts)
		}
	}
	h, err := c.Temporal.UpdateWorkflow(ctx, uopts)
	if err != nil {
		return nil, c.answerError(ctx, id, err)
	}
	var v View
	if err := h.Get(ctx, &v); err != nil {
		return nil, c.answerError(ctx, id, err)
	}
	return &v, nil
}

// answerHosted sends an answer to a hosted process through its host.
func (c *Client) answerHosted(ctx context.Context, id string, uopts client.UpdateWorkflowOptions) (*View, error) {
	h, err := c.Temporal.UpdateWorkflow(ctx, uopts)
	if err == nil {
		var v View
		if err = h.Get(ctx, &v); err == nil {
			return &v, nil
		}
	}
	if execution.IsNotFound(err) || durable.IsNotHosted(err) {
		// The host has closed (or knows no such process): say how the
		// process stands, as for a process's own closed workflow.
		info, gerr := c.getHosted(ctx, uopts.WorkflowID, id)
		if gerr != nil {
			return nil, gerr
		}
		return nil, &NotWaitingError{ID: id, Status: info.Status, Err: err}
	}
	return nil, c.answerError(ctx, id, err)
}

// Cancel cancels a process's workflow: the activity running learns it at
// its next heartbeat and stops, a wait for a person ends, and the process
// ends failed ("the workflow was canceled"). A process that has ended
// already stays as it was; an id of another workflow (a Vessel request) is
// not found.
func (c *Client) Cancel(ctx context.Context, id string) error {
	ex, err := execution.Describe(ctx, c.Temporal, id, ErrNotFound, durable.ProcessWorkflow, durable.DirectCallWorkflow)
	if errors.Is(err, ErrNotFound) {
		if host, ok, herr := c.host(ctx, id); herr != nil {
			return herr
		} else if ok {
			return fmt.Errorf("%w: %s runs inside %s, with the other items of its batch's group", ErrHostedCancel, id, host)
		}
	}
	if err != nil {
		return err
	}
	if ex.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return nil
	}
	if err := c.Temporal.CancelWorkflow(ctx, id, ""); err != nil && !execution.IsNotFound(err) {
		return fmt.Errorf("cancel %s: %w", id, err)
	}
	return nil
}

// ErrHostedCancel is the error of Cancel for a hosted process (a batch's
// item): it has no workflow of its own to cancel.
var ErrHostedCancel = errors.New("a batch's item is not cancelled alone")

// answerError recovers the validator's refusal from Temporal's wrapping.
// The engine says only "not found" of a workflow that has closed, so that
// case asks the engine how the process ended.
func (c *Client) answerError(ctx context.Context, id string, err error) error {
	if execution.IsNotFound(err) {
		ex, derr := execution.Describe(ctx, c.Temporal, id, ErrNotFound, durable.ProcessWorkflow)
		if derr != nil || ex.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			return fmt.Errorf("%w: %s", ErrNotFound, id)
		}
		return &NotWaitingError{ID: id, Status: statusOf(ex.GetStatus()), Err: err}
	}
	msg := durable.ErrorText(err)
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		// The message alone: Error() ends with the error's type and
		// whether it is retryable, which would read as part of the last
		// problem.
		msg = ae.Message()
	}
	if i := strings.Index(msg, "the answer does not fit chunk "); i >= 0 {
		return &RefusedError{Message: msg[i:], Err: err}
	}
	const notWaiting = "process is not waiting for an answer (status "
	if i := strings.Index(msg, notWaiting); i >= 0 {
		status, _, _ := strings.Cut(msg[i+len(notWaiting):], ")")
		return &NotWaitingError{ID: id, Status: Status(status), Err: err}
	}
	return err
}

// NotWaitingError is an answer to a process that waits for none: it is
// running on (its next chunk is not a person's), or it has completed or
// failed.
type NotWaitingError struct {
	ID     string
	Status Status
	Err    error
}

func (e *NotWaitingError) Error() string {
	return fmt.Sprintf("process %s is %s and waits for no answer", e.ID, e.Status)
}

func (e *NotWaitingError) Unwrap() error { return e.Err }

// RefusedError is an answer the process refused; it keeps waiting.
type RefusedError struct {
	Message string
	Err     error
}

func (e *RefusedError) Error() string { return e.Message }
func (e *RefusedError) Unwrap() error { return e.Err }

// Problems parses the validation problems out of a refusal.
func (e *RefusedError) Problems() []schema.Invalid {
	_, list, ok := strings.Cut(e.Message, ": ")
	if !ok || !strings.HasPrefix(e.Message, "the answer does not fit") {
		return nil
	}
	var out []schema.Invalid
	for _, part := range strings.Split(list, "; ") {
		p, m, _ := strings.Cut(part, ": ")
		if p == "/" {
			p = ""
		}
		out = append(out, schema.Invalid{Path: jsonv.Pointer(p), Message: m})
	}
	return out
}

// startInput reads the input a process's workflow started with, and its
// workflow type, from the first event of its history.
func (c *Client) startInput(ctx context.Context, id string) (durable.Start, string, error) {
	iter := c.Temporal.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	if !iter.HasNext() {
		return durable.Start{}, "", fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	event, err := iter.Next()
	if err != nil {
		if execution.IsNotFound(err) {
			return durable.Start{}, "", fmt.Errorf("%w: %s", ErrNotFound, id)
		}
		return durable.Start{}, "", fmt.Errorf("read process %s: %w", id, err)
	}
	attrs := event.GetWorkflowExecutionStartedEventAttributes()
	wf := attrs.GetWorkflowType().GetName()
	if wf != durable.ProcessWorkflow && wf != durable.DirectCallWorkflow {
		return durable.Start{}, "", fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	var in durable.Start
	if err := converter.GetDefaultDataConverter().FromPayloads(attrs.GetInput(), &in); err != nil {
		return durable.Start{}, "", fmt.Errorf("read process %s: its input: %w", id, err)
	}
	if in.Program == nil {
		return durable.Start{}, "", fmt.Errorf("read process %s: its input has no program", id)
	}
	return in, wf, nil
}

// Retry starts process id again: a new workflow with the input the old
// one started with — the same compiled program, prompt, input, first
// value and system text — whatever became of the old one, which stays as
// it was. A batch's item is retried with its batch (ErrHostedRetry).
func (c *Client) Retry(ctx context.Context, id string) (*Started, error) {
	if _, err := execution.Describe(ctx, c.Temporal, id, ErrNotFound, durable.ProcessWorkflow, durable.DirectCallWorkflow); errors.Is(err, ErrNotFound) {
		if host, ok, herr := c.host(ctx, id); herr != nil {
			return nil, herr
		} else if ok {
			return nil, fmt.Errorf("%w: %s runs inside %s, with the other items of its batch's group", ErrHostedRetry, id, host)
		}
		return nil, err
	} else if err != nil {
		return nil, err
	}
	in, wf, err := c.startInput(ctx, id)
	if err != nil {
		return nil, err
	}
	newID := wfid.New(in.Name)
	_, err = c.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                    newID,
		TaskQueue:             durable.TaskQueue,
		Memo:                  map[string]any{durable.MemoProcess: in.Name},
		TypedSearchAttributes: temporal.NewSearchAttributes(durable.ProcessAttribute.ValueSet(in.Name), durable.StatusAttribute.ValueSet(string(Running))),
	}, wf, in)
	if err != nil {
		return nil, fmt.Errorf("retry %s: start %s: %w", id, in.Name, err)
	}
	return &Started{ID: newID, Name: in.Name, Direct: wf == durable.DirectCallWorkflow}, nil
}

// ErrHostedRetry is the error of Retry for a hosted process (a batch's
// item): it is run again with its batch, not alone.
var ErrHostedRetry = errors.New("a batch's item is not retried alone")

// MissingActions are the actions that process id has still to call —
// those of the chunk it runs or waits on and of the chunks after it — and
// that the client's worker (Registered) does not have: their calls would
// wait on their task queues (durable.ActionQueue) until a worker that has
// them comes. A process that ended has none; so has one started before
// actions were routed, or run in another's workflow (a batch's item), as
// far as the client can tell.
func (c *Client) MissingActions(ctx context.Context, id string) ([]string, error) {
	in, _, err := c.startInput(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return nil, nil // a hosted process; or none, which Get and Answer say
	}
	if err != nil {
		return nil, err
	}
	info, err := c.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	var missing []string
	from := -1
	for i, ch := range in.Program.Chunks {
		if ch.Name == info.Chunk && from < 0 {
			from = i
		}
		if from < 0 {
			continue
		}
		for _, s := range ch.Steps {
			name := s.Action
			if name == "" && ch.Kind == compile.Server {
				name = s.Name
			}
			queue, ok := in.ActionQueues[name]
			if !ok {
				continue
			}
			act := strings.TrimPrefix(queue, durable.ActionQueuePrefix)
			if _, ok := c.Registered.Lookup(act); !ok && !slices.Contains(missing, act) {
				missing = append(missing, act)
			}
		}
	}
	return missing, nil
}

// MissingModel reports whether process id has a model call still to make
// — an LLM chunk it runs, or one after the chunk it runs or waits on — on
// a model other than the client's (ModelQueue): its calls would wait on
// their model's task queue (durable.ModelQueue) until a worker that has
// that model comes. One started by a client with no model
// (durable.AnyModelQueue) misses a model only when this client has none.
// A process that ended has none; so has one started before model calls
// were routed, or run in another's workflow (a batch's item), as far as
// the client can tell.
func (c *Client) MissingModel(ctx context.Context, id string) (bool, error) {
	in, _, err := c.startInput(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return false, nil // a hosted process; or none, which Get and Answer say
	}
	mine := c.ModelQueue != "" && c.ModelQueue != durable.AnyModelQueue
	if err != nil || in.ModelQueue == "" || in.ModelQueue == c.ModelQueue && mine || in.ModelQueue == durable.AnyModelQueue && mine {
		return false, err
	}
	info, err := c.Get(ctx, id)
	if err != nil || info.Status == Completed || info.Status == Failed {
		return false, err
	}
	from := -1
	for i, ch := range in.Program.Chunks {
		if ch.Name == info.Chunk && from < 0 {
			from = i
		}
		if from >= 0 && ch.Kind == compile.LLM {
			return true, nil
		}
	}
	return false, nil
}
