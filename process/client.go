package process

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/durable"
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
	// NoModel says that the workers of this client's processes have no
	// model (a command run without one, on its own engine): Prepare refuses
	// a process with an LLM step before anything starts (*NoModelError),
	// rather than start it to fail at that step.
	NoModel bool
	// ModelQueue is the task queue of the model calls of the processes it
	// starts (durable.ModelQueue of the model its workers have), recorded
	// in their start input (durable.Start.ModelQueue): only a worker that
	// polls it — one that has that model — takes them;
	// durable.AnyModelQueue, for a client with no model, leaves them to
	// any worker that has a model. "" schedules them on durable.TaskQueue,
	// where any worker may take them, one without a model too.
	ModelQueue string
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
	// Unread names what of the input no step reads
	// (compile.Program.UnreadInput): a model is sent only what its steps
	// reference, so such an input is kept in the state and shown to no
	// one.
	Unread []string
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
	if err := durable.CheckPayloadSize("the start of "+in.Name, in); err != nil {
		return nil, err
	}
	prefix := in.Name
	if opts.Name != "" || opts.Pipeline != "" {
		prefix = wfid.Slug(in.Name, "process") // a person's words, or a pipeline's "+"
	}
	id := wfid.New(prefix)
	wf := durable.ProcessWorkflow
	if direct {
		wf = durable.DirectCallWorkflow
	}
	_, err = c.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                    id,
		TaskQueue:             durable.TaskQueue,
		Memo:                  map[string]any{durable.MemoProcess: in.Name},
		TypedSearchAttributes: temporal.NewSearchAttributes(durable.ProcessAttribute.ValueSet(in.Name), durable.StatusAttribute.ValueSet(string(Running))),
	}, wf, in)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", in.Name, err)
	}
	return &Started{ID: id, Name: in.Name, Direct: direct, Unread: in.Program.UnreadInput(in.Input)}, nil
}

// Prepare compiles the process opts names and checks its steps against the
// worker's actions, as Start does (a process URI whose fragment names
// nothing is an error wrapping registry.ErrNotFound), and returns the workflow input that
// runs it (with opts' prompt, input, first value and system text) and
// whether it is a direct server call. It starts nothing: a batch starts
// one prepared process per item.
func (c *Client) Prepare(ctx context.Context, opts StartOptions) (durable.Start, bool, error) {
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
		return durable.Start{}, false, errors.New("give one process to start: StartOptions.Pipeline, Process or Document, not more")
	}
	switch {
	case opts.Pipeline != "":
		name, file = "pipeline", "<pipeline>"
		p, err = compile.CompilePipeline(ctx, opts.Pipeline, copts)
	case opts.Process != "":
		if c.Registry == nil {
			return durable.Start{}, false, fmt.Errorf("cannot start %s: %w", opts.Process, registry.ErrNoRegistry)
		}
		var (
			d   *registry.Document
			doc jsonv.Value
		)
		d, doc, file, err = c.resolve(opts.Process)
		if err != nil {
			return durable.Start{}, false, err
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
		return durable.Start{}, false, errors.New("nothing to start: give a process URI, an inline process schema or a pipeline")
	}
	if err != nil {
		return durable.Start{}, false, err
	}
	if err := checkInputs(ctx, c.Registered, file, p); err != nil {
		return durable.Start{}, false, err
	}
	if p.Prompt != "" && opts.Prompt == "" {
		opts.Prompt = p.Prompt
	}
	if opts.Pipeline != "" {
		name = cmp.Or(p.PipelineName(), name)
	}
	name = cmp.Or(opts.Name, name)
	if c.NoModel {
		for _, ch := range p.Program().Chunks {
			if ch.Kind == compile.LLM {
				return durable.Start{}, false, &NoModelError{Process: name, Chunk: ch.Name}
			}
		}
	}
	prog := p.Program()
	return durable.Start{Name: name, Program: prog, Prompt: opts.Prompt, Input: opts.Input, First: opts.First, System: opts.System,
		ActionQueues: durable.ActionQueues(prog, c.Registered.Resolve), ModelQueue: c.ModelQueue}, p.Direct != nil, nil
}

// NoModelError is the error of a process with an LLM step prepared for
// workers that have no model (Client.NoModel): it would start and fail
// there.
type NoModelError struct {
	Process string
	Chunk   string // the first LLM chunk
}

func (e *NoModelError) Error() string {
	return fmt.Sprintf("%s asks a model (%s) and no model is selected", e.Process, e.Chunk)
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
	if p := m.GetFields()[durable.MemoProcess]; p != nil {
		_ = converter.GetDefaultDataConverter().FromPayload(p, &name)
	}
	return name
}
