package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/replay"
)

// Replays is what the API serves of replays: replay.Service implements
// it.
type Replays interface {
	Replay(ctx context.Context, req replay.Request) (*replay.Report, error)
}

// startReplay is POST /v1/replays: recorded work replayed against a
// changed process (process: a registry URI or an inline schema, or
// pipeline), with no effects; it answers with the report, an item
// per recorded item and the summary.
func (s *server) startReplay(w http.ResponseWriter, r *http.Request) {
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	if body.Object() == nil {
		writeError(w, http.StatusBadRequest, &apiError{Error: "the request body must be a JSON object: the recorded work (ids, from, status, since) and the changed process (process, document or pipeline)", Path: ""})
		return
	}
	// "process" is a registry URI or an inline schema, as POST
	// /v1/processes takes it.
	var doc, was jsonv.Value
	if p, ok := body.Get("process"); ok && p.Object() != nil {
		doc = p
		body = body.Clone()
		body.Object().Delete("process")
	}
	// So is "baselineProcess", the process as it was recorded.
	if p, ok := body.Get("baselineProcess"); ok && p.Object() != nil {
		was = p
		body = body.Clone()
		body.Object().Delete("baselineProcess")
	}
	var req replay.Request
	if err := json.Unmarshal(jsonv.Marshal(body), &req); err != nil {
		writeError(w, http.StatusBadRequest, &apiError{Error: "the request does not fit a replay: " + err.Error()})
		return
	}
	if !doc.IsNull() {
		req.Document = doc
	}
	if !was.IsNull() {
		req.BaselineDocument = was
	}
	rep, err := s.opts.Replays.Replay(r.Context(), req)
	var bad *replay.BadRequestError
	switch {
	case errors.As(err, &bad):
		writeError(w, http.StatusBadRequest, &apiError{Error: bad.Message, Path: bad.Path})
	case err != nil:
		s.failed(w, r, err)
	default:
		writeJSON(w, http.StatusOK, rep)
	}
}
