package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/internal/throttle"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/schema"
)

// Processes is what the API serves: process.Client implements it.
type Processes interface {
	Start(ctx context.Context, opts process.StartOptions) (*process.Started, error)
	Get(ctx context.Context, id string) (*process.Info, error)
	List(ctx context.Context, opts process.ListOptions) (process.Page, error)
	Answer(ctx context.Context, id string, answer jsonv.Value) (*process.View, error)
}

// AnswersAs is what a Processes may also do: record who sent an answer
// with it (process.Client does, in the process's View.Answers). The API
// records its answers as an API client's.
type AnswersAs interface {
	AnswerAs(ctx context.Context, id string, answer jsonv.Value, by string) (*process.View, error)
}

// Options configures Handler. The zero value needs no token — and so
// answers only requests addressed to loopback from no other web origin —
// and logs to slog.Default.
type Options struct {
	// Token, when set, is required as "Authorization: Bearer <token>";
	// a client (an IP address, an IPv6 /64) that sends five wrong ones is
	// refused (429, Retry-After) until it has a try again, one every two
	// seconds. Without one the server must listen on loopback only, and refuses
	// (403) requests whose Host is not a loopback name or that come from
	// another web origin (Origin, Sec-Fetch-Site): a web page cannot reach
	// it through the person's browser.
	Token string
	// Logger records one line per request; nil means slog.Default().
	Logger *slog.Logger
	// MaxBody bounds a request body; 0 means durable.MaxPayloadSize, the
	// engine's own limit on what one request can carry.
	MaxBody int64
	// Requests, when set, serves Vessel requests and plans (/v1/requests,
	// /v1/plans); without it those paths are unknown (404).
	Requests Requests
	// Mounts are more handlers by ServeMux pattern, served behind the same
	// guard (token, or loopback Host and origin) and log as the API: vibe
	// serve mounts MCP at "/mcp" and the console at "/". The paths under
	// /v1/ stay the API's, whatever a mount's pattern matches; a mount that
	// implements Sessions admits its own signed-in browsers too.
	Mounts map[string]http.Handler
	// Batches, when set, serves batches (/v1/batches); without it those
	// paths are unknown (404).
	Batches Batches
	// MaxBatchBody bounds a batch's JSONL body; 0 means
	// DefaultMaxBatchBody.
	MaxBatchBody int64
	// Replays, when set, serves replays (POST /v1/replays); without it
	// the path is unknown (404).
	Replays Replays
}

// Handler returns the API's handler.
func Handler(p Processes, opts Options) http.Handler {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MaxBody <= 0 {
		opts.MaxBody = durable.MaxPayloadSize
	}
	s := &server{p: p, opts: opts}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/processes", s.start)
	mux.HandleFunc("GET /v1/processes", s.list)
	mux.HandleFunc("GET /v1/processes/{id}", s.get)
	mux.HandleFunc("POST /v1/processes/{id}/answer", s.answer)
	mux.HandleFunc("POST /v1/processes/{id}/cancel", s.cancel)
	if opts.Batches != nil {
		mux.HandleFunc("POST /v1/batches", s.startBatch)
		mux.HandleFunc("GET /v1/batches", s.listBatches)
		mux.HandleFunc("GET /v1/batches/{id}", s.getBatch)
		mux.HandleFunc("GET /v1/batches/{id}/results", s.batchResults)
		mux.HandleFunc("GET /v1/batches/{id}/waiting", s.batchWaiting)
		mux.HandleFunc("POST /v1/batches/{id}/cancel", s.cancelBatch)
	}
	if opts.Replays != nil {
		mux.HandleFunc("POST /v1/replays", s.startReplay)
	}
	if opts.Requests != nil {
		mux.HandleFunc("POST /v1/requests", s.startRequest)
		mux.HandleFunc("GET /v1/requests", s.listRequests)
		mux.HandleFunc("GET /v1/requests/{id}", s.getRequest)
		mux.HandleFunc("POST /v1/plans", s.startPlan)
	}
	mounts := http.NewServeMux()
	for pattern, h := range opts.Mounts {
		mounts.Handle(pattern, h)
	}
	api, mounted := routed(mux), routed(mounts)
	return s.logged(s.guarded(mounts, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isAPIPath(r.URL.Path) {
			api.ServeHTTP(w, r)
			return
		}
		mounted.ServeHTTP(w, r)
	})))
}

// isAPIPath reports whether a path is the API's own: its 404 and 405 are
// the API's even when a mount's pattern ("/", the console's) would match
// it.
func isAPIPath(path string) bool { return path == "/v1" || strings.HasPrefix(path, "/v1/") }

// routed serves mux, its own 404 and 405 answers in the API's JSON shape.
// (A catch-all "/" pattern would do the first but turn every 405 into a
// 404, since it matches any method.)
func routed(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern == "" {
			w = &muxErrors{ResponseWriter: w, r: r}
		}
		mux.ServeHTTP(w, r)
	})
}

type server struct {
	p    Processes
	opts Options
	// tries limits each client's wrong bearer tokens.
	tries throttle.Limiter
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection (deadlines,
// flushes).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (s *server) logged(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r)
		s.opts.Logger.LogAttrs(r.Context(), slog.LevelInfo, "api",
			slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.Int("status", sw.status), slog.Duration("took", time.Since(start)))
	})
}

// readBody parses a JSON request body, order kept. The body must say it is
// JSON (a form a web page can post without asking is not), fit in MaxBody,
// and arrive within the server's read timeout.
func (s *server) readBody(w http.ResponseWriter, r *http.Request) (jsonv.Value, bool) {
	if why := notJSON(r.Header.Get("Content-Type")); why != "" {
		writeError(w, http.StatusUnsupportedMediaType, &apiError{Error: why})
		return jsonv.Value{}, false
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		var netErr net.Error
		switch {
		case errors.As(err, &tooLarge):
			writeError(w, http.StatusRequestEntityTooLarge, &apiError{Error: fmt.Sprintf("the request body is larger than %d bytes, the most one request can carry", tooLarge.Limit)})
		case errors.As(err, &netErr) && netErr.Timeout():
			writeError(w, http.StatusRequestTimeout, &apiError{Error: "the request body came too slowly"})
		default:
			writeError(w, http.StatusBadRequest, &apiError{Error: "the request body could not be read: " + err.Error()})
		}
		return jsonv.Value{}, false
	}
	v, err := schema.Parse("request", data)
	if err != nil {
		var e *schema.Error
		errors.As(err, &e)
		what := "the request body is not JSON: "
		if _, ok := errors.AsType[*jsonv.RangeError](err); ok {
			what = "the request body: " + string(e.Path) + ": "
		}
		writeError(w, http.StatusBadRequest, &apiError{Error: what + e.Message, Path: string(e.Path)})
		return jsonv.Value{}, false
	}
	return v, true
}

// notJSON says what is wrong with a request's content type, or "" when it
// is application/json (with no charset, or UTF-8, JSON's only one).
func notJSON(contentType string) string {
	const want = "send the body as JSON, with Content-Type: application/json"
	if contentType == "" {
		return "no Content-Type: " + want
	}
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || mt != "application/json" {
		return fmt.Sprintf("Content-Type %q: %s", contentType, want)
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return fmt.Sprintf("Content-Type %q: JSON is UTF-8; send it as application/json or with charset=utf-8", contentType)
	}
	return ""
}

// pathID returns the id in the request's path, or writes why it cannot be
// the id of a what ("process"): ids are printable, without spaces, and at
// most the engine's 1000 bytes.
func pathID(w http.ResponseWriter, r *http.Request, what string) (string, bool) {
	id := r.PathValue("id")
	bad := len(id) > maxIDLength || !utf8.ValidString(id)
	for _, c := range id {
		bad = bad || !unicode.IsPrint(c) || unicode.IsSpace(c)
	}
	if bad {
		writeError(w, http.StatusBadRequest, &apiError{Error: fmt.Sprintf("%q is not a %s id: ids are printable, without spaces, at most %d bytes", id, what, maxIDLength)})
		return "", false
	}
	return id, true
}

// maxIDLength is the engine's limit on a workflow id (limit.maxIDLength).
const maxIDLength = 1000

func (s *server) start(w http.ResponseWriter, r *http.Request) {
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	if body.Object() == nil {
		writeError(w, http.StatusBadRequest, &apiError{Error: "the request body must be an object: {\"process\": URI or schema, \"prompt\": …, \"input\": {…}}"})
		return
	}
	var opts process.StartOptions
	var bad []detail
	for name, v := range body.Members() {
		at := "/" + name
		switch name {
		case "process":
			switch v.Kind() {
			case jsonv.KindString:
				opts.Process = v.Str()
				if _, err := registry.ParseURI(opts.Process); err != nil {
					bad = append(bad, detail{Path: at, Message: err.Error()})
				}
			case jsonv.KindObject:
				opts.Document = v
			default:
				bad = append(bad, detail{Path: at, Message: "process must be a registry URI or an inline process schema"})
			}
		case "pipeline", "prompt", "system", "name":
			if v.Kind() != jsonv.KindString {
				bad = append(bad, detail{Path: at, Message: name + " must be a string"})
				continue
			}
			switch name {
			case "pipeline":
				opts.Pipeline = v.Str()
			case "prompt":
				opts.Prompt = v.Str()
			case "name":
				opts.Name = v.Str()
			default:
				opts.System = v.Str()
			}
		case "input":
			opts.Input = v
		case "first":
			opts.First = v
		default:
			bad = append(bad, detail{Path: at, Message: fmt.Sprintf("unknown field %q (want process, pipeline, name, prompt, input, first, system)", name)})
		}
	}
	if len(bad) > 0 {
		writeError(w, http.StatusBadRequest, &apiError{Error: bad[0].Message, Path: bad[0].Path, Details: bad})
		return
	}
	if opts.Pipeline != "" && (opts.Process != "" || opts.Document.Object() != nil) {
		writeError(w, http.StatusBadRequest, &apiError{Error: "give the process to start as \"process\" or as \"pipeline\", not both", Path: "/pipeline"})
		return
	}
	if opts.Process == "" && opts.Document.Object() == nil && opts.Pipeline == "" {
		writeError(w, http.StatusBadRequest, &apiError{Error: "give the process to start: \"process\" (a registry URI or an inline schema) or \"pipeline\"", Path: "/process"})
		return
	}
	started, err := s.p.Start(r.Context(), opts)
	if err != nil {
		s.failed(w, r, err)
		return
	}
	out := map[string]any{"id": started.ID, "process": started.Name, "direct": started.Direct}
	if len(started.Unread) > 0 {
		out["unread"] = started.Unread
	}
	writeJSON(w, http.StatusCreated, out)
}

// listPage is the answer of GET /v1/processes.
type listPage struct {
	Processes []process.Summary `json:"processes"`
	Next      *string           `json:"next"` // null on the last page
}

// listOptions reads a list's query (limit, cursor, and for a filtered
// list status), or writes why it cannot.
func listOptions(w http.ResponseWriter, r *http.Request, filtered bool) (process.ListOptions, bool) {
	var opts process.ListOptions
	query, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		writeError(w, http.StatusBadRequest, &apiError{Error: "the query is malformed: " + err.Error()})
		return opts, false
	}
	for name, vs := range query {
		switch name {
		case "limit":
			n, err := strconv.Atoi(vs[0])
			if err != nil || n < 1 || n > durable.MaxListLimit || len(vs) > 1 {
				writeError(w, http.StatusBadRequest, &apiError{Error: fmt.Sprintf("limit %q: give one number from 1 to %d (default %d)", strings.Join(vs, ","), durable.MaxListLimit, durable.DefaultListLimit)})
				return opts, false
			}
			opts.Limit = n
		case "cursor":
			if len(vs) > 1 {
				writeError(w, http.StatusBadRequest, &apiError{Error: "give one cursor: the \"next\" of the page before"})
				return opts, false
			}
			opts.Cursor = vs[0]
		case "status":
			if !filtered {
				writeError(w, http.StatusBadRequest, &apiError{Error: fmt.Sprintf("unknown parameter %q (want limit, cursor)", name)})
				return opts, false
			}
			st := process.Status(vs[0])
			if len(vs) > 1 || !slices.Contains([]process.Status{process.Running, process.Waiting, process.Completed, process.Failed}, st) {
				writeError(w, http.StatusBadRequest, &apiError{Error: fmt.Sprintf("status %q: give one of running, waiting, completed, failed", strings.Join(vs, ","))})
				return opts, false
			}
			opts.Status = st
		default:
			want := "limit, cursor"
			if filtered {
				want += ", status"
			}
			writeError(w, http.StatusBadRequest, &apiError{Error: fmt.Sprintf("unknown parameter %q (want %s)", name, want)})
			return opts, false
		}
	}
	return opts, true
}

func (s *server) list(w http.ResponseWriter, r *http.Request) {
	servePage(s, w, r, true, func(ctx context.Context, opts process.ListOptions) ([]process.Summary, string, error) {
		page, err := s.p.List(ctx, opts)
		return page.Processes, page.Next, err
	}, func(items []process.Summary, next *string) any { return listPage{Processes: items, Next: next} })
}

// servePage answers a list's GET: the page list gives for the query's
// limit and cursor (and status, when the list is filtered), as page puts
// it — its items (never null) and the next cursor (null on the last page).
func servePage[T any](s *server, w http.ResponseWriter, r *http.Request, filtered bool, list func(context.Context, process.ListOptions) ([]T, string, error), page func(items []T, next *string) any) {
	opts, ok := listOptions(w, r, filtered)
	if !ok {
		return
	}
	items, next, err := list(r.Context(), opts)
	if err != nil {
		s.failed(w, r, err)
		return
	}
	if items == nil {
		items = []T{}
	}
	var nextCursor *string
	if next != "" {
		nextCursor = &next
	}
	writeJSON(w, http.StatusOK, page(items, nextCursor))
}

func (s *server) get(w http.ResponseWriter, r *http.Request) {
	serveGet(s, w, r, "process", s.p.Get)
}

// serveGet answers the GET of one item: what get gives for the id in the
// path, which names a what ("process").
func serveGet[T any](s *server, w http.ResponseWriter, r *http.Request, what string, get func(context.Context, string) (T, error)) {
	id, ok := pathID(w, r, what)
	if !ok {
		return
	}
	item, err := get(r.Context(), id)
	if err != nil {
		s.failed(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, item)
}

func (s *server) answer(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "process")
	if !ok {
		return
	}
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	var err error
	if as, ok := s.p.(AnswersAs); ok {
		by := "an API client on loopback (no token)"
		if s.opts.Token != "" {
			by = "an API client with the token"
		}
		_, err = as.AnswerAs(r.Context(), id, body, by)
	} else {
		_, err = s.p.Answer(r.Context(), id, body)
	}
	if err != nil {
		s.failed(w, r, err)
		return
	}
	info, err := s.p.Get(r.Context(), id)
	if err != nil {
		s.failed(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, info)
}
