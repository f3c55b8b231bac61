package llmtest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/augceo/vibe/jsonv"
)

// Server is an OpenAI-compatible test model. It answers each chat request
// with the content its answer func gives for the request's schema name
// (the response_format's json_schema name, which Vibe sets to the step,
// the chunk or "decision"; a forced tool's name when there is none), and
// keeps every request. It also offers OpenAI's Batch API (files and
// batches), whose requests the same answer func answers; Batches controls
// it.
type Server struct {
	*httptest.Server
	*model
	// Batches is the server's Batch API: its clock, faults and counts.
	Batches *Batches
}

// model is what a test server of either wire answers with and counts of
// the requests sent to it directly (not in a batch).
type model struct {
	answer func(name, body string) string
	opts   Options

	slots chan struct{} // a slot per request served at once (MaxConcurrent)
	// fail writes the wire's error answer.
	fail func(w http.ResponseWriter, status int, msg string)

	mu       sync.Mutex
	bodies   []string
	asked    map[string]int
	prompt   int // the prompt tokens answered so far
	inflight int // the requests being answered now
	peak     int // the most at once
	refused  int // the requests answered 429 or 400
	// prompts are the prompts a PrefixCache holds: OpenAI's whole, or
	// Anthropic's prefixes up to a breakpoint.
	prompts []string
}

// New starts a test model; it is closed when the test ends.
func New(t testing.TB, answer func(name string) string) *Server {
	return NewWith(t, func(name, _ string) string { return answer(name) })
}

// NewWith starts a test model whose answer also sees the request's body,
// for tests that tell requests apart by what they carry.
func NewWith(t testing.TB, answer func(name, body string) string) *Server {
	return NewServer(t, answer, Options{})
}

// Options are a test model's ways beyond its answers.
type Options struct {
	// Tokens counts a request's prompt tokens as its body's bytes / 4 and
	// the answer's the same way, instead of a fixed 100 and 30: enough to
	// compare what two ways of asking cost.
	Tokens bool
	// Delay is how long each answer takes.
	Delay time.Duration
	// Block, when set, holds every request until it is closed (or the
	// client gives up).
	Block <-chan struct{}
	// Model is the model the answers name; "" is "test-model".
	Model string
	// MaxConcurrent, when set, is how many requests it serves at once, as
	// a provider's rate of concurrent requests: more wait their turn.
	MaxConcurrent int
	// PerToken is added to Delay for each completion token of the answer
	// (its bytes / 4), as a model takes longer to write more.
	PerToken time.Duration
	// Cached is the share of each prompt's tokens the server reports as
	// read from its prompt cache (usage.prompt_tokens_details.cached_tokens;
	// Anthropic's cache_read_input_tokens).
	Cached float64
	// CacheWrite is the share of each prompt's tokens an Anthropic server
	// reports as written to its prompt cache (cache_creation_input_tokens).
	CacheWrite float64
	// RateLimit, when set, answers 429 with a Retry-After of RetryAfter
	// (default 1s) to a request that arrives while RateLimit others are
	// being answered, as a provider over its rate does.
	RateLimit  int
	RetryAfter time.Duration
	// MaxProperties, when set, refuses with 400 a request whose schema
	// holds more object properties, all levels counted (its $defs
	// included), as a provider's strict structured outputs refuse a
	// grammar too large to compile.
	MaxProperties int
	// MaxOutputTokens, when set, cuts an answer off past that many
	// completion tokens (its bytes / 4), with the finish reason "length"
	// (Anthropic's stop reason "max_tokens").
	MaxOutputTokens int
	// PrefixCache, instead of Cached and CacheWrite, caches prompts as
	// the provider of the server's wire does (cache.go): what a request
	// shares from its start with an earlier one is read from the cache —
	// past 1,024 tokens, in steps of 128, for OpenAI; up to its
	// cache_control breakpoint, once an earlier request wrote that
	// prefix, for Anthropic. Tokens are counted as with Tokens.
	PrefixCache bool
	// OnEvent, when set, is told of each step of a client through the
	// Batch API (an upload, a batch created, polled, cancelled, its
	// results read) once the server has made it and before it answers:
	// a test can kill a client there, or block to hold the answer back.
	OnEvent func(Event)
}

// NewServer starts a test model with opts.
func NewServer(t testing.TB, answer func(name, body string) string, opts Options) *Server {
	s := &Server{model: newModel(answer, opts)}
	s.fail = openAIError
	s.Batches = newBatches(wireOpenAI, opts.OnEvent, s.batchAnswer)
	s.Server = httptest.NewServer(http.HandlerFunc(s.route))
	t.Cleanup(s.Close)
	return s
}

func newModel(answer func(name, body string) string, opts Options) *model {
	m := &model{answer: answer, asked: map[string]int{}, opts: opts}
	if opts.MaxConcurrent > 0 {
		m.slots = make(chan struct{}, opts.MaxConcurrent)
	}
	return m
}

// Fixed answers every request with content.
func Fixed(content string) func(string) string {
	return func(string) string { return content }
}

// ByName answers each schema name with its content ("" for others).
func ByName(answers map[string]string) func(string) string {
	return func(name string) string { return answers[name] }
}

// serve answers a request sent directly (not in a batch), counting it;
// render turns the answer into the wire's response body and its prompt
// tokens.
func (m *model) serve(w http.ResponseWriter, r *http.Request, render func(body []byte, answer string) ([]byte, int)) {
	body, _ := io.ReadAll(r.Body)
	name := schemaName(body)
	if m.refuse(w, body) {
		return
	}
	defer m.done()
	if !m.admit(r, name, body) {
		return
	}
	defer m.release()
	answer := m.answer(name, string(body))
	if !m.wait(r, answer) {
		return
	}
	out, prompt := render(body, answer)
	m.mu.Lock()
	m.prompt += prompt
	m.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Write(out)
}

// refuse answers a request the server will not take — past RateLimit
// (429), a schema past MaxProperties (400) — and counts it; else it counts
// the request in flight (done ends it).
func (m *model) refuse(w http.ResponseWriter, body []byte) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.opts.RateLimit > 0 && m.inflight >= m.opts.RateLimit {
		m.refused++
		w.Header().Set("Retry-After", strconv.FormatFloat(cmp.Or(m.opts.RetryAfter, time.Second).Seconds(), 'f', -1, 64))
		m.fail(w, http.StatusTooManyRequests, "Rate limit reached: too many requests at once. Please try again later.")
		return true
	}
	if m.opts.MaxProperties > 0 {
		var req wireBody
		json.Unmarshal(body, &req)
		_, s := req.schema()
		if n := countProperties(s); n > m.opts.MaxProperties {
			m.refused++
			m.fail(w, http.StatusBadRequest, fmt.Sprintf("Invalid schema: the compiled grammar is too large (%d properties, at most %d).", n, m.opts.MaxProperties))
			return true
		}
	}
	m.inflight++
	m.peak = max(m.peak, m.inflight)
	return false
}

func (m *model) done() {
	m.mu.Lock()
	m.inflight--
	m.mu.Unlock()
}

// countProperties counts the object properties of a schema's JSON, all
// levels.
func countProperties(schema []byte) int {
	v, err := jsonv.Parse(schema)
	if err != nil {
		return 0
	}
	n := 0
	jsonv.Walk(v, func(p jsonv.Pointer, x jsonv.Value) error {
		if props, ok := x.Get("properties"); ok && props.Object() != nil {
			n += props.Len()
		}
		return nil
	})
	return n
}

// cut is answer cut off past MaxOutputTokens, and whether it was.
func (m *model) cut(answer string) (string, bool) {
	if m.opts.MaxOutputTokens > 0 && len(answer)/4 > m.opts.MaxOutputTokens {
		return answer[:m.opts.MaxOutputTokens*4], true
	}
	return answer, false
}

// Peak is the most requests the server answered at once.
func (m *model) Peak() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.peak
}

// Refused counts the requests the server refused (RateLimit,
// MaxProperties).
func (m *model) Refused() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.refused
}

// batchAnswer is the response body of a batch's chat request: the one a
// direct request with that body gets.
func (s *Server) batchAnswer(body []byte) (int, []byte) {
	out, _ := s.completion(body, s.answer(schemaName(body), string(body)))
	return http.StatusOK, out
}

// completion is the chat completion that answers a request of body with
// answer, and its prompt tokens: the message content, or, when the request
// offers a function tool, a call of it with answer as its arguments.
func (m *model) completion(body []byte, answer string) ([]byte, int) {
	var req wireBody
	json.Unmarshal(body, &req)
	answer, cut := m.cut(answer)
	message, finish := []byte(nil), "stop"
	if len(req.Tools) > 0 && req.Tools[0].Function.Name != "" {
		name, _ := json.Marshal(req.Tools[0].Function.Name)
		args, _ := json.Marshal(answer)
		message = fmt.Appendf(nil, `{"role":"assistant","content":null,"tool_calls":[{"id":"call_test","type":"function","function":{"name":%s,"arguments":%s}}]}`, name, args)
		finish = "tool_calls"
	} else {
		content, _ := json.Marshal(answer)
		message = fmt.Appendf(nil, `{"role":"assistant","content":%s}`, content)
	}
	if cut {
		finish = "length"
	}
	prompt, completion := m.tokens(body, answer)
	cached := int(m.opts.Cached * float64(prompt))
	if m.opts.PrefixCache {
		cached = m.cacheOpenAI(body)
	}
	model, _ := json.Marshal(cmp.Or(m.opts.Model, "test-model"))
	return fmt.Appendf(nil, `{"id":"chatcmpl-test","object":"chat.completion","created":1,"model":%s,`+
		`"choices":[{"index":0,"message":%s,"finish_reason":%q}],`+
		`"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":%d}}}`,
		model, message, finish, prompt, completion, prompt+completion, cached), prompt
}

// tokens are the prompt and completion tokens of a request of body
// answered with answer.
func (m *model) tokens(body []byte, answer string) (prompt, completion int) {
	if m.opts.Tokens || m.opts.PrefixCache {
		return len(body) / 4, len(answer) / 4
	}
	return 100, 30
}

// admit counts a direct request and waits for its turn (Block,
// MaxConcurrent); false when the client gave up first. release ends the
// turn of an admitted request.
func (m *model) admit(r *http.Request, name string, body []byte) bool {
	m.mu.Lock()
	m.bodies = append(m.bodies, string(body))
	m.asked[name]++
	m.mu.Unlock()
	if m.opts.Block != nil {
		select {
		case <-m.opts.Block:
		case <-r.Context().Done():
			return false
		}
	}
	if m.slots != nil {
		select {
		case m.slots <- struct{}{}:
		case <-r.Context().Done():
			return false
		}
	}
	return true
}

func (m *model) release() {
	if m.slots != nil {
		<-m.slots
	}
}

// wait takes the time of writing answer (Delay, PerToken); false when the
// client gave up first.
func (m *model) wait(r *http.Request, answer string) bool {
	if d := m.opts.Delay + time.Duration(len(answer)/4)*m.opts.PerToken; d > 0 {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return false
		}
	}
	return true
}

// Requests counts the requests sent directly so far (not those of
// batches).
func (s *model) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bodies)
}

// PromptTokens totals the prompt tokens of the direct requests answered
// so far.
func (s *model) PromptTokens() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.prompt
}

// Asked counts the direct requests so far by schema name.
func (s *model) Asked() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.asked))
	for k, v := range s.asked {
		out[k] = v
	}
	return out
}

// Bodies returns the direct requests' bodies so far, in order.
func (s *model) Bodies() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.bodies...)
}

// Sequence answers the requests with contents in turn, the last one again
// after that.
func Sequence(contents ...string) func(string) string {
	var mu sync.Mutex
	n := 0
	return func(string) string {
		mu.Lock()
		defer mu.Unlock()
		c := contents[min(n, len(contents)-1)]
		n++
		return c
	}
}
