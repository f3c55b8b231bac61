package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/registry"
)

// Batches is what the API serves of batches: batch.Runner implements it.
type Batches interface {
	// Start takes a batch's input (JSONL) and runs it in the background;
	// created is false when the id names a batch given before. A batch
	// whose process its run would refuse (one that does not compile) is
	// refused with that error, and nothing is kept of it.
	Start(ctx context.Context, opts batch.Options, in io.Reader) (id string, created bool, err error)
	Status(ctx context.Context, id string) (*batch.Status, error)
	List(ctx context.Context, opts process.ListOptions) ([]batch.Status, string, error)
	Results(ctx context.Context, id string, opts batch.ResultsOptions, emit func(batch.Result) error) error
}

// BatchCanceler is what a Batches may also do: cancel a batch
// (batch.Runner does). The API serves POST /v1/batches/{id}/cancel when
// it can.
type BatchCanceler interface {
	Cancel(ctx context.Context, id string) error
}

// BatchWaiting is what a Batches may also do: name the items of a batch
// that wait for a person (batch.Client.Waiting; an id that names no batch
// is batch.ErrNotFound). The API serves GET
// /v1/batches/{id}/waiting when it can.
type BatchWaiting interface {
	Waiting(ctx context.Context, id string) ([]string, error)
}

// WaitingItems is the answer of GET /v1/batches/{id}/waiting.
type WaitingItems struct {
	// Items are the ids of the batch's items that wait for a person; each
	// is answered as a process is (POST /v1/processes/{id}/answer).
	Items []string `json:"items"`
}

// batchWaiting is GET /v1/batches/{id}/waiting: the ids of the batch's
// items that wait for a person, which are not listed among processes.
func (s *server) batchWaiting(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "batch")
	if !ok {
		return
	}
	bw, ok := s.opts.Batches.(BatchWaiting)
	if !ok {
		writeError(w, http.StatusNotImplemented, &apiError{Error: "this server cannot list a batch's waiting items"})
		return
	}
	ids, err := bw.Waiting(r.Context(), id) // no such batch: 404
	if err != nil {
		s.failed(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, WaitingItems{Items: append([]string{}, ids...)})
}

// cancelBatch cancels a batch and answers with its status.
func (s *server) cancelBatch(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "batch")
	if !ok {
		return
	}
	c, ok := s.opts.Batches.(BatchCanceler)
	if !ok {
		writeError(w, http.StatusNotImplemented, &apiError{Error: "this server cannot cancel batches"})
		return
	}
	if err := c.Cancel(r.Context(), id); err != nil {
		s.failed(w, r, err)
		return
	}
	st, err := s.opts.Batches.Status(r.Context(), id)
	if err != nil {
		s.failed(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// DefaultMaxBatchBody bounds a batch's JSONL body when
// Options.MaxBatchBody is 0: 1 GiB, spooled to disk, not held.
const DefaultMaxBatchBody = 1 << 30

// BatchReadTimeout is how long a batch's JSONL body may take to arrive.
const BatchReadTimeout = time.Hour

// batchParams are the parts of a POST /v1/batches besides its items:
// members of a JSON body, or the query of a JSONL one.
var batchParams = "process, pipeline, system, id, size, concurrency, providerBatch, providerBatchFallback, providerBatchPoll, retryFailed"

// startBatch is POST /v1/batches: a JSONL body (application/x-ndjson or
// application/jsonl) with the batch's parameters in the query, or a JSON
// body {"process", …, "items": [lines]}. The process is compiled before
// the batch is taken (Batches.Start): one that does not compile is 422
// with the located errors, a process URI or fragment that names nothing
// 404, as POST /v1/processes answers; nothing is spooled then.
func (s *server) startBatch(w http.ResponseWriter, r *http.Request) {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	var (
		opts batch.Options
		in   io.Reader
		bad  []detail
	)
	switch mt {
	case "application/x-ndjson", "application/jsonl":
		query, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			writeError(w, http.StatusBadRequest, &apiError{Error: "the query is malformed: " + err.Error()})
			return
		}
		for name, vs := range query {
			bad = append(bad, batchParam(&opts, "?"+name, name, jsonv.StringValue(vs[len(vs)-1]), true)...)
		}
		limit := s.opts.MaxBatchBody
		if limit <= 0 {
			limit = DefaultMaxBatchBody
		}
		in = http.MaxBytesReader(w, r.Body, limit)
		// A large batch takes longer to send than a request may take
		// (vibe.ServeOptions); it still has to arrive within the hour.
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(BatchReadTimeout))
	default:
		body, ok := s.readBody(w, r)
		if !ok {
			return
		}
		if body.Object() == nil {
			writeError(w, http.StatusBadRequest, &apiError{Error: `the request body must be an object: {"process": URI or schema, "items": [lines]}; or send JSONL as application/x-ndjson`})
			return
		}
		var items []jsonv.Value
		for name, v := range body.Members() {
			if name == "items" {
				if v.Kind() != jsonv.KindArray {
					bad = append(bad, detail{Path: "/items", Message: "items must be an array of lines: {\"prompt\", \"input\"} or strings"})
				}
				items = v.Array()
				continue
			}
			bad = append(bad, batchParam(&opts, "/"+name, name, v, false)...)
		}
		in = batch.Items(items)
	}
	if len(bad) == 0 && opts.Process.Pipeline != "" && (opts.Process.Process != "" || opts.Process.Document.Object() != nil) {
		at := "/pipeline"
		if mt == "application/x-ndjson" || mt == "application/jsonl" {
			at = "?pipeline"
		}
		bad = append(bad, detail{Path: at, Message: "give the process the items run as \"process\" or as \"pipeline\", not both"})
	}
	if len(bad) == 0 && opts.Process.Process == "" && opts.Process.Pipeline == "" && opts.Process.Document.Object() == nil {
		bad = append(bad, detail{Path: "/process", Message: "give the process the items run: \"process\" (a registry URI or an inline schema) or \"pipeline\""})
	}
	if len(bad) > 0 {
		writeError(w, http.StatusBadRequest, &apiError{Error: bad[0].Message, Path: bad[0].Path, Details: bad})
		return
	}
	id, created, err := s.opts.Batches.Start(r.Context(), opts, in)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeError(w, http.StatusRequestEntityTooLarge, &apiError{Error: fmt.Sprintf("the batch is larger than %d bytes, the most this server takes in one request", tooLarge.Limit)})
			return
		}
		s.failed(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/batches/"+url.PathEscape(id))
	status := http.StatusAccepted
	if !created {
		status = http.StatusOK
	}
	writeJSON(w, status, map[string]any{"id": id, "created": created})
}

// batchParam sets one parameter of a batch from a JSON member or a query
// parameter (fromQuery: numbers come as strings).
func batchParam(opts *batch.Options, at, name string, v jsonv.Value, fromQuery bool) []detail {
	str := func(dst *string) []detail {
		if v.Kind() != jsonv.KindString {
			return []detail{{Path: at, Message: name + " must be a string"}}
		}
		*dst = v.Str()
		return nil
	}
	num := func(dst *int, max int) []detail {
		n, err := strconv.Atoi(v.Str())
		if !fromQuery {
			n64, ok := v.Int()
			n, err = int(n64), nil
			if !ok {
				err = errors.New("not an integer")
			}
		}
		if err != nil || n < 1 || n > max {
			return []detail{{Path: at, Message: fmt.Sprintf("%s must be a whole number from 1 to %d", name, max)}}
		}
		*dst = n
		return nil
	}
	switch name {
	case "process":
		if v.Kind() == jsonv.KindObject && !fromQuery {
			opts.Process.Document, opts.Process.File = v, "process"
			return nil
		}
		if d := str(&opts.Process.Process); d != nil {
			return []detail{{Path: at, Message: "process must be a registry URI or an inline process schema"}}
		}
		if _, err := registry.ParseURI(opts.Process.Process); err != nil {
			return []detail{{Path: at, Message: err.Error()}}
		}
	case "pipeline":
		return str(&opts.Process.Pipeline)
	case "system":
		return str(&opts.Process.System)
	case "id":
		if d := str(&opts.ID); d != nil {
			return d
		}
		if err := batch.CheckID(opts.ID); err != nil {
			return []detail{{Path: at, Message: err.Error()}}
		}
	case "size":
		return num(&opts.Size, 10_000)
	case "concurrency":
		return num(&opts.Concurrency, 1_000)
	case "audit":
		f, err := strconv.ParseFloat(v.Literal(), 64)
		if fromQuery {
			f, err = strconv.ParseFloat(v.Str(), 64)
		}
		if err != nil || f < 0 || f > 1 {
			return []detail{{Path: at, Message: "audit must be the share of items asked alone too, from 0 to 1"}}
		}
		opts.Audit = f
	case "providerBatch", "providerBatchFallback", "retryFailed":
		on := v.Kind() == jsonv.KindBool && v.Bool()
		switch {
		case fromQuery && (v.Str() == "true" || v.Str() == "false"):
			on = v.Str() == "true"
		case fromQuery || v.Kind() != jsonv.KindBool:
			return []detail{{Path: at, Message: name + " must be true or false"}}
		}
		switch name {
		case "providerBatch":
			opts.Call.ProviderBatch = on
		case "providerBatchFallback":
			opts.Call.ProviderFallback = on
		default:
			opts.RetryFailed = on
		}
	case "providerBatchPoll":
		d, err := time.ParseDuration(v.Str())
		if v.Kind() != jsonv.KindString && !fromQuery || err != nil || d <= 0 {
			return []detail{{Path: at, Message: name + ` must be a duration such as "30s" or "5m"`}}
		}
		opts.Call.ProviderPoll = d
	default:
		return []detail{{Path: at, Message: fmt.Sprintf("unknown field %q (want %s, items)", name, batchParams)}}
	}
	return nil
}

// batchPage is the answer of GET /v1/batches.
type batchPage struct {
	Batches []batch.Status `json:"batches"`
	Next    *string        `json:"next"`
}

func (s *server) listBatches(w http.ResponseWriter, r *http.Request) {
	servePage(s, w, r, false, s.opts.Batches.List, func(items []batch.Status, next *string) any { return batchPage{Batches: items, Next: next} })
}

func (s *server) getBatch(w http.ResponseWriter, r *http.Request) {
	serveGet(s, w, r, "batch", s.opts.Batches.Status)
}

// batchResults is GET /v1/batches/{id}/results: the result lines as they
// come, in input order (application/x-ndjson); ?after=N starts after line
// N. The stream ends with the batch, or when the client leaves.
func (s *server) batchResults(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "batch")
	if !ok {
		return
	}
	var opts batch.ResultsOptions
	for name, vs := range r.URL.Query() {
		n, err := strconv.Atoi(vs[0])
		if name != "after" || err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, &apiError{Error: fmt.Sprintf("parameter %q: want after=N, the last line already read", name)})
			return
		}
		opts.After = n
	}
	if _, err := s.opts.Batches.Status(r.Context(), id); err != nil {
		s.failed(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	// The stream lasts as long as the batch: no write deadline.
	_ = rc.SetWriteDeadline(time.Time{})
	enc := json.NewEncoder(w)
	err := s.opts.Batches.Results(r.Context(), id, opts, func(res batch.Result) error {
		if err := enc.Encode(res); err != nil {
			return err
		}
		return rc.Flush()
	})
	if err != nil && r.Context().Err() == nil {
		s.opts.Logger.Error("api: batch results", "id", id, "err", err)
	}
}
