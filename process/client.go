package process

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/internal/wfid"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/schema"
)

// Client starts, reads, lists and answers processes.
type Client struct {
	// Temporal is the SDK client of the engine (engine.Engine.Client).
	Temporal client.Client
	// Registry resolves process URIs and the $refs of inline schemas.
	Registry *registry.Registry
	// Actions are the names of the registered server actions, for the
	// compiler (compile.Options.Actions); nil leaves blocking steps
	// unchecked.
	Actions []string
}

// StartOptions says which process to start and with what.
type StartOptions struct {
	// Process is a registry URI (aug:processes/schedule-meeting) …
	Process string
	// … or Document an inline process schema (uncompiled), named File in
	// errors, …
	Document jsonv.Value
	File     string
	// … or Pipeline a pipeline expression.
	Pipeline string
	// Prompt is the person's request.
	Prompt string
	// Input is data the process starts with (state "input").
	Input jsonv.Value
	// First is the first LLM chunk's value when it was filled already
	// (LaunchProcess).
	First jsonv.Value
	// System is the system text of the process's model calls.
	System string
}

// Started is a started process.
type Started struct {
	ID     string // the workflow id: <name>-<8 hex digits>
	Name   string
	Direct bool // a direct server call, not a process
}

// Start compiles the process and starts its workflow. A process that does
// not compile gives the compiler's errors (schema.ErrorList).
func (c *Client) Start(ctx context.Context, opts StartOptions) (*Started, error) {
	copts := compile.Options{Registry: c.Registry, Actions: c.Actions}
	var (
		p    *compile.Process
		name string
		err  error
	)
	switch {
	case opts.Pipeline != "":
		name = "pipeline"
		p, err = compile.CompilePipeline(ctx, opts.Pipeline, copts)
	case opts.Process != "":
		if c.Registry == nil {
			return nil, fmt.Errorf("cannot start %s: %w", opts.Process, registry.ErrNoRegistry)
		}
		var d *registry.Document
		d, err = c.Registry.Document(opts.Process)
		if err != nil {
			return nil, err
		}
		name = path.Base(d.URI.Path)
		p, err = compile.Compile(ctx, d.File, d.Value, copts)
	case opts.Document.Object() != nil:
		name = wfid.Slug(opts.Document.Lookup("title").Str(), "process")
		file := opts.File
		if file == "" {
			file = "process"
		}
		p, err = compile.Compile(ctx, file, opts.Document, copts)
	default:
		return nil, errors.New("nothing to start: give a process URI, an inline process schema or a pipeline")
	}
	if err != nil {
		return nil, err
	}
	if p.Prompt != "" && opts.Prompt == "" {
		opts.Prompt = p.Prompt
	}
	id := wfid.New(name)
	wf := WorkflowName
	if p.Direct != nil {
		wf = DirectCallName
	}
	_, err = c.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                    id,
		TaskQueue:             TaskQueue,
		Memo:                  map[string]any{"process": name},
		TypedSearchAttributes: temporal.NewSearchAttributes(ProcessAttribute.ValueSet(name), StatusAttribute.ValueSet(string(Running))),
	}, wf, Start{Name: name, Program: p.Program(), Prompt: opts.Prompt, Input: opts.Input, First: opts.First, System: opts.System})
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return &Started{ID: id, Name: name, Direct: p.Direct != nil}, nil
}

// memoProcess reads the process name from a workflow's memo.
func memoProcess(m *commonpb.Memo) string {
	var name string
	if p := m.GetFields()["process"]; p != nil {
		_ = converter.GetDefaultDataConverter().FromPayload(p, &name)
	}
	return name
}

// ErrNotFound is returned for an id that names no process.
var ErrNotFound = errors.New("no such process")

// Info is a process as the API shows it.
type Info struct {
	ID      string `json:"id"`
	Process string `json:"process"`
	View
	// Direct is set for a direct server call; its View is empty.
	Direct *DirectResult `json:"direct,omitempty"`
	// StartedAt is when the workflow started.
	StartedAt time.Time `json:"startedAt"`
}

// Get returns a process's view, read from its workflow with the query
// "view" (which also works once the workflow has closed).
func (c *Client) Get(ctx context.Context, id string) (*Info, error) {
	desc, err := c.Temporal.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
		}
		return nil, err
	}
	ex := desc.GetWorkflowExecutionInfo()
	info := &Info{ID: id, Process: memoProcess(ex.GetMemo()), StartedAt: ex.GetStartTime().AsTime()}
	if ex.GetType().GetName() == DirectCallName {
		info.View = View{Status: statusOf(ex.GetStatus()), Done: []string{}}
		if info.Status == Completed {
			var r DirectResult
			if err := c.Temporal.GetWorkflow(ctx, id, "").Get(ctx, &r); err == nil {
				info.Direct = &r
			}
		} else if info.Status == Failed {
			if err := c.Temporal.GetWorkflow(ctx, id, "").Get(ctx, nil); err != nil {
				msg := ErrorText(err)
				info.Error = &msg
			}
		}
		return info, nil
	}
	resp, err := c.Temporal.QueryWorkflow(ctx, id, "", QueryView)
	if err != nil {
		return nil, fmt.Errorf("read process %s: %w", id, err)
	}
	if err := resp.Get(&info.View); err != nil {
		return nil, fmt.Errorf("read process %s: %w", id, err)
	}
	switch ex.GetStatus() {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, enumspb.WORKFLOW_EXECUTION_STATUS_FAILED:
	default: // terminated, cancelled, timed out from outside
		info.Status = Failed
		if info.Error == nil {
			msg := "the workflow was " + strings.ToLower(strings.TrimPrefix(ex.GetStatus().String(), "WORKFLOW_EXECUTION_STATUS_"))
			info.Error = &msg
		}
	}
	return info, nil
}

func statusOf(s enumspb.WorkflowExecutionStatus) Status {
	switch s {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		return Running
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		return Completed
	}
	return Failed
}

// Summary is a process in a list.
type Summary struct {
	ID        string    `json:"id"`
	Process   string    `json:"process"`
	Status    Status    `json:"status"`
	StartedAt time.Time `json:"startedAt"`
}

// List returns the processes, newest first (at most limit; 0 means 100).
func (c *Client) List(ctx context.Context, limit int) ([]Summary, error) {
	if limit <= 0 {
		limit = 100
	}
	var out []Summary
	var token []byte
	for len(out) < limit {
		resp, err := c.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query:         fmt.Sprintf("WorkflowType = '%s' OR WorkflowType = '%s'", WorkflowName, DirectCallName),
			PageSize:      int32(min(limit, 100)),
			NextPageToken: token,
		})
		if err != nil {
			return nil, fmt.Errorf("list processes: %w", err)
		}
		for _, ex := range resp.GetExecutions() {
			s := Summary{ID: ex.GetExecution().GetWorkflowId(), Process: memoProcess(ex.GetMemo()), Status: statusOf(ex.GetStatus()), StartedAt: ex.GetStartTime().AsTime()}
			if sa := ex.GetSearchAttributes().GetIndexedFields()[StatusAttribute.GetName()]; sa != nil && s.Status == Running {
				var st string
				if converter.GetDefaultDataConverter().FromPayload(sa, &st) == nil && st != "" {
					s.Status = Status(st)
				}
			}
			out = append(out, s)
		}
		token = resp.GetNextPageToken()
		if len(token) == 0 {
			break
		}
	}
	return out, nil
}

// Answer sends a person's answer to the USER chunk a process waits on. An
// answer that breaks the chunk's schema is refused with an *AnswerError
// (Problems by path) and the process keeps waiting; a process that waits
// for nothing refuses any answer.
func (c *Client) Answer(ctx context.Context, id string, answer jsonv.Value) (*View, error) {
	h, err := c.Temporal.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID:   id,
		UpdateName:   UpdateAnswer,
		Args:         []any{answer},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return nil, answerError(id, err)
	}
	var v View
	if err := h.Get(ctx, &v); err != nil {
		return nil, answerError(id, err)
	}
	return &v, nil
}

// answerError recovers the validator's refusal from Temporal's wrapping.
func answerError(id string, err error) error {
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	msg := ErrorText(err)
	if i := strings.Index(msg, "the answer does not fit chunk "); i >= 0 {
		return &RefusedError{Message: msg[i:], Err: err}
	}
	if strings.Contains(msg, "process is not waiting for an answer") {
		return &RefusedError{Message: msg[strings.Index(msg, "process is not waiting"):], Err: err}
	}
	return err
}

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
