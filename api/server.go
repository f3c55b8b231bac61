package api

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm/replay"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/schema"
)

// Processes is what the API serves: process.Client implements it.
type Processes interface {
	Start(ctx context.Context, opts process.StartOptions) (*process.Started, error)
	Get(ctx context.Context, id string) (*process.Info, error)
	List(ctx context.Context, limit int) ([]process.Summary, error)
	Answer(ctx context.Context, id string, answer jsonv.Value) (*process.View, error)
}

// Options configures Handler. The zero value needs no token and logs to
// slog.Default.
type Options struct {
	// Token, when set, is required as "Authorization: Bearer <token>".
	Token string
	// Logger records one line per request; nil means slog.Default().
	Logger *slog.Logger
	// MaxBody bounds a request body; 0 means 8 MiB.
	MaxBody int64
}

// Handler returns the API's handler.
func Handler(p Processes, opts Options) http.Handler {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MaxBody <= 0 {
		opts.MaxBody = 8 << 20
	}
	s := &server{p: p, opts: opts}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/processes", s.start)
	mux.HandleFunc("GET /v1/processes", s.list)
	mux.HandleFunc("GET /v1/processes/{id}", s.get)
	mux.HandleFunc("POST /v1/processes/{id}/answer", s.answer)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, &apiError{Error: fmt.Sprintf("no such endpoint: %s %s", r.Method, r.URL.Path)})
	})
	return s.logged(s.authorized(mux))
}

type server struct {
	p    Processes
	opts Options
}

// apiError is the JSON of every error.
type apiError struct {
	Error   string   `json:"error"`
	Path    string   `json:"path"`
	Details []detail `json:"details"`
}

type detail struct {
	File    string `json:"file,omitempty"`
	Path    string `json:"path"`
	Message string `json:"message"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

func writeError(w http.ResponseWriter, status int, e *apiError) {
	if e.Details == nil {
		e.Details = []detail{}
	}
	writeJSON(w, status, e)
}

func (s *server) authorized(next http.Handler) http.Handler {
	if s.opts.Token == "" {
		return next
	}
	want := []byte("Bearer " + s.opts.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("Authorization"))
		if subtle.ConstantTimeCompare(got, want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="vibe"`)
			writeError(w, http.StatusUnauthorized, &apiError{Error: "missing or wrong token: send Authorization: Bearer <token>"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

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

// readBody parses a JSON request body, order kept.
func (s *server) readBody(w http.ResponseWriter, r *http.Request) (jsonv.Value, bool) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBody))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, &apiError{Error: "request body too large or unreadable: " + err.Error()})
		return jsonv.Value{}, false
	}
	v, err := schema.Parse("request", data)
	if err != nil {
		var e *schema.Error
		errors.As(err, &e)
		writeError(w, http.StatusBadRequest, &apiError{Error: "the request body is not JSON: " + e.Message, Path: string(e.Path)})
		return jsonv.Value{}, false
	}
	return v, true
}

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
			case jsonv.KindObject:
				opts.Document = v
			default:
				bad = append(bad, detail{Path: at, Message: "process must be a registry URI or an inline process schema"})
			}
		case "pipeline", "prompt", "system":
			if v.Kind() != jsonv.KindString {
				bad = append(bad, detail{Path: at, Message: name + " must be a string"})
				continue
			}
			switch name {
			case "pipeline":
				opts.Pipeline = v.Str()
			case "prompt":
				opts.Prompt = v.Str()
			default:
				opts.System = v.Str()
			}
		case "input":
			opts.Input = v
		case "first":
			opts.First = v
		default:
			bad = append(bad, detail{Path: at, Message: fmt.Sprintf("unknown field %q (want process, pipeline, prompt, input, first, system)", name)})
		}
	}
	if len(bad) > 0 {
		writeError(w, http.StatusBadRequest, &apiError{Error: bad[0].Message, Path: bad[0].Path, Details: bad})
		return
	}
	if opts.Process == "" && opts.Document.Object() == nil && opts.Pipeline == "" {
		writeError(w, http.StatusBadRequest, &apiError{Error: "give the process to start: \"process\" (a registry URI or an inline schema) or \"pipeline\"", Path: "/process"})
		return
	}
	started, err := s.p.Start(r.Context(), opts)
	if err != nil {
		s.failed(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"id": started.ID, "process": started.Name, "direct": started.Direct})
}

// failed writes the error of a start or an answer: the problems of a bad
// process (422), an unknown one (404), or an internal failure (500).
func (s *server) failed(w http.ResponseWriter, err error) {
	var list schema.ErrorList
	var located *schema.Error
	var refused *process.RefusedError
	var missing *replay.MissingError
	switch {
	case errors.Is(err, process.ErrNotFound), errors.Is(err, registry.ErrNotFound):
		writeError(w, http.StatusNotFound, &apiError{Error: err.Error()})
	case errors.As(err, &list) || errors.As(err, &located):
		var ds []detail
		for _, e := range schema.Errors(err, "") {
			p := string(e.Path)
			if e.Line > 0 {
				p = fmt.Sprintf("%d:%d", e.Line, e.Column)
			}
			ds = append(ds, detail{File: e.File, Path: p, Message: e.Message})
		}
		writeError(w, http.StatusUnprocessableEntity, &apiError{Error: ds[0].Message, Path: ds[0].Path, Details: ds})
	case errors.As(err, &refused):
		e := &apiError{Error: refused.Message}
		for _, p := range refused.Problems() {
			e.Details = append(e.Details, detail{Path: string(p.Path), Message: p.Message})
		}
		if len(e.Details) > 0 {
			e.Path = e.Details[0].Path
		}
		writeError(w, http.StatusUnprocessableEntity, e)
	case errors.As(err, &missing):
		writeError(w, http.StatusUnprocessableEntity, &apiError{Error: err.Error()})
	default:
		s.opts.Logger.Error("api: request failed", "err", err)
		writeError(w, http.StatusInternalServerError, &apiError{Error: err.Error()})
	}
}

func (s *server) list(w http.ResponseWriter, r *http.Request) {
	ps, err := s.p.List(r.Context(), 0)
	if err != nil {
		s.failed(w, err)
		return
	}
	if ps == nil {
		ps = []process.Summary{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"processes": ps})
}

func (s *server) get(w http.ResponseWriter, r *http.Request) {
	info, err := s.p.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		s.failed(w, err)
		return
	}
	writeJSON(w, http.StatusOK, info)
}

func (s *server) answer(w http.ResponseWriter, r *http.Request) {
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	if _, err := s.p.Answer(r.Context(), id, body); err != nil {
		s.failed(w, err)
		return
	}
	info, err := s.p.Get(r.Context(), id)
	if err != nil {
		s.failed(w, err)
		return
	}
	writeJSON(w, http.StatusOK, info)
}
