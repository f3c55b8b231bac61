package api

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/request"
	"github.com/augceo/vibe/schema"
)

// Requests is what the API serves of Vessel requests: request.Client
// implements it, and so does the client of a server's
// (Client.Requests).
type Requests interface {
	Start(ctx context.Context, opts request.StartOptions) (*request.Started, error)
	Get(ctx context.Context, id string) (*request.Info, error)
	List(ctx context.Context, opts request.ListOptions) (request.Page, error)
}

// The names an inline request's parts go by in errors: the member of the
// body each came in, each problem at its path within it. The decision's is
// vessel.NewRequest's own.
const (
	vesselFile  = "vessel"
	contextFile = "context"
)

// startRequest is POST /v1/requests: a Vessel request, decided by the
// model (or by the decision it brings, or by a plan in its context).
func (s *server) startRequest(w http.ResponseWriter, r *http.Request) {
	s.startVessel(w, r, false)
}

// startPlan is POST /v1/plans: a request whose context holds a plan,
// checked before anything runs.
func (s *server) startPlan(w http.ResponseWriter, r *http.Request) {
	s.startVessel(w, r, true)
}

func (s *server) startVessel(w http.ResponseWriter, r *http.Request, plan bool) {
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	want := "vessel, prompt, context, decision, delegateDepth, delegateFanOut"
	shape := `{"vessel": URI or Vessel, "prompt": "…", "context": [messages], "decision": {"calls": […]}}`
	if plan {
		want = "vessel, context, delegateDepth, delegateFanOut"
		shape = `{"vessel": URI or Vessel, "context": [messages, one of them a plan]}`
	}
	if body.Object() == nil {
		writeError(w, http.StatusBadRequest, &apiError{Error: "the request body must be an object: " + shape})
		return
	}
	opts := request.StartOptions{File: vesselFile, ContextFile: contextFile, Plan: plan}
	var bad []detail
	for name, v := range body.Members() {
		at := "/" + name
		switch {
		case name == "vessel":
			switch v.Kind() {
			case jsonv.KindString:
				opts.Vessel = v.Str()
				if _, err := registry.ParseURI(opts.Vessel); err != nil {
					bad = append(bad, detail{Path: at, Message: err.Error()})
				}
			case jsonv.KindObject:
				opts.Document = v
			default:
				bad = append(bad, detail{Path: at, Message: "vessel must be a registry URI or an inline Vessel"})
			}
		case name == "prompt" && !plan:
			if v.Kind() != jsonv.KindString {
				bad = append(bad, detail{Path: at, Message: "prompt must be a string"})
			}
			opts.Prompt = v.Str()
		case name == "context":
			if v.Kind() != jsonv.KindArray {
				bad = append(bad, detail{Path: at, Message: "context must be an array of messages"})
			}
			opts.Context = v
		case name == "decision" && !plan:
			if v.Kind() != jsonv.KindObject {
				bad = append(bad, detail{Path: at, Message: `decision must be an object {"calls": […]}`})
			}
			opts.Decision = v
		case name == "delegateDepth", name == "delegateFanOut":
			n, ok := v.Int()
			if !ok || n < 1 || n > 1<<20 {
				bad = append(bad, detail{Path: at, Message: name + " must be a positive integer"})
			}
			if name == "delegateDepth" {
				opts.MaxDepth = int(n)
			} else {
				opts.MaxFanOut = int(n)
			}
		default:
			bad = append(bad, detail{Path: at, Message: fmt.Sprintf("unknown field %q (want %s)", name, want)})
		}
	}
	if len(bad) > 0 {
		writeError(w, http.StatusBadRequest, &apiError{Error: bad[0].Message, Path: bad[0].Path, Details: bad})
		return
	}
	if opts.Vessel == "" && opts.Document.IsNull() {
		writeError(w, http.StatusBadRequest, &apiError{Error: `give the Vessel: "vessel" (a registry URI or an inline Vessel)`, Path: "/vessel"})
		return
	}
	started, err := s.opts.Requests.Start(r.Context(), opts)
	if err != nil {
		s.failed(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"id": started.ID, "vessel": started.Vessel})
}

// requestPage is the answer of GET /v1/requests.
type requestPage struct {
	Requests []request.Summary `json:"requests"`
	Next     *string           `json:"next"` // null on the last page
}

func (s *server) listRequests(w http.ResponseWriter, r *http.Request) {
	servePage(s, w, r, false, func(ctx context.Context, opts request.ListOptions) ([]request.Summary, string, error) {
		page, err := s.opts.Requests.List(ctx, opts)
		return page.Requests, page.Next, err
	}, func(items []request.Summary, next *string) any { return requestPage{Requests: items, Next: next} })
}

func (s *server) getRequest(w http.ResponseWriter, r *http.Request) {
	serveGet(s, w, r, "request", s.opts.Requests.Get)
}

// Requests returns a client of the server's Vessel requests: it implements
// Requests, and gives back package request's typed errors.
func (c *Client) Requests() *RequestClient { return &RequestClient{c: c} }

// RequestClient starts, reads and lists a server's Vessel requests
// (Client.Requests).
type RequestClient struct{ c *Client }

// Start starts a request (POST /v1/requests), or a plan (POST /v1/plans)
// when opts.Plan is set. The server builds the toolset with its own
// registry, actions and loader, so a Vessel goes by its URI or its
// document, never as a built toolset. The problems of the inline Vessel and
// the context come back named as opts names them (File, ContextFile at
// ContextAt).
func (rc *RequestClient) Start(ctx context.Context, opts request.StartOptions) (*request.Started, error) {
	body := jsonv.NewObject(6)
	switch {
	case opts.Toolset != nil:
		return nil, errors.New("a server builds the toolset with its own registry and actions: send the Vessel's URI or its document, not a toolset")
	case opts.Vessel != "":
		body.Set("vessel", jsonv.StringValue(opts.Vessel))
	case !opts.Document.IsNull():
		body.Set("vessel", opts.Document)
	}
	path := "/v1/requests"
	if opts.Plan {
		path = "/v1/plans"
		if opts.Prompt != "" || !opts.Decision.IsNull() {
			return nil, errors.New("a plan brings its calls: it takes no prompt and no decision")
		}
	}
	if opts.Prompt != "" {
		body.Set("prompt", jsonv.StringValue(opts.Prompt))
	}
	if !opts.Context.IsNull() {
		body.Set("context", opts.Context)
	}
	if !opts.Decision.IsNull() {
		body.Set("decision", opts.Decision)
	}
	if opts.MaxDepth > 0 {
		body.Set("delegateDepth", jsonv.IntValue(int64(opts.MaxDepth)))
	}
	if opts.MaxFanOut > 0 {
		body.Set("delegateFanOut", jsonv.IntValue(int64(opts.MaxFanOut)))
	}
	var out struct {
		ID     string `json:"id"`
		Vessel string `json:"vessel"`
	}
	if err := rc.c.do(ctx, http.MethodPost, path, jsonv.Marshal(body.Value()), &out, registry.ErrNotFound); err != nil {
		return nil, renamed(err, opts)
	}
	return &request.Started{ID: out.ID, Vessel: out.Vessel}, nil
}

// renamed gives the problems the server found in the inline Vessel and the
// context — named by the body's members — the names opts gives them.
func renamed(err error, opts request.StartOptions) error {
	var list schema.ErrorList
	if !errors.As(err, &list) {
		return err
	}
	out := make(schema.ErrorList, len(list))
	for i, e := range list {
		moved := *e
		switch e.File {
		case vesselFile:
			moved.File = cmp.Or(opts.File, vesselFile)
		case contextFile:
			moved.File, moved.Path = cmp.Or(opts.ContextFile, contextFile), opts.ContextAt+e.Path
		}
		out[i] = &moved
	}
	return out
}

// Get returns a request as far as it has run (GET /v1/requests/{id}); an
// unknown id gives an error that wraps request.ErrNotFound.
func (rc *RequestClient) Get(ctx context.Context, id string) (*request.Info, error) {
	var info request.Info
	if err := rc.c.do(ctx, http.MethodGet, "/v1/requests/"+url.PathEscape(id), nil, &info, request.ErrNotFound); err != nil {
		return nil, err
	}
	return &info, nil
}

// Watch follows a request until it has completed or failed, reading it
// with Get: see request.Watch.
func (rc *RequestClient) Watch(ctx context.Context, id string, opts request.WatchOptions) iter.Seq2[*request.Info, error] {
	return request.Watch(ctx, rc.Get, id, opts)
}

// List returns a page of requests, newest first (GET /v1/requests).
func (rc *RequestClient) List(ctx context.Context, opts request.ListOptions) (request.Page, error) {
	var out requestPage
	if err := rc.c.do(ctx, http.MethodGet, listPath("/v1/requests", opts), nil, &out, request.ErrNotFound); err != nil {
		return request.Page{}, err
	}
	page := request.Page{Requests: out.Requests}
	if out.Next != nil {
		page.Next = *out.Next
	}
	return page, nil
}
