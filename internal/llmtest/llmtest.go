package llmtest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// Server is an OpenAI-compatible test model. It answers each request with
// the content Answer gives for the request's schema name (the
// response_format's json_schema name, which Vibe sets to the step, the
// chunk or "decision"), and keeps every request.
type Server struct {
	*httptest.Server
	answer func(name, body string) string
	opts   Options

	slots chan struct{} // a slot per request served at once (MaxConcurrent)

	mu     sync.Mutex
	bodies []string
	asked  map[string]int
	prompt int // the prompt tokens answered so far
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
	// read from its prompt cache (usage.prompt_tokens_details.cached_tokens).
	Cached float64
}

// NewServer starts a test model with opts.
func NewServer(t testing.TB, answer func(name, body string) string, opts Options) *Server {
	s := &Server{answer: answer, asked: map[string]int{}, opts: opts}
	if opts.MaxConcurrent > 0 {
		s.slots = make(chan struct{}, opts.MaxConcurrent)
	}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Fixed answers every request with content.
func Fixed(content string) func(string) string {
	return func(string) string { return content }
}

// ByName answers each schema name with its content ("" for others).
func ByName(answers map[string]string) func(string) string {
	return func(name string) string { return answers[name] }
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		ResponseFormat struct {
			JSONSchema struct{ Name string } `json:"json_schema"`
		} `json:"response_format"`
	}
	json.Unmarshal(body, &req)
	name := req.ResponseFormat.JSONSchema.Name
	s.mu.Lock()
	s.bodies = append(s.bodies, string(body))
	s.asked[name]++
	s.mu.Unlock()
	if s.opts.Block != nil {
		select {
		case <-s.opts.Block:
		case <-r.Context().Done():
			return
		}
	}
	if s.slots != nil {
		select {
		case s.slots <- struct{}{}:
			defer func() { <-s.slots }()
		case <-r.Context().Done():
			return
		}
	}
	answer := s.answer(name, string(body))
	if d := s.opts.Delay + time.Duration(len(answer)/4)*s.opts.PerToken; d > 0 {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
	}
	content, _ := json.Marshal(answer)
	prompt, completion := 100, 30
	if s.opts.Tokens {
		prompt, completion = len(body)/4, len(answer)/4
	}
	s.mu.Lock()
	s.prompt += prompt
	s.mu.Unlock()
	model, _ := json.Marshal(cmp.Or(s.opts.Model, "test-model"))
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"chatcmpl-test","object":"chat.completion","created":1,"model":%s,`+
		`"choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}],`+
		`"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":%d}}}`,
		model, content, prompt, completion, prompt+completion, int(s.opts.Cached*float64(prompt)))
}

// Requests counts the requests so far.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bodies)
}

// PromptTokens totals the prompt tokens of the requests answered so far.
func (s *Server) PromptTokens() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.prompt
}

// Asked counts the requests so far by schema name.
func (s *Server) Asked() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.asked))
	for k, v := range s.asked {
		out[k] = v
	}
	return out
}

// Bodies returns the request bodies so far, in order.
func (s *Server) Bodies() []string {
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
