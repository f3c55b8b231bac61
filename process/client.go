package process

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"
	"unicode"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/internal/execution"
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
	// Registered, when set, are the worker's actions: every step whose
	// action declares its input schema (Action.InputSchema, as MCP tools
	// do) is checked against it before the process starts, and a mismatch
	// is an error naming the step.
	Registered *action.Registry
	// Hosts, when set, finds the workflow of a process that runs in
	// another's (a batch's item in its group's): Get, Watch, Answer and
	// Program read and answer it there.
	Hosts Hosts
}

// StartOptions says which process to start and with what.
type StartOptions struct {
	// Process is a registry URI (aug:processes/schedule-meeting; with a
	// fragment, #/json/pointer or #stepName, the part of the document it
	// names) …
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
	// Name labels the process in lists and the console, and begins its id,
	// in place of the name it is known by: a registry URI's last part, a
	// schema's title, a pipeline's steps (compile.Process.PipelineName).
	// Left out of JSON when empty, so that options without one marshal as
	// they did before it existed.
	Name string `json:",omitempty"`
}

// Started is a started process.
type Started struct {
	ID     string // the workflow id: <name>-<8 hex digits>
	Name   string
	Direct bool // a direct server call, not a process
}

// Start compiles the process and starts its workflow. A process that does
// not compile gives the compiler's errors (schema.ErrorList) — a schema
// the validator would refuse when the process runs is one — and so does
// one whose steps' inputs do not fit what their actions declare they take
// (an MCP tool's input schema), a located error per mismatch; a first value
// the process does not take, a *FirstError; a start past the engine's
// payload limit, a *TooLargeError. In each case nothing is started.
func (c *Client) Start(ctx context.Context, opts StartOptions) (*Started, error) {
	if err := checkPartsSize(opts); err != nil {
		return nil, err
	}
	in, direct, err := c.Prepare(ctx, opts)
	if err != nil {
		return nil, err
	}
	if err := checkFirst(in.Program, in.First); err != nil {
		return nil, err
	}
	if err := CheckPayloadSize("the start of "+in.Name, in); err != nil {
		return nil, err
	}
	prefix := in.Name
	if opts.Name != "" || opts.Pipeline != "" {
		prefix = wfid.Slug(in.Name, "process") // a person's words, or a pipeline's "+"
	}
	id := wfid.New(prefix)
	wf := WorkflowName
	if direct {
		wf = DirectCallName
	}
	_, err = c.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                    id,
		TaskQueue:             TaskQueue,
		Memo:                  map[string]any{MemoProcess: in.Name},
		TypedSearchAttributes: temporal.NewSearchAttributes(ProcessAttribute.ValueSet(in.Name), StatusAttribute.ValueSet(string(Running))),
	}, wf, in)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", in.Name, err)
	}
	return &Started{ID: id, Name: in.Name, Direct: direct}, nil
}

// Prepare compiles the process opts names and checks its steps against the
// worker's actions, as Start does (a process URI whose fragment names
// nothing is an error wrapping registry.ErrNotFound), and returns the workflow input that
// runs it (with opts' prompt, input, first value and system text) and
// whether it is a direct server call. It starts nothing: a batch starts
// one prepared process per item.
func (c *Client) Prepare(ctx context.Context, opts StartOptions) (Start, bool, error) {
	copts := compile.Options{Registry: c.Registry, Actions: c.Actions}
	var (
		p          *compile.Process
		name, file string
		err        error
	)
	given := 0
	for _, set := range []bool{opts.Pipeline != "", opts.Process != "", !opts.Document.IsNull()} {
		if set {
			given++
		}
	}
	if given > 1 {
		return Start{}, false, errors.New("give one process to start: StartOptions.Pipeline, Process or Document, not more")
	}
	switch {
	case opts.Pipeline != "":
		name, file = "pipeline", "<pipeline>"
		p, err = compile.CompilePipeline(ctx, opts.Pipeline, copts)
	case opts.Process != "":
		if c.Registry == nil {
			return Start{}, false, fmt.Errorf("cannot start %s: %w", opts.Process, registry.ErrNoRegistry)
		}
		var (
			d   *registry.Document
			doc jsonv.Value
		)
		d, doc, file, err = c.resolve(opts.Process)
		if err != nil {
			return Start{}, false, err
		}
		name = path.Base(d.URI.Path)
		p, err = compile.Compile(ctx, file, doc, copts)
	case opts.Document.Object() != nil:
		name = wfid.Slug(opts.Document.Lookup("title").Str(), "process")
		file = opts.File
		if file == "" {
			file = "process"
		}
		p, err = compile.Compile(ctx, file, opts.Document, copts)
	default:
		return Start{}, false, errors.New("nothing to start: give a process URI, an inline process schema or a pipeline")
	}
	if err != nil {
		return Start{}, false, err
	}
	if err := checkInputs(ctx, c.Registered, file, p); err != nil {
		return Start{}, false, err
	}
	if p.Prompt != "" && opts.Prompt == "" {
		opts.Prompt = p.Prompt
	}
	if opts.Pipeline != "" {
		name = cmp.Or(p.PipelineName(), name)
	}
	name = cmp.Or(opts.Name, name)
	return Start{Name: name, Program: p.Program(), Prompt: opts.Prompt, Input: opts.Input, First: opts.First, System: opts.System}, p.Direct != nil, nil
}

// resolve finds the process a registry URI names: its document, the
// schema to compile and the name of that schema in errors. A URI with a
// fragment (#/json/pointer, #stepName) names that part of the document,
// which must exist: a fragment that names nothing is an error wrapping
// registry.ErrNotFound, one that names no schema object a located error.
// The part is compiled through a "$ref" to it, so that its own references
// resolve in its document.
func (c *Client) resolve(uri string) (*registry.Document, jsonv.Value, string, error) {
	u, err := registry.ParseURI(uri)
	if err != nil {
		return nil, jsonv.Value{}, "", err
	}
	if u.Fragment == "" {
		d, err := c.Registry.Document(uri)
		if err != nil {
			return nil, jsonv.Value{}, "", err
		}
		return d, d.Value, d.File, nil
	}
	t, err := c.Registry.Resolve(uri)
	if err != nil {
		if errors.Is(err, registry.ErrNotFound) {
			return nil, jsonv.Value{}, "", fmt.Errorf("cannot start %s: %w", uri, err)
		}
		// An ambiguous step name, a malformed pointer: the URI's mistake.
		return nil, jsonv.Value{}, "", &schema.Error{File: uri, Message: err.Error(), Err: err}
	}
	if t.Value.Object() == nil {
		return nil, jsonv.Value{}, "", schema.Errorf(t.Document.File, t.Pointer, "%s names %s, not a process schema (an object)", uri, kindName(t.Value))
	}
	ref := registry.URI{Path: t.Document.URI.Path, Version: t.Document.URI.Version, Fragment: u.Fragment}.String()
	return t.Document, jsonv.ObjectValue(jsonv.Member{Name: "$ref", Value: jsonv.StringValue(ref)}), uri, nil
}

// kindName is "a string", "an array", … for a value's kind, in errors.
func kindName(v jsonv.Value) string {
	switch k := v.Kind(); k {
	case jsonv.KindArray, jsonv.KindObject:
		return "an " + k.String()
	case jsonv.KindNull:
		return "null"
	default:
		return "a " + k.String()
	}
}

// memoProcess reads the process name from a workflow's memo.
func memoProcess(m *commonpb.Memo) string {
	var name string
	if p := m.GetFields()[MemoProcess]; p != nil {
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
	// ActionRuns are the process's fire-and-forget actions as they are
	// now, read from the workflows that run them, by step name.
	ActionRuns []ActionRun `json:"actionRuns,omitempty"`
	// StartedAt is when the workflow started; EndedAt when it closed, nil
	// while it runs (and for a batch's item, which has no workflow of its
	// own).
	StartedAt time.Time  `json:"startedAt"`
	EndedAt   *time.Time `json:"endedAt,omitempty"`
}

// Get returns a process's view, read from its workflow with the query
// "view" (which also works once the workflow has closed).
func (c *Client) Get(ctx context.Context, id string) (*Info, error) {
	// Another workflow — a Vessel request, a fire-and-forget action — is
	// no process, though it may answer a query of the same name.
	ex, err := execution.Describe(ctx, c.Temporal, id, ErrNotFound, WorkflowName, DirectCallName)
	if errors.Is(err, ErrNotFound) {
		if host, ok, herr := c.host(ctx, id); ok || herr != nil {
			if herr != nil {
				return nil, herr
			}
			return c.getHosted(ctx, host, id)
		}
	}
	if err != nil {
		return nil, err
	}
	info := &Info{ID: id, Process: memoProcess(ex.GetMemo()), StartedAt: ex.GetStartTime().AsTime(), EndedAt: closeTime(ex)}
	if ex.GetType().GetName() == DirectCallName {
		info.View = View{Status: statusOf(ex.GetStatus()), Done: []string{}}
		if info.Status == Completed {
			var r DirectResult
			if err := c.Temporal.GetWorkflow(ctx, id, "").Get(ctx, &r); err == nil {
				info.Direct = &r
				info.Usage = r.Usage
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
	if len(info.Actions) > 0 {
		if info.ActionRuns, err = c.actionRuns(ctx, id, info.Actions); err != nil {
			return nil, fmt.Errorf("read process %s's fire-and-forget actions: %w", id, err)
		}
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

// Hosts finds the workflow that hosts a process which has none of its own:
// a batch's item runs in its group's workflow. batch.Client is one.
type Hosts interface {
	// Host returns the id of the workflow that hosts process id; ok is
	// false when no workflow does.
	Host(ctx context.Context, id string) (workflowID string, ok bool, err error)
}

// host is where process id runs when it has no workflow of its own.
func (c *Client) host(ctx context.Context, id string) (string, bool, error) {
	if c.Hosts == nil {
		return "", false, nil
	}
	return c.Hosts.Host(ctx, id)
}

// getHosted reads a hosted process from its host (QueryItem).
func (c *Client) getHosted(ctx context.Context, host, id string) (*Info, error) {
	resp, err := c.Temporal.QueryWorkflow(ctx, host, "", QueryItem, id)
	if err != nil {
		if strings.Contains(ErrorText(err), ErrNotFound.Error()) {
			return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
		}
		return nil, fmt.Errorf("read process %s in %s: %w", id, host, err)
	}
	var info Info
	if err := resp.Get(&info); err != nil {
		return nil, fmt.Errorf("read process %s in %s: %w", id, host, err)
	}
	return &info, nil
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
	ID        string     `json:"id"`
	Process   string     `json:"process"`
	Status    Status     `json:"status"`
	StartedAt time.Time  `json:"startedAt"`
	EndedAt   *time.Time `json:"endedAt,omitempty"` // nil while it runs
}

// closeTime is when a workflow closed, nil while it runs.
func closeTime(ex interface {
	GetStatus() enumspb.WorkflowExecutionStatus
	GetCloseTime() *timestamppb.Timestamp
}) *time.Time {
	if ex.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING || ex.GetCloseTime() == nil {
		return nil
	}
	t := ex.GetCloseTime().AsTime()
	return &t
}

// Paging of List.
const (
	// DefaultListLimit is the page size of List when ListOptions.Limit is 0.
	DefaultListLimit = 100
	// MaxListLimit is the largest page List gives: the engine's own
	// largest visibility page (frontend.visibilityMaxPageSize).
	MaxListLimit = 1000
)

// ListOptions says which page of processes List returns.
type ListOptions struct {
	// Limit is the most processes on the page, 1 to MaxListLimit; 0 means
	// DefaultListLimit.
	Limit int
	// Cursor is the Next of the page before; "" starts with the newest.
	Cursor string
	// Status, when set, lists only the processes of that status, and
	// Process only those whose process name starts with it (letters,
	// digits, '.', '_' and '-'). The lists of other workflows (package
	// request's) take neither.
	Status  Status
	Process string
	// Since and Before, when set, list only the processes started at or
	// after Since and before Before. The lists of other workflows take
	// them too.
	Since, Before time.Time
}

// Page is one page of processes, newest first.
type Page struct {
	Processes []Summary
	// Next is the cursor of the page after this one, or "" when this is
	// the last.
	Next string
}

// ErrBadCursor is wrapped by List's error for a cursor it did not give.
var ErrBadCursor = errors.New("not a cursor of this list")

// List returns a page of processes, newest first, but for batch items. The
// cursor is the engine's own page token, base64url-encoded.
func (c *Client) List(ctx context.Context, opts ListOptions) (Page, error) {
	query, err := listQuery(opts)
	if err != nil {
		return Page{}, err
	}
	execs, next, err := ListExecutions(ctx, c.Temporal, "processes", query, opts)
	if err != nil {
		return Page{}, err
	}
	page := Page{Processes: make([]Summary, len(execs)), Next: next}
	for i, ex := range execs {
		page.Processes[i] = summaryOf(ex)
	}
	return page, nil
}

// listQuery is the visibility query of a list of processes. A waiting
// process is running to the engine; VibeStatus tells it apart. Completed
// and failed come from the engine's own status, which also covers direct
// calls and workflows ended from outside.
func listQuery(opts ListOptions) (string, error) {
	// A batch's items are listed with their batch, not here.
	query := fmt.Sprintf("(WorkflowType = '%s' OR WorkflowType = '%s') AND %s IS NULL", WorkflowName, DirectCallName, BatchAttribute.GetName())
	switch opts.Status {
	case "":
	case Running:
		query += fmt.Sprintf(" AND ExecutionStatus = 'Running' AND %s != '%s'", StatusAttribute.GetName(), Waiting)
	case Waiting:
		query += fmt.Sprintf(" AND ExecutionStatus = 'Running' AND %s = '%s'", StatusAttribute.GetName(), Waiting)
	case Completed:
		query += " AND ExecutionStatus = 'Completed'"
	case Failed:
		query += " AND ExecutionStatus != 'Running' AND ExecutionStatus != 'Completed'"
	default:
		return "", fmt.Errorf("list processes: no status %q (want running, waiting, completed or failed)", opts.Status)
	}
	if opts.Process != "" {
		for _, r := range opts.Process {
			if !(r == '.' || r == '_' || r == '-' || unicode.IsLetter(r) || unicode.IsDigit(r)) {
				return "", fmt.Errorf("list processes: a process name is letters, digits, '.', '_' and '-', not %q", opts.Process)
			}
		}
		query += fmt.Sprintf(" AND %s STARTS_WITH '%s'", ProcessAttribute.GetName(), opts.Process)
	}
	return query + TimeQuery(opts), nil
}

// TimeQuery is the part of a visibility query that keeps to opts' Since
// and Before (" AND StartTime >= '…'"), "" without them.
func TimeQuery(opts ListOptions) string {
	var q string
	if !opts.Since.IsZero() {
		q += fmt.Sprintf(" AND StartTime >= '%s'", opts.Since.UTC().Format(time.RFC3339Nano))
	}
	if !opts.Before.IsZero() {
		q += fmt.Sprintf(" AND StartTime < '%s'", opts.Before.UTC().Format(time.RFC3339Nano))
	}
	return q
}

// ListExecutions returns a page of the workflows a visibility query
// matches, newest first, and the cursor of the next page ("" after the
// last); what names them in errors ("processes"). It is List's paging,
// shared with the lists of other workflows (package agent's).
func ListExecutions(ctx context.Context, c client.Client, what, query string, opts ListOptions) ([]*workflowpb.WorkflowExecutionInfo, string, error) {
	limit := opts.Limit
	if limit == 0 {
		limit = DefaultListLimit
	}
	if limit < 1 || limit > MaxListLimit {
		return nil, "", fmt.Errorf("list %s: the limit %d is not between 1 and %d", what, opts.Limit, MaxListLimit)
	}
	token, err := base64.RawURLEncoding.DecodeString(opts.Cursor)
	if err != nil || !pageToken(token) {
		return nil, "", fmt.Errorf("list %s: cursor %q: %w", what, opts.Cursor, ErrBadCursor)
	}
	var execs []*workflowpb.WorkflowExecutionInfo
	for calls := 0; ; calls++ {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query:         query,
			PageSize:      int32(limit - len(execs)),
			NextPageToken: token,
		})
		if err != nil {
			var bad *serviceerror.InvalidArgument
			if calls == 0 && len(token) > 0 && errors.As(err, &bad) {
				return nil, "", fmt.Errorf("list %s: cursor %q: %w (%v)", what, opts.Cursor, ErrBadCursor, err)
			}
			return nil, "", fmt.Errorf("list %s: %w", what, err)
		}
		execs = append(execs, resp.GetExecutions()...)
		token = resp.GetNextPageToken()
		// The engine may give a short page before the last one: fill this
		// one up to the limit, so that a page is short only at the end.
		if len(token) == 0 || len(execs) >= limit {
			break
		}
	}
	if len(token) == 0 {
		return execs, "", nil
	}
	return execs, base64.RawURLEncoding.EncodeToString(token), nil
}

// pageToken reports whether token may be one of the engine's page tokens:
// none, or a JSON object that reads as the SQL visibility store's token
// (sqlplugin.VisibilityPageToken) does. That store answers a token it
// cannot read with an internal error, which the SDK retries until its
// deadline; the tokens of other stores have other members, which pass.
func pageToken(token []byte) bool {
	if len(token) == 0 {
		return true
	}
	var sqlToken struct {
		CloseTime, StartTime time.Time
		RunID                string
	}
	return token[0] == '{' && json.Unmarshal(token, &sqlToken) == nil
}

func summaryOf(ex *workflowpb.WorkflowExecutionInfo) Summary {
	s := Summary{ID: ex.GetExecution().GetWorkflowId(), Process: memoProcess(ex.GetMemo()), Status: statusOf(ex.GetStatus()), StartedAt: ex.GetStartTime().AsTime(), EndedAt: closeTime(ex)}
	if sa := ex.GetSearchAttributes().GetIndexedFields()[StatusAttribute.GetName()]; sa != nil && s.Status == Running {
		var st string
		if converter.GetDefaultDataConverter().FromPayload(sa, &st) == nil && st != "" {
			s.Status = Status(st)
		}
	}
	return s
}

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
	if err := checkSize("the answer", []any{answer}, MaxAnswerSize); err != nil {
		return nil, err
	}
	uopts := client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: UpdateAnswer, Args: []any{answer, by}, WaitForStage: client.WorkflowUpdateStageCompleted}
	if _, err := execution.Describe(ctx, c.Temporal, id, ErrNotFound, WorkflowName, DirectCallName); errors.Is(err, ErrNotFound) {
		host, ok, err := c.host(ctx, id)
		if err != nil {
			return nil, err
		}
		if ok {
			uopts.WorkflowID, uopts.UpdateName, uopts.Args = host, UpdateItemAnswer, []any{id, answer, by}
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
	if execution.IsNotFound(err) || strings.Contains(ErrorText(err), ErrNotFound.Error()) {
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
	ex, err := execution.Describe(ctx, c.Temporal, id, ErrNotFound, WorkflowName, DirectCallName)
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
		ex, derr := execution.Describe(ctx, c.Temporal, id, ErrNotFound, WorkflowName)
		if derr != nil || ex.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			return fmt.Errorf("%w: %s", ErrNotFound, id)
		}
		return &NotWaitingError{ID: id, Status: statusOf(ex.GetStatus()), Err: err}
	}
	msg := ErrorText(err)
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

// Program returns the compiled program a process runs: its workflow's
// input, read from the first event of its history, so a running process
// is drawn and explained from exactly what it runs. A direct server call's
// program is its one chunk; an id of another workflow is not found.
func (c *Client) Program(ctx context.Context, id string) (*compile.Program, error) {
	if _, err := execution.Describe(ctx, c.Temporal, id, ErrNotFound, WorkflowName, DirectCallName); errors.Is(err, ErrNotFound) {
		host, ok, err := c.host(ctx, id)
		if err != nil {
			return nil, err
		}
		if ok {
			resp, err := c.Temporal.QueryWorkflow(ctx, host, "", QueryItemProgram, id)
			if err != nil {
				return nil, fmt.Errorf("read process %s in %s: %w", id, host, err)
			}
			var prog compile.Program
			if err := resp.Get(&prog); err != nil {
				return nil, fmt.Errorf("read process %s in %s: %w", id, host, err)
			}
			return &prog, nil
		}
	}
	in, _, err := c.startInput(ctx, id)
	if err != nil {
		return nil, err
	}
	return in.Program, nil
}

// startInput reads the input a process's workflow started with, and its
// workflow type, from the first event of its history.
func (c *Client) startInput(ctx context.Context, id string) (Start, string, error) {
	iter := c.Temporal.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	if !iter.HasNext() {
		return Start{}, "", fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	event, err := iter.Next()
	if err != nil {
		if execution.IsNotFound(err) {
			return Start{}, "", fmt.Errorf("%w: %s", ErrNotFound, id)
		}
		return Start{}, "", fmt.Errorf("read process %s: %w", id, err)
	}
	attrs := event.GetWorkflowExecutionStartedEventAttributes()
	wf := attrs.GetWorkflowType().GetName()
	if wf != WorkflowName && wf != DirectCallName {
		return Start{}, "", fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	var in Start
	if err := converter.GetDefaultDataConverter().FromPayloads(attrs.GetInput(), &in); err != nil {
		return Start{}, "", fmt.Errorf("read process %s: its input: %w", id, err)
	}
	if in.Program == nil {
		return Start{}, "", fmt.Errorf("read process %s: its input has no program", id)
	}
	return in, wf, nil
}

// Retry starts process id again: a new workflow with the input the old
// one started with — the same compiled program, prompt, input, first
// value and system text — whatever became of the old one, which stays as
// it was. A batch's item is retried with its batch (ErrHostedRetry).
func (c *Client) Retry(ctx context.Context, id string) (*Started, error) {
	if _, err := execution.Describe(ctx, c.Temporal, id, ErrNotFound, WorkflowName, DirectCallName); errors.Is(err, ErrNotFound) {
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
		TaskQueue:             TaskQueue,
		Memo:                  map[string]any{MemoProcess: in.Name},
		TypedSearchAttributes: temporal.NewSearchAttributes(ProcessAttribute.ValueSet(in.Name), StatusAttribute.ValueSet(string(Running))),
	}, wf, in)
	if err != nil {
		return nil, fmt.Errorf("retry %s: start %s: %w", id, in.Name, err)
	}
	return &Started{ID: newID, Name: in.Name, Direct: wf == DirectCallName}, nil
}

// ErrHostedRetry is the error of Retry for a hosted process (a batch's
// item): it is run again with its batch, not alone.
var ErrHostedRetry = errors.New("a batch's item is not retried alone")
