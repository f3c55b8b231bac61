package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"go.temporal.io/api/serviceerror"

	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/internal/diskspace"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/request"
	"github.com/augceo/vibe/schema"
)

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

// failed writes the error of a call to Processes: the caller's mistakes as
// 4xx, each with what to change; the engine's own failures as 503 (it may
// pass) or 500, and a full disk under the engine ("no space left on
// device", SQLite's "database or disk is full") as 507, logged.
func (s *server) failed(w http.ResponseWriter, r *http.Request, err error) {
	var (
		list       schema.ErrorList
		located    *schema.Error
		refused    *process.RefusedError
		first      *process.FirstError
		notWaiting *process.NotWaitingError
		tooLarge   *durable.TooLargeError
		bound      *request.BoundError
	)
	switch {
	case errors.As(err, &tooLarge):
		writeError(w, http.StatusRequestEntityTooLarge, &apiError{Error: err.Error()})
	case errors.As(err, &first):
		e := &apiError{Error: err.Error(), Path: "/first"}
		for _, p := range first.Problems {
			e.Details = append(e.Details, detail{Path: "/first" + string(p.Path), Message: p.Message})
		}
		if len(e.Details) > 0 {
			e.Path = e.Details[0].Path
		}
		writeError(w, http.StatusUnprocessableEntity, e)
	case errors.As(err, new(*batch.InputChangedError)):
		writeError(w, http.StatusConflict, &apiError{Error: err.Error(), Path: "/id"})
	case errors.Is(err, process.ErrHostedCancel):
		writeError(w, http.StatusConflict, &apiError{Error: err.Error()})
	case errors.As(err, &notWaiting):
		writeError(w, http.StatusConflict, &apiError{Error: notWaiting.Error()})
	case errors.Is(err, durable.ErrBadCursor):
		writeError(w, http.StatusBadRequest, &apiError{Error: err.Error()})
	case errors.Is(err, registry.ErrNoRegistry) && (strings.HasPrefix(r.URL.Path, "/v1/processes") || strings.HasPrefix(r.URL.Path, "/v1/batches") || strings.HasPrefix(r.URL.Path, "/v1/replays")):
		writeError(w, http.StatusBadRequest, &apiError{Error: "this server has no registry: send the process inline", Path: "/process"})
	case errors.Is(err, registry.ErrNoRegistry):
		writeError(w, http.StatusBadRequest, &apiError{Error: "this server has no registry to find the Vessel and its tools in", Path: "/vessel"})
	case errors.As(err, &list) || errors.As(err, &located):
		// Before an unknown document: a $ref a document names that is
		// not in the registry is the document's problem (422), not an
		// unknown document (404).
		var ds []detail
		for _, e := range schema.Errors(err, "") {
			p := string(e.Path)
			if e.Line > 0 {
				p = fmt.Sprintf("%d:%d", e.Line, e.Column)
			}
			ds = append(ds, detail{File: e.File, Path: p, Message: e.Message})
		}
		writeError(w, http.StatusUnprocessableEntity, &apiError{Error: ds[0].Message, Path: ds[0].Path, Details: ds})
	case errors.Is(err, process.ErrNotFound), errors.Is(err, request.ErrNotFound), errors.Is(err, registry.ErrNotFound), errors.Is(err, batch.ErrNotFound):
		writeError(w, http.StatusNotFound, &apiError{Error: err.Error()})
	case errors.As(err, &bound):
		path := "/delegateDepth"
		if bound.What == request.BoundFanOut {
			path = "/delegateFanOut"
		}
		writeError(w, http.StatusBadRequest, &apiError{Error: err.Error(), Path: path})
	case errors.As(err, &refused):
		e := &apiError{Error: refused.Message}
		for _, p := range refused.Problems() {
			e.Details = append(e.Details, detail{Path: string(p.Path), Message: p.Message})
		}
		if len(e.Details) > 0 {
			e.Path = e.Details[0].Path
		}
		writeError(w, http.StatusUnprocessableEntity, e)
	case errors.Is(err, llm.ErrNotRecorded):
		writeError(w, http.StatusUnprocessableEntity, &apiError{Error: durable.ErrorText(err)})
	case diskspace.Is(err):
		// The engine's disk is full: the operator's to fix, and said as
		// such, not as a timeout or an empty list.
		s.opts.Logger.Error("api: request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		writeError(w, http.StatusInsufficientStorage, &apiError{Error: err.Error()})
	default:
		status := engineStatus(err)
		switch {
		case r.Context().Err() != nil:
			// The client left; nobody reads the answer.
			s.opts.Logger.Info("api: the client left", "method", r.Method, "path", r.URL.Path, "err", err)
		case status >= 500:
			s.opts.Logger.Error("api: request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		}
		if status == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "1")
		}
		// An engine's error says its cause once, without Temporal's
		// envelopes (durable.ErrorText).
		writeError(w, status, &apiError{Error: durable.ErrorText(err)})
	}
}

// engineStatus maps an error of the engine (a gRPC status) to HTTP: those
// the request caused are 4xx, those that may pass 503, the rest 500.
func engineStatus(err error) int {
	var (
		invalid   *serviceerror.InvalidArgument
		notFound  *serviceerror.NotFound
		exists    *serviceerror.AlreadyExists
		started   *serviceerror.WorkflowExecutionAlreadyStarted
		failedPre *serviceerror.FailedPrecondition
		exhausted *serviceerror.ResourceExhausted
		canceled  *serviceerror.Canceled
		deadline  *serviceerror.DeadlineExceeded
		unavail   *serviceerror.Unavailable
	)
	switch {
	case errors.As(err, &invalid):
		// The engine's check of a payload's size (limit.blobSize.error).
		if strings.Contains(invalid.Message, "size exceeds limit") {
			return http.StatusRequestEntityTooLarge
		}
		return http.StatusBadRequest
	case errors.As(err, &notFound):
		return http.StatusNotFound
	case errors.As(err, &exists), errors.As(err, &started), errors.As(err, &failedPre):
		return http.StatusConflict
	case errors.As(err, &exhausted):
		// gRPC's own limit on a message, as against a rate or a busy engine.
		if strings.Contains(exhausted.Message, "larger than max") {
			return http.StatusRequestEntityTooLarge
		}
		return http.StatusServiceUnavailable
	case errors.As(err, &canceled), errors.As(err, &deadline), errors.As(err, &unavail),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// muxErrors gives the mux's own answers — no such endpoint (404), a method
// the path does not take (405, with its Allow header) — the API's JSON
// error shape instead of text.
type muxErrors struct {
	http.ResponseWriter
	r     *http.Request
	wrote bool
}

func (w *muxErrors) WriteHeader(code int) {
	if w.wrote {
		return
	}
	w.wrote = true
	msg := fmt.Sprintf("no such endpoint: %s %s", w.r.Method, w.r.URL.Path)
	if code == http.StatusMethodNotAllowed {
		msg = fmt.Sprintf("%s does not take %s (only %s)", w.r.URL.Path, w.r.Method, w.Header().Get("Allow"))
	}
	w.Header().Del("X-Content-Type-Options")
	writeError(w.ResponseWriter, code, &apiError{Error: msg})
}

// Write drops the mux's text.
func (w *muxErrors) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusInternalServerError)
	return len(b), nil
}
