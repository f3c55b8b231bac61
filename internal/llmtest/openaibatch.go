package llmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// openAIEndpoints are the endpoints OpenAI's Batch API takes.
var openAIEndpoints = []string{"/v1/responses", "/v1/chat/completions", "/v1/embeddings", "/v1/completions", "/v1/moderations"}

// openAIMaxRequests is the most requests of one OpenAI batch.
const openAIMaxRequests = 50_000

// route sends a request to the Batch API's files and batches, or else
// (any other path, as before there was a Batch API) to the chat model.
// The paths are those under the base URL, with or without "/v1".
func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	p := strings.TrimPrefix(r.URL.Path, "/v1")
	parts := strings.Split(strings.Trim(p, "/"), "/")
	b := s.Batches
	switch {
	case p == "/files" && r.Method == http.MethodPost:
		b.upload(w, r)
	case p == "/files" && r.Method == http.MethodGet:
		b.listFiles(w, r)
	case len(parts) == 2 && parts[0] == "files" && r.Method == http.MethodGet:
		b.getFile(w, parts[1])
	case len(parts) == 3 && parts[0] == "files" && parts[2] == "content" && r.Method == http.MethodGet:
		b.fileContent(w, parts[1])
	case p == "/batches" && r.Method == http.MethodPost:
		b.createOpenAI(w, r)
	case p == "/batches" && r.Method == http.MethodGet:
		b.listOpenAI(w, r)
	case len(parts) == 2 && parts[0] == "batches" && r.Method == http.MethodGet:
		b.getOpenAI(w, parts[1])
	case len(parts) == 3 && parts[0] == "batches" && parts[2] == "cancel" && r.Method == http.MethodPost:
		b.cancelOpenAI(w, parts[1])
	default:
		s.serve(w, r, s.completion)
	}
}

// openAIError answers with OpenAI's error body.
func openAIError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":{"message":%q,"type":"invalid_request_error","param":null,"code":null}}`, msg)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// upload takes a multipart upload of a file (POST /files).
func (b *Batches) upload(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseMultipartForm(32 << 20); err != nil {
		openAIError(w, http.StatusBadRequest, "not a multipart form: "+err.Error())
		return
	}
	purpose := r.FormValue("purpose")
	if purpose == "" {
		openAIError(w, http.StatusBadRequest, "missing required parameter: 'purpose'")
		return
	}
	f, hdr, err := r.FormFile("file")
	if err != nil {
		openAIError(w, http.StatusBadRequest, "missing required parameter: 'file'")
		return
	}
	defer f.Close()
	contents, err := io.ReadAll(f)
	if err != nil {
		openAIError(w, http.StatusBadRequest, "read the file: "+err.Error())
		return
	}
	if purpose == "batch" && !strings.HasSuffix(hdr.Filename, ".jsonl") {
		openAIError(w, http.StatusBadRequest, "a batch's file must be a .jsonl file")
		return
	}
	b.mu.Lock()
	fl := &file{id: b.nextID("file-"), name: hdr.Filename, purpose: purpose, created: time.Now(), contents: contents}
	b.files = append(b.files, fl)
	b.fileByID[fl.id] = fl
	b.uploads++
	out := fl.json()
	b.mu.Unlock()
	b.event(Event{Kind: EventUpload, ID: fl.id})
	writeJSON(w, out)
}

func (f *file) json() map[string]any {
	return map[string]any{"id": f.id, "object": "file", "bytes": len(f.contents), "created_at": f.created.Unix(),
		"filename": f.name, "purpose": f.purpose, "status": "processed"}
}

// listFiles lists the files (GET /files), by purpose, newest first unless
// order=asc, paged by after and limit.
func (b *Batches) listFiles(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	b.mu.Lock()
	var all []*file
	for _, f := range b.files {
		if p := q.Get("purpose"); p == "" || f.purpose == p {
			all = append(all, f)
		}
	}
	if q.Get("order") != "asc" {
		slices.Reverse(all)
	}
	page, more := pageOf(all, q.Get("after"), limit(q.Get("limit"), 10000), func(f *file) string { return f.id })
	data := make([]any, len(page))
	for i, f := range page {
		data[i] = f.json()
	}
	b.mu.Unlock()
	writeJSON(w, map[string]any{"object": "list", "data": data, "has_more": more})
}

// pageOf is the page of all after the item with id after, at most n long,
// and whether more follow.
func pageOf[T any](all []T, after string, n int, id func(T) string) ([]T, bool) {
	if after != "" {
		i := slices.IndexFunc(all, func(t T) bool { return id(t) == after })
		all = all[i+1:] // not found: -1 + 1, the whole list
	}
	if len(all) > n {
		return all[:n], true
	}
	return all, false
}

func limit(s string, def int) int {
	if n, err := strconv.Atoi(s); err == nil && n > 0 {
		return n
	}
	return def
}

// getFile answers a file's object (GET /files/{id}).
func (b *Batches) getFile(w http.ResponseWriter, id string) {
	b.mu.Lock()
	f := b.fileByID[id]
	b.mu.Unlock()
	if f == nil {
		openAIError(w, http.StatusNotFound, "No such File object: "+id)
		return
	}
	writeJSON(w, f.json())
}

// fileContent answers a file's contents (GET /files/{id}/content).
func (b *Batches) fileContent(w http.ResponseWriter, id string) {
	b.mu.Lock()
	f := b.fileByID[id]
	result := f != nil && f.purpose == "batch_output"
	if result {
		b.reads++
	}
	b.mu.Unlock()
	if f == nil {
		openAIError(w, http.StatusNotFound, "No such File object: "+id)
		return
	}
	if result {
		b.event(Event{Kind: EventResults, ID: f.batch})
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Write(f.contents)
}

// createOpenAI creates a batch (POST /batches) over an uploaded request
// file; the file's lines are checked at the batch's first step, as OpenAI
// does while it is "validating".
func (b *Batches) createOpenAI(w http.ResponseWriter, r *http.Request) {
	var req struct {
		InputFileID      string            `json:"input_file_id"`
		Endpoint         string            `json:"endpoint"`
		CompletionWindow string            `json:"completion_window"`
		Metadata         map[string]string `json:"metadata"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		openAIError(w, http.StatusBadRequest, "the body is not JSON: "+err.Error())
		return
	}
	switch {
	case !slices.Contains(openAIEndpoints, req.Endpoint):
		openAIError(w, http.StatusBadRequest, fmt.Sprintf("invalid endpoint %q", req.Endpoint))
		return
	case req.CompletionWindow != "24h":
		openAIError(w, http.StatusBadRequest, fmt.Sprintf("invalid completion_window %q: only 24h is supported", req.CompletionWindow))
		return
	case len(req.Metadata) > 16:
		openAIError(w, http.StatusBadRequest, "metadata holds at most 16 pairs")
		return
	}
	b.mu.Lock()
	f := b.fileByID[req.InputFileID]
	if f == nil || f.purpose != "batch" {
		b.mu.Unlock()
		openAIError(w, http.StatusBadRequest, fmt.Sprintf("input_file_id %q is no file of purpose batch", req.InputFileID))
		return
	}
	bt := &batch{endpoint: req.Endpoint, inputFile: f.id, metadata: req.Metadata, requests: requestLines(f.contents)}
	b.add(bt)
	out := b.openAIJSON(bt)
	b.mu.Unlock()
	b.event(Event{Kind: EventBatch, ID: bt.id})
	writeJSON(w, out)
}

// requestLines reads a request file's lines as well as they read; validate
// says what is wrong with them.
func requestLines(contents []byte) []batchRequest {
	var out []batchRequest
	for i, line := range bytes.Split(contents, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var l struct {
			CustomID string          `json:"custom_id"`
			Method   string          `json:"method"`
			URL      string          `json:"url"`
			Body     json.RawMessage `json:"body"`
		}
		json.Unmarshal(line, &l)
		out = append(out, batchRequest{line: i + 1, customID: l.CustomID, method: l.Method, url: l.URL, body: l.Body})
	}
	return out
}

// validate checks an OpenAI batch's request file as OpenAI does: each
// line JSON with a custom_id unique in the file, the method POST, the url
// the batch's endpoint, a body with the model, one model for all, at most
// 50,000 requests.
func validate(bt *batch) []lineError {
	var errs []lineError
	if len(bt.requests) == 0 {
		return []lineError{{Code: "empty_file", Message: "The batch input file is empty."}}
	}
	if len(bt.requests) > openAIMaxRequests {
		errs = append(errs, lineError{Code: "too_many_requests", Message: fmt.Sprintf("The batch input file has %d requests, over the limit of %d.", len(bt.requests), openAIMaxRequests)})
	}
	seen := map[string]bool{}
	model := ""
	for _, r := range bt.requests {
		var body struct {
			Model string `json:"model"`
		}
		switch {
		case r.customID == "":
			errs = append(errs, lineError{Code: "missing_required_parameter", Line: r.line, Message: "Missing required parameter: 'custom_id'."})
		case seen[r.customID]:
			errs = append(errs, lineError{Code: "duplicate_custom_id", Line: r.line, Message: fmt.Sprintf("The custom_id %q is used more than once in this batch.", r.customID)})
		case r.method != "POST":
			errs = append(errs, lineError{Code: "invalid_value", Line: r.line, Message: fmt.Sprintf("Invalid method %q: only POST is supported.", r.method)})
		case r.url != bt.endpoint:
			errs = append(errs, lineError{Code: "mismatched_endpoint", Line: r.line, Message: fmt.Sprintf("The url %q does not match the batch's endpoint %q.", r.url, bt.endpoint)})
		case json.Unmarshal(r.body, &body) != nil || body.Model == "":
			errs = append(errs, lineError{Code: "invalid_request", Line: r.line, Message: "The request body is no JSON object with a model."})
		case model != "" && body.Model != model:
			errs = append(errs, lineError{Code: "mismatched_model", Line: r.line, Message: "All requests of a batch must use the same model."})
		}
		seen[r.customID] = true
		if model == "" {
			model = body.Model
		}
	}
	return errs
}

// listOpenAI lists the batches (GET /batches), newest first, paged by
// after and limit.
func (b *Batches) listOpenAI(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	b.mu.Lock()
	all := slices.Clone(b.batches)
	slices.Reverse(all)
	page, more := pageOf(all, q.Get("after"), min(limit(q.Get("limit"), 20), 100), func(bt *batch) string { return bt.id })
	data := make([]any, len(page))
	for i, bt := range page {
		data[i] = b.openAIJSON(bt)
	}
	b.mu.Unlock()
	out := map[string]any{"object": "list", "data": data, "has_more": more}
	if len(page) > 0 {
		out["first_id"], out["last_id"] = page[0].id, page[len(page)-1].id
	}
	writeJSON(w, out)
}

// getOpenAI answers a batch (GET /batches/{id}): a poll, which moves it.
func (b *Batches) getOpenAI(w http.ResponseWriter, id string) {
	b.mu.Lock()
	bt := b.byID[id]
	if bt == nil {
		b.mu.Unlock()
		openAIError(w, http.StatusNotFound, "No such Batch object: "+id)
		return
	}
	b.poll(bt)
	out := b.openAIJSON(bt)
	b.mu.Unlock()
	b.event(Event{Kind: EventPoll, ID: id})
	writeJSON(w, out)
}

// cancelOpenAI cancels a batch (POST /batches/{id}/cancel).
func (b *Batches) cancelOpenAI(w http.ResponseWriter, id string) {
	b.mu.Lock()
	bt := b.byID[id]
	if bt == nil {
		b.mu.Unlock()
		openAIError(w, http.StatusNotFound, "No such Batch object: "+id)
		return
	}
	ok := b.cancel(bt)
	out := b.openAIJSON(bt)
	status := b.status(bt)
	b.mu.Unlock()
	b.event(Event{Kind: EventCancel, ID: id})
	if !ok {
		openAIError(w, http.StatusConflict, fmt.Sprintf("Cannot cancel a batch with status '%s'.", status))
		return
	}
	writeJSON(w, out)
}

// openAIJSON is bt as OpenAI's batch object; b.mu is held.
func (b *Batches) openAIJSON(bt *batch) map[string]any {
	succeeded, errored, expired, canceled, _ := bt.counts()
	out := map[string]any{
		"id": bt.id, "object": "batch", "endpoint": bt.endpoint, "input_file_id": bt.inputFile,
		"completion_window": "24h", "status": b.status(bt), "created_at": bt.created.Unix(),
		"expires_at": bt.created.Add(24 * time.Hour).Unix(), "metadata": bt.metadata,
		"request_counts": map[string]int{"total": len(bt.requests), "completed": succeeded, "failed": errored + expired + canceled},
	}
	if bt.output != "" {
		out["output_file_id"] = bt.output
	}
	if bt.errorFile != "" {
		out["error_file_id"] = bt.errorFile
	}
	if len(bt.errors) > 0 {
		out["errors"] = map[string]any{"object": "list", "data": bt.errors}
	}
	if !bt.cancelAt.IsZero() {
		out["cancelling_at"] = bt.cancelAt.Unix()
	}
	if bt.phase == done {
		out[bt.end+"_at"] = bt.endedAt.Unix()
	}
	return out
}

// writeFiles makes an ended OpenAI batch's output file (its answers of
// status 200) and error file (the rest); b.mu is held.
func (b *Batches) writeFiles(bt *batch) {
	var output, errs bytes.Buffer
	for _, r := range bt.requests {
		o, ok := bt.outcomes[r.customID]
		if !ok {
			continue
		}
		line := map[string]any{"id": b.nextID("batch_req_"), "custom_id": r.customID, "response": nil, "error": nil}
		switch o.kind {
		case "succeeded", "errored":
			line["response"] = map[string]any{"status_code": o.status, "request_id": b.nextID("req_"), "body": json.RawMessage(o.body)}
		case "expired":
			line["error"] = map[string]string{"code": "batch_expired", "message": "This request could not be executed before the completion window expired."}
		case "canceled":
			line["error"] = map[string]string{"code": "batch_cancelled", "message": "This request was not executed because the batch was cancelled."}
		}
		buf := &errs
		if o.kind == "succeeded" && o.status == http.StatusOK {
			buf = &output
		}
		enc := json.NewEncoder(buf)
		enc.SetEscapeHTML(false)
		enc.Encode(line)
	}
	for _, f := range []struct {
		buf  *bytes.Buffer
		name string
		id   *string
	}{{&output, "output", &bt.output}, {&errs, "error", &bt.errorFile}} {
		if f.buf.Len() == 0 {
			continue
		}
		fl := &file{id: b.nextID("file-"), name: bt.id + "_" + f.name + ".jsonl", purpose: "batch_output", created: time.Now(), contents: f.buf.Bytes(), batch: bt.id}
		b.files = append(b.files, fl)
		b.fileByID[fl.id] = fl
		*f.id = fl.id
	}
}
