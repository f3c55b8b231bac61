package api

import (
	"context"
	"net/http"
	"net/url"

	"github.com/augceo/vibe/process"
)

// Canceler is what a Processes may also do: cancel a process's workflow
// (process.Client and Client do). The API serves POST
// /v1/processes/{id}/cancel when it can.
type Canceler interface {
	Cancel(ctx context.Context, id string) error
}

// cancel cancels a process and answers with it.
func (s *server) cancel(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "process")
	if !ok {
		return
	}
	c, ok := s.p.(Canceler)
	if !ok {
		writeError(w, http.StatusNotImplemented, &apiError{Error: "this server cannot cancel processes"})
		return
	}
	if err := c.Cancel(r.Context(), id); err != nil {
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

// Cancel cancels a process (POST /v1/processes/{id}/cancel).
func (c *Client) Cancel(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodPost, "/v1/processes/"+url.PathEscape(id)+"/cancel", nil, nil, process.ErrNotFound)
}
