package mcpserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/internal/version"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/schema"
)

// Processes is what the server drives: processes it starts, reads, lists,
// answers, cancels and watches. process.Client (the engine) and api.Client
// (a running vibe serve) both are.
type Processes interface {
	Start(ctx context.Context, opts process.StartOptions) (*process.Started, error)
	Get(ctx context.Context, id string) (*process.Info, error)
	List(ctx context.Context, opts process.ListOptions) (process.Page, error)
	Answer(ctx context.Context, id string, answer jsonv.Value) (*process.View, error)
	Cancel(ctx context.Context, id string) error
	Watch(ctx context.Context, id string, opts process.WatchOptions) iter.Seq2[*process.Info, error]
}

// Options configures New. The zero value offers every process of no
// registry: only the tools that read and drive processes.
type Options struct {
	// Registry holds the processes offered as tools.
	Registry *registry.Registry
	// Processes are the URIs of the processes to offer (aug:processes/x);
	// empty means every process in the registry's "processes" folder, the
	// latest version of each.
	Processes []string
	// Poll is how often a call that follows a process reads it; 0 means
	// 200 ms.
	Poll time.Duration
	// Logger records what the server does; nil means slog.Default().
	Logger *slog.Logger
	// Version is the server's version in the MCP handshake
	// (serverInfo.version); empty means Vibe's own (vibe.Version).
	Version string
	// Actions are the worker's actions. A process that runs an action they
	// do not hold is not offered as a tool (the log, or New's error for
	// one named in Processes, says which actions are missing), and they
	// say whether the process's tool is destructive and how its input is
	// typed. Nil means Processes' own when it is a *process.Client
	// (its Registered), and otherwise no check: the worker is elsewhere
	// (a running vibe serve's), and each action is taken to have effects.
	Actions *action.Registry
}

// The tools that read and drive processes.
const (
	ToolList   = "list_processes"
	ToolShow   = "show_process"
	ToolAnswer = "answer_process"
	ToolCancel = "cancel_process"
)

// Server is Vibe's MCP server. It is safe for concurrent use by many
// sessions.
type Server struct {
	p    Processes
	opts Options
	mcp  *mcp.Server

	stopOnce sync.Once
	stopping chan struct{} // closed by Close: calls stop following

	mu sync.Mutex
	// runs holds, for each session Run serves, the channel closed when Run
	// stops it: its calls stop following, so that the session can close
	// (closing waits for the calls in flight).
	runs map[*mcp.ServerSession]chan struct{}
}

// offered is a process offered as a tool.
type offered struct {
	uri    string
	tool   *mcp.Tool
	input  jsonv.Value // the tool's input schema
	chunks int         // for progress: the total
}

// New returns the server of p's processes. A process named in
// Options.Processes that does not compile is an error; one found in the
// registry is skipped, and the log says why.
func New(ctx context.Context, p Processes, opts Options) (*Server, error) {
	if opts.Poll <= 0 {
		opts.Poll = 200 * time.Millisecond
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Version == "" {
		opts.Version = version.Vibe()
	}
	if opts.Actions == nil {
		if pc, ok := p.(*process.Client); ok {
			opts.Actions = pc.Registered
		}
	}
	s := &Server{p: p, opts: opts, stopping: make(chan struct{}), runs: map[*mcp.ServerSession]chan struct{}{}}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "vibe", Title: "Vibe processes", Version: opts.Version}, &mcp.ServerOptions{
		Instructions: "Each process tool starts a durable Vibe process and returns its output with its id. " +
			"When a process waits for a person, the person is asked in a form when the client can; otherwise the result says \"waiting\", " +
			"and " + ToolAnswer + " continues the process later. " + ToolShow + " and the resource vibe://processes/{id} show a process's state.",
		Logger: slog.New(atLeast{opts.Logger.Handler(), slog.LevelWarn}),
	})
	uris := opts.Processes
	explicit := len(uris) > 0
	if !explicit && opts.Registry != nil {
		for _, name := range opts.Registry.Names("processes") {
			uris = append(uris, "aug:processes/"+name)
		}
	}
	names := map[string]string{ToolList: "", ToolShow: "", ToolAnswer: "", ToolCancel: ""}
	var errs []error
	for _, uri := range uris {
		o, err := offer(ctx, opts.Registry, uri, opts.Actions, opts.Logger)
		if err == nil {
			if other, dup := names[o.tool.Name]; dup {
				err = fmt.Errorf("%s: its tool name %q is taken (by %s)", uri, o.tool.Name, orBuiltin(other))
			}
		}
		if err != nil {
			if explicit {
				errs = append(errs, err)
			} else {
				opts.Logger.Warn("mcp: a process is not offered as a tool", "process", uri, "err", err)
			}
			continue
		}
		names[o.tool.Name] = uri
		s.mcp.AddTool(o.tool, s.startTool(o))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	s.addProcessTools()
	s.addResources()
	return s, nil
}

// atLeast passes on the records of level min and above: the SDK's own
// info records (a session connected, disconnected) are not the user's
// business.
type atLeast struct {
	slog.Handler
	min slog.Level
}

func (h atLeast) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h atLeast) WithAttrs(as []slog.Attr) slog.Handler {
	return atLeast{h.Handler.WithAttrs(as), h.min}
}
func (h atLeast) WithGroup(g string) slog.Handler { return atLeast{h.Handler.WithGroup(g), h.min} }

func orBuiltin(uri string) string {
	if uri == "" {
		return "a tool of Vibe's own"
	}
	return uri
}

// offer prepares the tool of a process: its annotations from its
// actions, its input typed as its actions take it, its output schema from
// its steps. A process whose actions are not all registered is not
// offered: its calls could only fail.
func offer(ctx context.Context, reg *registry.Registry, uri string, acts *action.Registry, logger *slog.Logger) (*offered, error) {
	if reg == nil {
		return nil, fmt.Errorf("%s: %w", uri, registry.ErrNoRegistry)
	}
	d, err := reg.Document(uri)
	if err != nil {
		return nil, err
	}
	p, err := compile.Compile(ctx, d.File, d.Value, compile.Options{Registry: reg})
	if err != nil {
		return nil, err
	}
	if missing := unregistered(p, acts); len(missing) > 0 {
		return nil, unavailable(uri, missing)
	}
	name := toolName(d.URI.Path)
	title := d.Value.Lookup("title").Str()
	desc := d.Value.Lookup("description").Str()
	if desc == "" {
		desc = title
	}
	if desc != "" {
		desc += "\n\n"
	}
	desc += fmt.Sprintf("Starts the durable Vibe process %s and returns its output with its id. "+
		"When it waits for a person, the person is asked in a form, or the result says \"waiting\" and %s continues it.", d.URI.Document(), ToolAnswer)
	in, typed := inputSchema(ctx, p, acts, logger)
	input := startSchema(p.Prompt != "", in, typed)
	return &offered{
		uri: uri,
		tool: &mcp.Tool{Name: name, Title: title, Description: desc, Annotations: annotations(title, p, acts),
			InputSchema: raw(input), OutputSchema: raw(outputSchema(p))},
		input:  input,
		chunks: len(p.Chunks),
	}, nil
}

// toolName is a tool name for a registry path: its letters, digits, "_",
// "-" and "."; any other character becomes "_" ("billing/report" →
// "billing_report").
func toolName(p string) string {
	p = strings.TrimPrefix(p, "processes/")
	var b strings.Builder
	for _, r := range p {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	name := b.String()
	if len(name) > 128 {
		name = name[:128]
	}
	if name == "" {
		name = path.Base(p)
	}
	return name
}

func mustParse(s string) jsonv.Value {
	v, err := jsonv.Parse([]byte(s))
	if err != nil {
		panic(err)
	}
	return v
}

// The input schemas of the tools that read and drive processes.
var (
	listSchema = mustParse(`{"type": "object", "properties": {
		"status": {"type": "string", "enum": ["running", "waiting", "completed", "failed"], "description": "Only the processes of this status (waiting: for a person's answer)."},
		"process": {"type": "string", "description": "Only the processes whose name starts with this (schedule-meeting)."},
		"limit": {"type": "integer", "minimum": 1, "maximum": 1000, "description": "At most this many, newest first (default 100)."},
		"cursor": {"type": "string", "description": "The \"next\" of the page before, for the page after it."}}, "additionalProperties": false}`)
	idSchema     = mustParse(`{"type": "object", "properties": {"id": {"type": "string", "description": "The process's id, such as schedule-meeting-7f3a9c2e."}}, "required": ["id"], "additionalProperties": false}`)
	answerSchema = mustParse(`{"type": "object", "properties": {
		"id": {"type": "string", "description": "The process's id."},
		"answer": {"type": "object", "description": "The answer to the chunk the process waits on: a value of the schema its \"waiting\" shows."}},
		"required": ["id", "answer"], "additionalProperties": false}`)
)

func raw(v jsonv.Value) json.RawMessage { return json.RawMessage(jsonv.Marshal(v)) }

func (s *Server) addProcessTools() {
	yes, no := true, false
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &no}
	s.mcp.AddTool(&mcp.Tool{Name: ToolList, Title: "List processes", Annotations: readOnly, InputSchema: raw(listSchema),
		Description: "Lists Vibe processes, newest first — all, or those of one status (status: \"waiting\" lists those that wait for a person) or process: id, process, status (running, waiting, completed, failed), start time; \"next\" is the cursor of the following page, or null."}, s.list)
	s.mcp.AddTool(&mcp.Tool{Name: ToolShow, Title: "Show a process", Annotations: readOnly, InputSchema: raw(idSchema),
		Description: "Shows a Vibe process: its status, what it waits for (chunk, schema, context), its state (every step's result), usage."}, s.show)
	s.mcp.AddTool(&mcp.Tool{Name: ToolAnswer, Title: "Answer a waiting process", InputSchema: raw(answerSchema),
		Description: "Gives a person's answer to the chunk a waiting process waits on, then follows the process as its tool does: " +
			"its output when it completes. An answer that does not fit the chunk's schema is refused with the problems, and the process keeps waiting."}, s.answer)
	s.mcp.AddTool(&mcp.Tool{Name: ToolCancel, Title: "Cancel a process", Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes, OpenWorldHint: &no}, InputSchema: raw(idSchema),
		Description: "Cancels a Vibe process: its workflow stops, and the process ends failed."}, s.cancel)
}

// arguments reads a call's arguments and checks them against the tool's
// input schema; a bad call is a tool error that names the problems.
func arguments(req *mcp.CallToolRequest, in jsonv.Value) (jsonv.Value, *mcp.CallToolResult) {
	data := []byte(req.Params.Arguments)
	if len(data) == 0 || string(data) == "null" {
		data = []byte("{}")
	}
	args, err := schema.Parse("arguments", data)
	if err != nil {
		return jsonv.Value{}, toolError("the arguments are not JSON: %v", err)
	}
	problems, err := schema.Check(in, args)
	if err != nil {
		return jsonv.Value{}, toolError("%v", err)
	}
	if len(problems) > 0 {
		return jsonv.Value{}, toolError("the arguments do not fit the tool's input schema: %s", (&schema.ValidationError{Problems: problems}).Error())
	}
	return args, nil
}

// toolError is a failed call, told to the client (and its model) as text.
func toolError(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

// failure is a call that failed on an error of Vibe's: located errors,
// one per line.
func failure(err error) *mcp.CallToolResult {
	var list schema.ErrorList
	var located *schema.Error
	if errors.As(err, &list) || errors.As(err, &located) {
		lines := make([]string, 0, 4)
		for _, e := range schema.Errors(err, "") {
			lines = append(lines, e.Error())
		}
		return toolError("%s", strings.Join(lines, "\n"))
	}
	return toolError("%v", err)
}

// structured is a result whose structured content is v, given as its
// text too (clients that read only text see the same).
func structured(v jsonv.Value, isError bool) *mcp.CallToolResult {
	b := jsonv.Marshal(v)
	return &mcp.CallToolResult{IsError: isError, StructuredContent: json.RawMessage(b), Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
}

// asJSON turns a Go value (process.Info, a list) into an ordered value;
// the jsonv values inside keep their order.
func asJSON(v any) (jsonv.Value, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return jsonv.Value{}, err
	}
	return jsonv.Parse(b)
}

func (s *Server) startTool(o *offered) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if req.Params.RequestState != "" {
			return s.resume(ctx, req)
		}
		args, bad := arguments(req, o.input)
		if bad != nil {
			return bad, nil
		}
		started, err := s.p.Start(ctx, process.StartOptions{Process: o.uri, Prompt: args.Lookup("prompt").Str(), Input: args.Lookup("input")})
		if err != nil {
			return failure(err), nil
		}
		s.opts.Logger.Info("mcp: started a process", "id", started.ID, "process", o.uri)
		f := &follower{s: s, req: req, id: started.ID, total: o.chunks}
		f.progress(ctx, 0, "started "+started.ID)
		return f.follow(ctx)
	}
}

func (s *Server) list(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args, bad := arguments(req, listSchema)
	if bad != nil {
		return bad, nil
	}
	limit, _ := args.Lookup("limit").Int()
	page, err := s.p.List(ctx, process.ListOptions{Limit: int(limit), Cursor: args.Lookup("cursor").Str(),
		Status: process.Status(args.Lookup("status").Str()), Process: args.Lookup("process").Str()})
	if err != nil {
		return failure(err), nil
	}
	v, err := pageJSON(page)
	if err != nil {
		return nil, err
	}
	return structured(v, false), nil
}

func (s *Server) show(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args, bad := arguments(req, idSchema)
	if bad != nil {
		return bad, nil
	}
	info, err := s.p.Get(ctx, args.Lookup("id").Str())
	if err != nil {
		return failure(err), nil
	}
	v, err := asJSON(info)
	if err != nil {
		return nil, err
	}
	return structured(v, false), nil
}

func (s *Server) answer(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if req.Params.RequestState != "" {
		return s.resume(ctx, req)
	}
	args, bad := arguments(req, answerSchema)
	if bad != nil {
		return bad, nil
	}
	id := args.Lookup("id").Str()
	if _, err := s.p.Answer(ctx, id, args.Lookup("answer")); err != nil {
		return failure(err), nil
	}
	f := &follower{s: s, req: req, id: id}
	return f.follow(ctx)
}

func (s *Server) cancel(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args, bad := arguments(req, idSchema)
	if bad != nil {
		return bad, nil
	}
	id := args.Lookup("id").Str()
	if err := s.p.Cancel(ctx, id); err != nil {
		return failure(err), nil
	}
	info, err := s.p.Get(ctx, id)
	if err != nil {
		return failure(err), nil
	}
	return outcome(info), nil
}

// ProcessesURI is the resource that lists the processes; a process's own
// is ProcessesURI + "/" + its id.
const ProcessesURI = "vibe://processes"

func (s *Server) addResources() {
	s.mcp.AddResource(&mcp.Resource{URI: ProcessesURI, Name: "processes", Title: "Vibe processes", MIMEType: "application/json",
		Description: "The newest processes: id, process, status, start time (list_processes pages through them all)."},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			page, err := s.p.List(ctx, process.ListOptions{})
			if err != nil {
				return nil, err
			}
			v, err := pageJSON(page)
			if err != nil {
				return nil, err
			}
			return resourceJSON(req.Params.URI, v)
		})
	s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: ProcessesURI + "/{id}", Name: "process", Title: "A Vibe process", MIMEType: "application/json",
		Description: "A process's state: status, what it waits for, every step's result, usage (as GET /v1/processes/{id})."},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			id := strings.TrimPrefix(req.Params.URI, ProcessesURI+"/")
			info, err := s.p.Get(ctx, id)
			if errors.Is(err, process.ErrNotFound) {
				return nil, mcp.ResourceNotFoundError(req.Params.URI)
			}
			if err != nil {
				return nil, err
			}
			return resourceJSON(req.Params.URI, info)
		})
}

// pageJSON is a page of processes as the API shows it: {"processes",
// "next"}.
func pageJSON(page process.Page) (jsonv.Value, error) {
	ps := page.Processes
	if ps == nil {
		ps = []process.Summary{}
	}
	var next any
	if page.Next != "" {
		next = page.Next
	}
	b, err := json.Marshal(struct {
		Processes []process.Summary `json:"processes"`
		Next      any               `json:"next"`
	}{ps, next})
	if err != nil {
		return jsonv.Value{}, err
	}
	return jsonv.Parse(b)
}

func resourceJSON(uri string, v any) (*mcp.ReadResourceResult, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(b)}}}, nil
}

// MCP returns the SDK's server, to connect to a transport of one's own.
// Run and Handler are the usual ways.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Run serves one session on t (stdio: &mcp.StdioTransport{}) until the
// client disconnects or ctx ends; then the session's calls that follow
// processes stop following, and the processes go on.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	ss, err := s.mcp.Connect(ctx, t, nil)
	if err != nil {
		return err
	}
	stop := make(chan struct{})
	s.mu.Lock()
	s.runs[ss] = stop
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.runs, ss)
		s.mu.Unlock()
	}()
	ended := make(chan error, 1)
	go func() { ended <- ss.Wait() }()
	select {
	case <-ctx.Done():
		close(stop)
		ss.Close()
		<-ended
		return nil
	case err := <-ended:
		return err
	}
}

// stopped returns the channel closed when a call of session ss is to stop
// following: when Run stops the session; nil (never) for other sessions.
func (s *Server) stopped(ss *mcp.ServerSession) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs[ss]
}

// Handler serves the MCP streamable HTTP transport. Mount it behind the
// API's guard (api.Options.Mounts), as vibe serve does at /mcp. Its
// streams — a call that follows a process, the stream of the server's own
// messages — outlive the HTTP server's timeouts (server.WriteTimeout): the
// request's write deadline is lifted at once, and its read deadline once
// its body is read, so that a client that trickles a body is still cut.
func (s *Server) Handler() http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{Logger: s.opts.Logger})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		_ = rc.SetWriteDeadline(time.Time{}) // ErrNotSupported off a real connection: no deadline to lift
		if r.Body == nil || r.Body == http.NoBody {
			_ = rc.SetReadDeadline(time.Time{})
		} else {
			r.Body = &liftAtEOF{ReadCloser: r.Body, rc: rc}
		}
		h.ServeHTTP(w, r)
	})
}

// liftAtEOF lifts the read deadline once the body is read.
type liftAtEOF struct {
	io.ReadCloser
	rc *http.ResponseController
}

func (b *liftAtEOF) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// Close makes every call that follows a process return at once, saying
// the process goes on; the processes themselves are untouched.
func (s *Server) Close() {
	s.stopOnce.Do(func() { close(s.stopping) })
}
