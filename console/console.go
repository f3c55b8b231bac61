package console

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/internal/throttle"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/replay"
	"github.com/augceo/vibe/request"
)

// Processes is what the console reads and answers of processes:
// process.Client implements it.
type Processes interface {
	List(ctx context.Context, opts process.ListOptions) (process.Page, error)
	Get(ctx context.Context, id string) (*process.Info, error)
	Answer(ctx context.Context, id string, answer jsonv.Value) (*process.View, error)
}

// Starter starts processes: process.Client implements it. With it the
// console has a page that starts one (/start).
type Starter interface {
	Start(ctx context.Context, opts process.StartOptions) (*process.Started, error)
}

// Canceler cancels a process: process.Client implements it. With it a
// running or waiting process's page has a Cancel button.
type Canceler interface {
	Cancel(ctx context.Context, id string) error
}

// Retrier starts a process again, a new one with the input the old one
// started with: process.Client implements it. With it a finished
// process's page has a Retry button.
type Retrier interface {
	Retry(ctx context.Context, id string) (*process.Started, error)
}

// AnswersAs records who sent an answer with it (process.Client does, in
// the process's View.Answers): the console says which session sent each.
// Processes that do not are answered with Answer, and keep only when.
type AnswersAs interface {
	AnswerAs(ctx context.Context, id string, answer jsonv.Value, by string) (*process.View, error)
}

// Programs gives the compiled program a process runs, for its picture and
// for the schema each model call was sent: process.Client implements it.
// Processes that do not are shown without them.
type Programs interface {
	Program(ctx context.Context, id string) (*compile.Program, error)
}

// Requests is what the console reads of Vessel requests: request.Client
// implements it.
type Requests interface {
	List(ctx context.Context, opts request.ListOptions) (request.Page, error)
	Get(ctx context.Context, id string) (*request.Info, error)
}

// Replays is what the console reads of replays' reports.
type Replays interface {
	// ReplayReport is the report of replay id (replay.ErrNoReport when
	// none was kept).
	ReplayReport(ctx context.Context, id string) (*replay.Report, error)
}

// Batches is what the console reads of batches.
type Batches interface {
	// ListBatches returns the batches, newest first.
	ListBatches(ctx context.Context) ([]batch.Status, error)
	// Batch returns one batch's progress.
	Batch(ctx context.Context, id string) (batch.Status, error)
	// Results returns a batch's result lines in input order, only the
	// failed ones with failedOnly, at most limit of them.
	Results(ctx context.Context, id string, failedOnly bool, limit int) ([]batch.Result, error)
}

// WaitingItems finds a batch's items that wait for a person: the inbox
// lists them beside the waiting processes when Options.Batches
// implements it too (batch.Client.Waiting does the work). A batch's items
// are not listed among processes.
type WaitingItems interface {
	WaitingItems(ctx context.Context, batch string) ([]string, error)
}

// Options configures Handler. Only Processes is needed; the zero value of
// the rest is an open console (on loopback, as the API's guard has it)
// without requests, batches or links to Temporal's UI.
type Options struct {
	// Token is the API's token: with one, a browser signs in with it and
	// gets a session cookie (see api.Sessions), or a client sends it as
	// "Authorization: Bearer <token>".
	Token string
	// Processes are the processes shown; Programs, Starter, Canceler,
	// Retrier and AnswersAs are taken from it when it implements them too.
	Processes Processes
	// Registry, when set, lists the processes the start form offers
	// (aug:processes/…); any registry URI may be typed there too.
	Registry *registry.Registry
	// Requests, when set, shows the Vessel requests.
	Requests Requests
	// Batches, when set, shows the batches; with WaitingItems too, the
	// inbox lists their items that wait for a person.
	Batches Batches
	// Replays, when set, gives a replay's page (a batch of kind replay)
	// its report: the items that changed and how.
	Replays Replays
	// TemporalUI, when set, is the base URL of Temporal's Web UI
	// (http://127.0.0.1:8233): every process and request links to its
	// workflow there.
	TemporalUI string
	// Namespace is the engine's namespace, for those links; "" means
	// "default".
	Namespace string
	// Logger records what failed; nil means slog.Default().
	Logger *slog.Logger
	// Stop, when closed, ends every event stream, so that a server
	// shutting down need not wait for the browsers that follow a page.
	Stop <-chan struct{}
	// Poll is how often an event stream looks for changes; 0 means one
	// second.
	Poll time.Duration
	// Prices, when set, turn tokens into money: each process, model call
	// and batch shows its cost (with the batch discount for calls that
	// went through a provider's Batch API).
	Prices *llm.Prices
}

// cost says what usage u of model costs at the console's prices, "" when
// it has none for it.
func (c *console) cost(model string, u llm.Usage) string {
	if amount, ok := c.opts.Prices.Cost(model, u, false); ok {
		return c.opts.Prices.Format(amount)
	}
	return ""
}

// The console's own bounds.
const (
	// listLimit is the most processes, requests or waiting processes a
	// page shows; the next are a link away (the engine's cursor).
	listLimit = 50
	// failedLimit is the most failed items a batch's page shows.
	failedLimit = 100
	// streamFor bounds one event stream; the browser reconnects at once
	// (EventSource does), so a stream never pins a connection for long.
	streamFor = 5 * time.Minute
	// maxNesting bounds how deep delegate sub-requests are drawn inside
	// their parent (the engine's own default depth is 4).
	maxNesting = 4
)

//go:embed templates static
var files embed.FS

// Handler returns the console's handler. It also implements api.Sessions,
// so that the API's guard admits the console's signed-in browsers.
func Handler(opts Options) http.Handler {
	c, err := newConsole(opts)
	if err != nil {
		// The templates are the package's own, parsed by every test.
		panic(err)
	}
	return c
}

// console is the Handler.
type console struct {
	opts     Options
	programs Programs
	starter  Starter
	canceler Canceler
	retrier  Retrier
	pages    *template.Template
	mux      *http.ServeMux
	auth     *auth
	now      func() time.Time
	// tries limits each client's wrong tokens at sign-in.
	tries throttle.Limiter

	// finished keeps the rows of processes that have completed or failed,
	// which never change again: the list reads each of them once, not on
	// every refresh of every open page. It is bounded by finishedCap.
	finishedMu sync.Mutex
	finished   map[string]processRow
	// programCache keeps processes' programs, which never change; bounded
	// by finishedCap too.
	programMu    sync.Mutex
	programCache map[string]*compile.Program

	// feeds read the pages that event streams follow, one reader per page.
	feeds feeds
}

// finishedCap bounds the console's caches; past it they start over.
const finishedCap = 4096

func newConsole(opts Options) (*console, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	if opts.Namespace == "" {
		opts.Namespace = "default"
	}
	opts.TemporalUI = strings.TrimSuffix(opts.TemporalUI, "/")
	pages, err := template.New("").Funcs(funcs).ParseFS(files, "templates/*.html")
	if err != nil {
		return nil, err
	}
	a, err := newAuth(opts.Token)
	if err != nil {
		return nil, err
	}
	c := &console{opts: opts, pages: pages, auth: a, now: time.Now,
		finished: map[string]processRow{}, programCache: map[string]*compile.Program{}}
	c.programs, _ = opts.Processes.(Programs)
	c.starter, _ = opts.Processes.(Starter)
	c.canceler, _ = opts.Processes.(Canceler)
	c.retrier, _ = opts.Processes.(Retrier)
	c.routes()
	return c, nil
}

func (c *console) routes() {
	c.mux = http.NewServeMux()
	c.page("GET /{$}", "processes", c.processes)
	c.page("GET /processes", "processes", c.processes)
	c.page("GET /processes/{id}", "process", c.process)
	c.page("GET /inbox", "inbox", c.inbox)
	if c.opts.Requests != nil {
		c.page("GET /requests", "requests", c.requests)
		c.page("GET /requests/{id}", "request", c.request)
	}
	if c.opts.Batches != nil {
		c.page("GET /batches", "batches", c.batches)
		c.page("GET /batches/{id}", "batch", c.batch)
	}
	c.mux.HandleFunc("POST /processes/{id}/answer", c.answer)
	if c.starter != nil {
		c.page("GET /start", "start", c.startPage)
		c.mux.HandleFunc("POST /processes", c.start)
	}
	if c.canceler != nil {
		c.mux.HandleFunc("POST /processes/{id}/cancel", c.cancel)
	}
	if c.retrier != nil {
		c.mux.HandleFunc("POST /processes/{id}/retry", c.retry)
	}
	c.mux.HandleFunc("GET /events/{path...}", c.events)
	c.mux.HandleFunc("GET /signin", c.signinPage)
	c.mux.HandleFunc("POST /signin", c.signin)
	c.mux.HandleFunc("POST /signout", c.signout)
	static, _ := fs.Sub(files, "static")
	c.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	c.mux.HandleFunc("GET /static/schemaform.js", serveScript)
	c.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		c.fail(w, r, &pageError{status: http.StatusNotFound, msg: fmt.Sprintf("nothing here: %s %s", r.Method, r.URL.Path)})
	})
}

// ServeHTTP serves the console, with the headers that keep its pages to
// themselves: no script or style but its own, no framing, no sniffing.
func (c *console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
		"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	c.mux.ServeHTTP(w, r)
}

// loader reads what a page shows; its error is shown as a page (a
// *pageError says with which status).
type loader func(r *http.Request) (any, error)

// page serves a page: the layout around the template name, with what load
// reads. Its part inside {{template "NAME.live"}} is also what the page's
// event stream sends when it changes (see events).
func (c *console) page(pattern, name string, load loader) {
	c.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		data, err := load(r)
		if err != nil {
			c.fail(w, r, err)
			return
		}
		if live, ok := r.Context().Value(liveKey{}).(*liveFragment); ok {
			live.name, live.data = name+".live", data
			return
		}
		c.render(w, r, http.StatusOK, name, data)
	})
}

// view is what the layout gets: the page's own data and the console's.
type view struct {
	Page       string // the template of the page's content
	Title      string
	Data       any
	CSRF       string
	SignedIn   bool // shows "sign out"
	Requests   bool
	Batches    bool
	Start      bool // a link to the start form
	TemporalUI string
	Live       string // the event stream of the page, "" for none
}

// render writes a whole page.
func (c *console) render(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	v := view{Page: name, Title: titleOf(name, data), Data: data, CSRF: c.auth.csrfToken(w, r),
		SignedIn: c.opts.Token != "" && c.auth.session(r, c.now()), Requests: c.opts.Requests != nil, Batches: c.opts.Batches != nil,
		Start: c.starter != nil, TemporalUI: c.opts.TemporalUI}
	if c.pages.Lookup(name+".live") != nil {
		v.Live = "/events" + r.URL.Path
		if r.URL.RawQuery != "" {
			v.Live += "?" + r.URL.RawQuery
		}
	}
	var b bytes.Buffer
	if err := c.pages.ExecuteTemplate(&b, "layout", v); err != nil {
		c.opts.Logger.Error("console: render", "page", name, "err", err)
		http.Error(w, "the page could not be drawn: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(b.Bytes())
}

// titled is data that names its page.
type titled interface{ title() string }

func titleOf(name string, data any) string {
	if t, ok := data.(titled); ok {
		return t.title()
	}
	return strings.ToUpper(name[:1]) + name[1:]
}

// pageError is a page that could not be shown, and why.
type pageError struct {
	status int
	msg    string
}

func (e *pageError) Error() string { return e.msg }

// fail shows why a page could not be shown: an unknown process or request
// is a 404, an engine that cannot answer a 503, anything else a 500.
func (c *console) fail(w http.ResponseWriter, r *http.Request, err error) {
	status := http.StatusInternalServerError
	var pe *pageError
	switch {
	case errors.As(err, &pe):
		status = pe.status
	case errors.Is(err, process.ErrNotFound), errors.Is(err, request.ErrNotFound), errors.Is(err, batch.ErrNotFound):
		status = http.StatusNotFound
	case errors.Is(err, durable.ErrBadCursor):
		status = http.StatusBadRequest
	case errors.Is(err, process.ErrHostedCancel), errors.Is(err, process.ErrHostedRetry):
		status = http.StatusConflict
	case errors.Is(err, context.DeadlineExceeded):
		status = http.StatusServiceUnavailable
	}
	if status >= 500 {
		c.opts.Logger.Error("console", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	if live, ok := r.Context().Value(liveKey{}).(*liveFragment); ok {
		live.err = err
		return
	}
	c.render(w, r, status, "error", errorPage{Status: status, Message: err.Error()})
}

type errorPage struct {
	Status  int
	Message string
}

func (e errorPage) title() string { return http.StatusText(e.Status) }

// temporalLink is the workflow's page in Temporal's UI, or "".
func (c *console) temporalLink(id string) string {
	if c.opts.TemporalUI == "" {
		return ""
	}
	return c.opts.TemporalUI + "/namespaces/" + pathEscape(c.opts.Namespace) + "/workflows/" + pathEscape(id)
}

// program returns a process's program, or nil when the console has none
// to give.
func (c *console) program(ctx context.Context, id string) (*compile.Program, error) {
	if c.programs == nil {
		return nil, nil
	}
	c.programMu.Lock()
	p, ok := c.programCache[id]
	c.programMu.Unlock()
	if ok {
		return p, nil
	}
	p, err := c.programs.Program(ctx, id)
	if err != nil {
		return nil, err
	}
	c.programMu.Lock()
	if len(c.programCache) >= finishedCap {
		clear(c.programCache)
	}
	c.programCache[id] = p
	c.programMu.Unlock()
	return p, nil
}
