package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/schema"
)

// Client calls a Vibe server's API. It implements Processes.
type Client struct {
	// BaseURL is the server's address, such as http://127.0.0.1:8080.
	BaseURL string
	// Token is sent as "Authorization: Bearer <token>" when set.
	Token string
	// HTTP is the client to use; nil means one with a 60 s timeout.
	HTTP *http.Client
}

// Error is an error answer of the API.
type Error struct {
	Status  int
	Message string
	Path    string
}

func (e *Error) Error() string {
	if e.Path != "" {
		return fmt.Sprintf("server: %d: %s: %s", e.Status, e.Path, e.Message)
	}
	return fmt.Sprintf("server: %d: %s", e.Status, e.Message)
}

// do calls the API; an error answer comes back as the error the server
// had, a 404 wrapping notFound.
func (c *Client) do(ctx context.Context, method, path string, body []byte, out any, notFound error) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(c.BaseURL, "/")+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 60 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		return decodeError(resp.StatusCode, data, notFound)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}

// notWaitingSuffix ends the message of a process.NotWaitingError.
const notWaitingSuffix = " and waits for no answer"

// decodeError turns an error answer back into the error the server had:
// located errors stay located, a refused answer stays a refusal, a 404
// wraps notFound.
func decodeError(status int, data []byte, notFound error) error {
	var e apiError
	if json.Unmarshal(data, &e) != nil || e.Error == "" {
		return &Error{Status: status, Message: strings.TrimSpace(string(data))}
	}
	switch {
	case status == http.StatusNotFound:
		// The server's message starts with the same words ("no such
		// process: X"): say them once.
		if e.Error == notFound.Error() {
			return notFound
		}
		return fmt.Errorf("%w: %s", notFound, strings.TrimPrefix(e.Error, notFound.Error()+": "))
	case status == http.StatusConflict && strings.HasSuffix(e.Error, notWaitingSuffix):
		id, st, ok := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(e.Error, "process "), notWaitingSuffix), " is ")
		if ok {
			return &process.NotWaitingError{ID: id, Status: process.Status(st)}
		}
	case status == http.StatusUnprocessableEntity && (e.Path == "/first" || strings.HasPrefix(e.Path, "/first/")):
		// The chunk's name is in the message, its kind the name's prefix.
		rest, ok := strings.CutPrefix(e.Error, "the first value does not fit chunk ")
		if !ok {
			rest = strings.TrimPrefix(e.Error, "the process's first chunk ")
		}
		fe := &process.FirstError{Chunk: rest}
		if n := strings.IndexAny(rest, " :"); n >= 0 {
			fe.Chunk = rest[:n]
		}
		kind, _, _ := strings.Cut(fe.Chunk, "_")
		fe.Kind = compile.Kind(kind)
		for _, d := range e.Details {
			fe.Problems = append(fe.Problems, schema.Invalid{Path: jsonv.Pointer(strings.TrimPrefix(d.Path, "/first")), Message: d.Message})
		}
		return fe
	case status == http.StatusUnprocessableEntity && len(e.Details) > 0 && e.Details[0].File != "":
		var list schema.ErrorList
		for _, d := range e.Details {
			le := &schema.Error{File: d.File, Path: jsonv.Pointer(d.Path), Message: d.Message}
			if d.Path != "" && d.Path[0] != '/' {
				le.Path = ""
				fmt.Sscanf(d.Path, "%d:%d", &le.Line, &le.Column)
			}
			list = append(list, le)
		}
		return list
	case status == http.StatusUnprocessableEntity && strings.HasPrefix(e.Error, "the answer does not fit"):
		return &process.RefusedError{Message: e.Error}
	}
	return &Error{Status: status, Message: e.Error, Path: e.Path}
}

// Start starts a process.
func (c *Client) Start(ctx context.Context, opts process.StartOptions) (*process.Started, error) {
	body := jsonv.NewObject(7)
	switch {
	case opts.Process != "":
		body.Set("process", jsonv.StringValue(opts.Process))
	case opts.Document.Object() != nil:
		body.Set("process", opts.Document)
	}
	if opts.Pipeline != "" {
		body.Set("pipeline", jsonv.StringValue(opts.Pipeline))
	}
	if opts.Name != "" {
		body.Set("name", jsonv.StringValue(opts.Name))
	}
	if opts.Prompt != "" {
		body.Set("prompt", jsonv.StringValue(opts.Prompt))
	}
	if !opts.Input.IsNull() {
		body.Set("input", opts.Input)
	}
	if !opts.First.IsNull() {
		body.Set("first", opts.First)
	}
	if opts.System != "" {
		body.Set("system", jsonv.StringValue(opts.System))
	}
	var out struct {
		ID      string   `json:"id"`
		Process string   `json:"process"`
		Direct  bool     `json:"direct"`
		Unread  []string `json:"unread"`
	}
	if err := c.do(ctx, http.MethodPost, "/v1/processes", jsonv.Marshal(body.Value()), &out, process.ErrNotFound); err != nil {
		return nil, err
	}
	return &process.Started{ID: out.ID, Name: out.Process, Direct: out.Direct, Unread: out.Unread}, nil
}

// Get returns a process.
func (c *Client) Get(ctx context.Context, id string) (*process.Info, error) {
	var info process.Info
	if err := c.do(ctx, http.MethodGet, "/v1/processes/"+url.PathEscape(id), nil, &info, process.ErrNotFound); err != nil {
		return nil, err
	}
	return &info, nil
}

// Watch follows a process until it has completed or failed, reading it
// with Get: see process.Watch.
func (c *Client) Watch(ctx context.Context, id string, opts process.WatchOptions) iter.Seq2[*process.Info, error] {
	return process.Watch(ctx, c.Get, id, opts)
}

// List returns a page of processes, newest first.
func (c *Client) List(ctx context.Context, opts process.ListOptions) (process.Page, error) {
	var out listPage
	if err := c.do(ctx, http.MethodGet, listPath("/v1/processes", opts), nil, &out, process.ErrNotFound); err != nil {
		return process.Page{}, err
	}
	page := process.Page{Processes: out.Processes}
	if out.Next != nil {
		page.Next = *out.Next
	}
	return page, nil
}

// listPath is the path of a page of the list at path.
func listPath(path string, opts process.ListOptions) string {
	q := url.Values{}
	if opts.Limit != 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	if opts.Cursor != "" {
		q.Set("cursor", opts.Cursor)
	}
	if opts.Status != "" {
		q.Set("status", string(opts.Status))
	}
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	return path
}

// Answer sends a person's answer.
func (c *Client) Answer(ctx context.Context, id string, answer jsonv.Value) (*process.View, error) {
	var info process.Info
	if err := c.do(ctx, http.MethodPost, "/v1/processes/"+url.PathEscape(id)+"/answer", jsonv.Marshal(answer), &info, process.ErrNotFound); err != nil {
		return nil, err
	}
	return &info.View, nil
}
