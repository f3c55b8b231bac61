package llmtest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// Anthropic is a test model that speaks Anthropic's Messages API: it
// answers each message request with a call of the request's tool whose
// input is what its answer func gives for the tool's name (the schema's
// name, as Vibe sends it) and the request's body, and keeps every
// request. It also offers Message Batches, whose requests the same answer
// func answers; Batches controls them. The paths are those under the base
// URL, with or without "/v1".
type Anthropic struct {
	*httptest.Server
	*model
	// Batches is the server's Message Batches: their clock, faults and
	// counts.
	Batches *Batches
}

// NewAnthropic starts an Anthropic test model with opts; it is closed when
// the test ends. Options.Cached and Options.CacheWrite are the shares of
// each prompt it reports read from and written to its prompt cache.
func NewAnthropic(t testing.TB, answer func(name, body string) string, opts Options) *Anthropic {
	s := &Anthropic{model: newModel(answer, opts)}
	s.fail = func(w http.ResponseWriter, status int, msg string) {
		kind := "invalid_request_error"
		if status == http.StatusTooManyRequests {
			kind = "rate_limit_error"
		}
		anthropicError(w, status, kind, msg)
	}
	s.Batches = newBatches(wireAnthropic, opts.OnEvent, s.batchAnswer)
	s.Server = httptest.NewServer(http.HandlerFunc(s.route))
	t.Cleanup(s.Close)
	return s
}

// route sends a request to Message Batches, or else to the model.
func (s *Anthropic) route(w http.ResponseWriter, r *http.Request) {
	p := strings.TrimPrefix(r.URL.Path, "/v1")
	parts := strings.Split(strings.Trim(p, "/"), "/")
	b := s.Batches
	batches := len(parts) >= 2 && parts[0] == "messages" && parts[1] == "batches"
	switch {
	case batches && len(parts) == 2 && r.Method == http.MethodPost:
		b.createAnthropic(w, r)
	case batches && len(parts) == 2 && r.Method == http.MethodGet:
		b.listAnthropic(w, r)
	case batches && len(parts) == 3 && r.Method == http.MethodGet:
		b.getAnthropic(w, r, parts[2])
	case batches && len(parts) == 4 && parts[3] == "cancel" && r.Method == http.MethodPost:
		b.cancelAnthropic(w, r, parts[2])
	case batches && len(parts) == 4 && parts[3] == "results" && r.Method == http.MethodGet:
		b.resultsAnthropic(w, parts[2])
	case p == "/messages" && r.Method == http.MethodPost:
		s.serve(w, r, s.message)
	default:
		anthropicError(w, http.StatusNotFound, "not_found_error", "no route "+r.Method+" "+r.URL.Path)
	}
}

// batchAnswer is the message that answers a batch request's params: the
// one a direct request with that body gets.
func (s *Anthropic) batchAnswer(body []byte) (int, []byte) {
	out, _ := s.message(body, s.answer(schemaName(body), string(body)))
	return http.StatusOK, out
}

// message is the message that answers a request of body with answer, and
// its prompt tokens: a call of the request's tool with answer as its
// input, or answer as text when there is no tool or answer is no JSON
// object.
func (s *Anthropic) message(body []byte, answer string) ([]byte, int) {
	name := schemaName(body)
	answer, cut := s.cut(answer)
	var content, stop string
	if trimmed := strings.TrimSpace(answer); name != "" && strings.HasPrefix(trimmed, "{") && json.Valid([]byte(trimmed)) {
		n, _ := json.Marshal(name)
		content, stop = fmt.Sprintf(`[{"type":"tool_use","id":"toolu_test","name":%s,"input":%s}]`, n, trimmed), "tool_use"
	} else {
		t, _ := json.Marshal(answer)
		content, stop = fmt.Sprintf(`[{"type":"text","text":%s}]`, t), "end_turn"
	}
	if cut {
		stop = "max_tokens"
	}
	prompt, completion := s.tokens(body, answer)
	cached, written := int(s.opts.Cached*float64(prompt)), int(s.opts.CacheWrite*float64(prompt))
	if s.opts.PrefixCache {
		cached, written = s.cacheAnthropic(body)
	}
	model, _ := json.Marshal(cmp.Or(s.opts.Model, "test-model"))
	return fmt.Appendf(nil, `{"id":"msg_test","type":"message","role":"assistant","model":%s,"content":%s,"stop_reason":%q,"stop_sequence":null,`+
		`"usage":{"input_tokens":%d,"output_tokens":%d,"cache_read_input_tokens":%d,"cache_creation_input_tokens":%d}}`,
		model, content, stop, max(prompt-cached-written, 0), completion, cached, written), prompt
}

// anthropicError answers with Anthropic's error body.
func anthropicError(w http.ResponseWriter, status int, kind, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"type":"error","error":{"type":%q,"message":%q}}`, kind, msg)
}

// anthropicMaxRequests is the most requests of one Message Batch.
const anthropicMaxRequests = 100_000

// customID is what a custom_id must be.
var customID = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// createAnthropic creates a Message Batch (POST /v1/messages/batches). Its
// requests are checked as Anthropic checks them at once: at least one, at
// most 100,000, each custom_id valid and unique, each params an object
// with a model, max_tokens and messages; a batch that breaks that is
// refused with 400.
func (b *Batches) createAnthropic(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var req struct {
		Requests []struct {
			CustomID string          `json:"custom_id"`
			Params   json.RawMessage `json:"params"`
		} `json:"requests"`
	}
	if err := json.Unmarshal(raw, &req); err != nil {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "the body is not JSON: "+err.Error())
		return
	}
	if len(req.Requests) == 0 || len(req.Requests) > anthropicMaxRequests {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("requests: want 1 to %d requests, not %d", anthropicMaxRequests, len(req.Requests)))
		return
	}
	bt := &batch{}
	seen := map[string]bool{}
	for i, rq := range req.Requests {
		var params struct {
			Model     string            `json:"model"`
			MaxTokens *int              `json:"max_tokens"`
			Messages  []json.RawMessage `json:"messages"`
		}
		msg := ""
		switch {
		case !customID.MatchString(rq.CustomID):
			msg = fmt.Sprintf("requests.%d.custom_id: %q does not match ^[a-zA-Z0-9_-]{1,64}$", i, rq.CustomID)
		case seen[rq.CustomID]:
			msg = fmt.Sprintf("requests.%d.custom_id: %q is not unique in the batch", i, rq.CustomID)
		case json.Unmarshal(rq.Params, &params) != nil || params.Model == "" || params.MaxTokens == nil || len(params.Messages) == 0:
			msg = fmt.Sprintf("requests.%d.params: want an object with model, max_tokens and messages", i)
		}
		if msg != "" {
			anthropicError(w, http.StatusBadRequest, "invalid_request_error", msg)
			return
		}
		seen[rq.CustomID] = true
		bt.requests = append(bt.requests, batchRequest{line: i + 1, customID: rq.CustomID, body: rq.Params})
	}
	b.mu.Lock()
	b.add(bt)
	// The request of a batch is kept as an uploaded file is, for Uploaded.
	b.files = append(b.files, &file{id: b.nextID("file-"), purpose: "batch", created: bt.created, contents: raw, batch: bt.id})
	out := b.anthropicJSON(bt, r)
	b.mu.Unlock()
	b.event(Event{Kind: EventBatch, ID: bt.id})
	writeJSON(w, out)
}

// listAnthropic lists the batches (GET /v1/messages/batches), newest
// first, paged by after_id, before_id and limit.
func (b *Batches) listAnthropic(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	n := min(limit(q.Get("limit"), 20), 1000)
	b.mu.Lock()
	all := slices.Clone(b.batches)
	slices.Reverse(all)
	var page []*batch
	more := false
	if before := q.Get("before_id"); before != "" {
		i := max(slices.IndexFunc(all, func(bt *batch) bool { return bt.id == before }), 0)
		page = all[max(i-n, 0):i]
		more = i-n > 0
	} else {
		page, more = pageOf(all, q.Get("after_id"), n, func(bt *batch) string { return bt.id })
	}
	data := make([]any, len(page))
	for i, bt := range page {
		data[i] = b.anthropicJSON(bt, r)
	}
	b.mu.Unlock()
	out := map[string]any{"data": data, "has_more": more, "first_id": nil, "last_id": nil}
	if len(page) > 0 {
		out["first_id"], out["last_id"] = page[0].id, page[len(page)-1].id
	}
	writeJSON(w, out)
}

// getAnthropic answers a batch (GET /v1/messages/batches/{id}): a poll,
// which moves it.
func (b *Batches) getAnthropic(w http.ResponseWriter, r *http.Request, id string) {
	b.mu.Lock()
	bt := b.byID[id]
	if bt == nil {
		b.mu.Unlock()
		anthropicError(w, http.StatusNotFound, "not_found_error", "no batch "+id)
		return
	}
	b.poll(bt)
	out := b.anthropicJSON(bt, r)
	b.mu.Unlock()
	b.event(Event{Kind: EventPoll, ID: id})
	writeJSON(w, out)
}

// cancelAnthropic cancels a batch (POST /v1/messages/batches/{id}/cancel).
func (b *Batches) cancelAnthropic(w http.ResponseWriter, r *http.Request, id string) {
	b.mu.Lock()
	bt := b.byID[id]
	if bt == nil {
		b.mu.Unlock()
		anthropicError(w, http.StatusNotFound, "not_found_error", "no batch "+id)
		return
	}
	ok := b.cancel(bt)
	out := b.anthropicJSON(bt, r)
	b.mu.Unlock()
	b.event(Event{Kind: EventCancel, ID: id})
	if !ok {
		anthropicError(w, http.StatusConflict, "invalid_request_error", "batch "+id+" has ended and cannot be canceled")
		return
	}
	writeJSON(w, out)
}

// resultsAnthropic answers an ended batch's results as JSONL (GET
// /v1/messages/batches/{id}/results), one line per request in order.
func (b *Batches) resultsAnthropic(w http.ResponseWriter, id string) {
	b.mu.Lock()
	bt := b.byID[id]
	if bt == nil || bt.phase != done {
		b.mu.Unlock()
		if bt == nil {
			anthropicError(w, http.StatusNotFound, "not_found_error", "no batch "+id)
		} else {
			anthropicError(w, http.StatusBadRequest, "invalid_request_error", "batch "+id+" has not ended: its results are not ready")
		}
		return
	}
	b.reads++
	var lines strings.Builder
	for _, r := range bt.requests {
		o, ok := bt.outcomes[r.customID]
		if !ok {
			continue
		}
		var result string
		switch o.kind {
		case "succeeded":
			result = fmt.Sprintf(`{"type":"succeeded","message":%s}`, o.body)
		case "errored":
			result = fmt.Sprintf(`{"type":"errored","error":{"type":"error","error":{"type":"invalid_request_error","message":%q}}}`, o.message)
		default:
			result = fmt.Sprintf(`{"type":%q}`, o.kind)
		}
		fmt.Fprintf(&lines, "{\"custom_id\":%q,\"result\":%s}\n", r.customID, result)
	}
	b.mu.Unlock()
	b.event(Event{Kind: EventResults, ID: id})
	w.Header().Set("Content-Type", "application/x-jsonl")
	io.WriteString(w, lines.String())
}

// anthropicJSON is bt as Anthropic's message batch object; b.mu is held.
func (b *Batches) anthropicJSON(bt *batch, r *http.Request) map[string]any {
	succeeded, errored, expired, canceled, processing := bt.counts()
	stamp := func(t time.Time) any {
		if t.IsZero() {
			return nil
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	out := map[string]any{
		"id": bt.id, "type": "message_batch", "processing_status": b.status(bt),
		"request_counts": map[string]int{"processing": processing, "succeeded": succeeded, "errored": errored, "canceled": canceled, "expired": expired},
		"created_at":     stamp(bt.created), "expires_at": stamp(bt.created.Add(24 * time.Hour)),
		"ended_at": stamp(bt.endedAt), "cancel_initiated_at": stamp(bt.cancelAt), "archived_at": nil, "results_url": nil,
	}
	if bt.phase == done {
		out["results_url"] = "http://" + r.Host + "/v1/messages/batches/" + bt.id + "/results"
	}
	return out
}
