package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
)

// A schema whose property names are not in sorted order, nested too.
const schemaText = `{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"object","properties":{"yy":{"type":"integer"},"bb":{"type":"string"}},"required":["yy","bb"]},"mid":{"type":"boolean"}},"required":["zeta","alpha"]}`

// fakeServer speaks the Messages API: it records each request and answers
// with the answers it is given, in turn, repeating the last.
type fakeServer struct {
	*httptest.Server
	mu      sync.Mutex
	bodies  [][]byte
	headers []http.Header
	lines   []string // method and path of each request
	answers []func(w http.ResponseWriter)
	count   atomic.Int32
	arrived chan struct{} // gets a value when a request arrives, if there is room
}

func newFake(t *testing.T, answers ...func(w http.ResponseWriter)) *fakeServer {
	f := &fakeServer{answers: answers, arrived: make(chan struct{}, 1)}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.bodies = append(f.bodies, b)
		f.headers = append(f.headers, r.Header.Clone())
		f.lines = append(f.lines, r.Method+" "+r.URL.Path)
		f.mu.Unlock()
		n := int(f.count.Add(1)) - 1
		select {
		case f.arrived <- struct{}{}:
		default:
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Request-Id", "req_test")
		f.answers[min(n, len(f.answers)-1)](w)
	}))
	t.Cleanup(f.Close)
	return f
}

// provider returns a Provider talking to srv with a test key; the client
// refuses to send a request without credentials.
func provider(srv *fakeServer, opts Options) *Provider {
	if opts.Model == "" {
		opts.Model = "claude-sonnet-4-5"
	}
	opts.BaseURL = srv.URL
	opts.APIKey = "sk-ant-test"
	return New(opts)
}

func toolUse(name, input string) func(w http.ResponseWriter) {
	return message(`[{"type":"text","text":"Filling it in."},{"type":"tool_use","id":"toolu_01","name":"`+name+`","input":`+input+`}]`, "tool_use")
}

func message(content, stop string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		io.WriteString(w, `{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929",`+
			`"content":`+content+`,"stop_reason":"`+stop+`","stop_sequence":null,`+
			`"usage":{"input_tokens":120,"output_tokens":31,"cache_creation_input_tokens":50,"cache_read_input_tokens":1000}}`)
	}
}

// status is an Anthropic error answer. Its retry-after-ms header keeps the
// client's backoff short.
func status(code int, kind, msg string) func(w http.ResponseWriter) {
	return raw(code, `{"type":"error","error":{"type":"`+kind+`","message":"`+msg+`"},"request_id":"req_test"}`)
}

func raw(code int, body string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Retry-After-Ms", "1")
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

func request(schema string) *llm.Request {
	return &llm.Request{
		Name:     "step1_draft",
		System:   "You fill in JSON.",
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "Draft it."}, {Role: llm.RoleAssistant, Content: "{}"}, {Role: llm.RoleUser, Content: "Again."}},
		Schema:   json.RawMessage(schema),
	}
}

func TestForcedToolUse(t *testing.T) {
	srv := newFake(t, toolUse("step1_draft", `{"zeta":"z","alpha":{"yy":1,"bb":"b"}}`))
	resp, err := provider(srv, Options{}).Complete(context.Background(), request(schemaText))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != `{"zeta":"z","alpha":{"yy":1,"bb":"b"}}` || resp.Model != "claude-sonnet-4-5-20250929" || resp.Replayed {
		t.Errorf("response %+v", resp)
	}
	// For the GenAI conventions' gen_ai.response.id and finish_reasons.
	if resp.ID != "msg_01" || !slices.Equal(resp.FinishReasons, []string{"tool_use"}) {
		t.Errorf("id %q, finish reasons %q", resp.ID, resp.FinishReasons)
	}
	// Anthropic's input_tokens leave the cache's out: the prompt is all of
	// them, the cached ones counted apart.
	if resp.Usage != (llm.Usage{PromptTokens: 1170, CompletionTokens: 31, CachedPromptTokens: 1000, CacheWriteTokens: 50}) || resp.Latency <= 0 {
		t.Errorf("usage %+v latency %v", resp.Usage, resp.Latency)
	}
	if srv.lines[0] != "POST /v1/messages" || srv.headers[0].Get("X-Api-Key") != "sk-ant-test" || srv.headers[0].Get("Anthropic-Version") == "" {
		t.Errorf("request %q, headers %v", srv.lines[0], srv.headers[0])
	}
	var got struct {
		Model     string `json:"model"`
		MaxTokens int    `json:"max_tokens"`
		System    []struct {
			Type, Text string
		} `json:"system"`
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Type, Text string
			} `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"input_schema"`
		} `json:"tools"`
		ToolChoice struct {
			Type, Name string
		} `json:"tool_choice"`
	}
	body := srv.bodies[0]
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	var turns []string
	for _, m := range got.Messages {
		turns = append(turns, m.Role+":"+m.Content[0].Type+":"+m.Content[0].Text)
	}
	if got.Model != "claude-sonnet-4-5" || got.MaxTokens != DefaultMaxTokens || len(got.System) != 1 || got.System[0].Text != "You fill in JSON." {
		t.Errorf("request %+v", got)
	}
	if strings.Join(turns, "|") != "user:text:Draft it.|assistant:text:{}|user:text:Again." {
		t.Errorf("messages %q", turns)
	}
	if len(got.Tools) != 1 || got.Tools[0].Name != "step1_draft" || got.ToolChoice.Type != "tool" || got.ToolChoice.Name != "step1_draft" {
		t.Errorf("tools %+v tool_choice %+v: one tool, forced", got.Tools, got.ToolChoice)
	}
	if string(got.Tools[0].InputSchema) != schemaText {
		t.Errorf("input_schema changed:\n%s", got.Tools[0].InputSchema)
	}
	// The schema as received keeps its order, nested objects too.
	v, _ := jsonv.Parse(body)
	props := v.Lookup("tools").Array()[0].Lookup("input_schema").Lookup("properties")
	if k := props.Object().Names(); strings.Join(k, ",") != "zeta,alpha,mid" {
		t.Errorf("schema properties arrived as %q", k)
	}
	if k := props.Lookup("alpha").Lookup("properties").Object().Names(); strings.Join(k, ",") != "yy,bb" {
		t.Errorf("nested properties arrived as %q", k)
	}
}

func TestRequestOptions(t *testing.T) {
	srv := newFake(t, toolUse("step_1__draft_", `{}`))
	req := request(schemaText)
	req.System = ""
	req.Name = "step 1: draft!"
	if _, err := provider(srv, Options{MaxTokens: 500}).Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	v, _ := jsonv.Parse(srv.bodies[0])
	if _, ok := v.Get("system"); ok {
		t.Error("an empty system text was sent")
	}
	if n, _ := v.Lookup("max_tokens").Int(); n != 500 {
		t.Errorf("max_tokens %d", n)
	}
	if name := v.Lookup("tool_choice").Lookup("name").Str(); name != "step_1__draft_" {
		t.Errorf("tool name %q is not a wire name", name)
	}
}

func TestSchemaShape(t *testing.T) {
	tests := []struct {
		name, schema, sent, err string
	}{
		{"object", schemaText, schemaText, ""},
		{"no type", `{"properties":{"b":{},"a":{}}}`, `{"type":"object","properties":{"b":{},"a":{}}}`, ""},
		{"not an object type", `{"type":"string"}`, "", `must have "type": "object"`},
		{"not an object", `[1]`, "", "must be a JSON object"},
		{"not JSON", `{"type":`, "", "not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFake(t, toolUse("step1_draft", `{"b":1}`))
			_, err := provider(srv, Options{}).Complete(context.Background(), request(tt.schema))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || srv.count.Load() != 0 {
					t.Errorf("err = %v after %d requests, want %q before any", err, srv.count.Load(), tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			v, _ := jsonv.Parse(srv.bodies[0])
			if got := string(jsonv.Marshal(v.Lookup("tools").Array()[0].Lookup("input_schema"))); got != tt.sent {
				t.Errorf("input_schema %s", got)
			}
		})
	}
}

func TestNoAnswer(t *testing.T) {
	tests := []struct {
		name   string
		answer func(http.ResponseWriter)
		want   string
	}{
		{"text only", message(`[{"type":"text","text":"No."}]`, "end_turn"), `did not call the tool "step1_draft" (stop reason "end_turn")`},
		{"refusal", message(`[]`, "refusal"), `(stop reason "refusal")`},
		{"cut off", message(`[{"type":"tool_use","id":"toolu_01","name":"step1_draft","input":{"zeta":"abc"}}]`, "max_tokens"), "hit the token limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFake(t, tt.answer)
			_, err := provider(srv, Options{}).Complete(context.Background(), request(schemaText))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
			if n := srv.count.Load(); n != 1 {
				t.Errorf("%d requests: an answer without a tool call is not retried by the client", n)
			}
		})
	}
	if _, err := New(Options{}).Complete(context.Background(), request(schemaText)); err == nil || !strings.Contains(err.Error(), "no model") {
		t.Errorf("no model: %v", err)
	}
}

func TestRetries(t *testing.T) {
	ok := toolUse("step1_draft", `{"zeta":"ok"}`)
	tests := []struct {
		name       string
		maxRetries int
		answers    []func(http.ResponseWriter)
		requests   int32
		status     int // of the *llm.APIError; 0 for success
		retryable  bool
		message    string
	}{
		{"429 then 500 then success", 0, []func(http.ResponseWriter){status(429, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"), status(500, "api_error", "Internal server error"), ok}, 3, 0, false, ""},
		{"529 overloaded then success", 0, []func(http.ResponseWriter){status(529, "overloaded_error", "Overloaded"), ok}, 2, 0, false, ""},
		{"always 500, default bound", 0, []func(http.ResponseWriter){status(500, "api_error", "Internal server error")}, 3, 500, true, "api_error: Internal server error"},
		{"always 529, bound 1", 1, []func(http.ResponseWriter){status(529, "overloaded_error", "Overloaded")}, 2, 529, true, "overloaded_error: Overloaded"},
		{"no retries", -1, []func(http.ResponseWriter){status(429, "rate_limit_error", "Slow down")}, 1, 429, true, "rate_limit_error: Slow down"},
		{"400 is final", 0, []func(http.ResponseWriter){status(400, "invalid_request_error", "tools.0.input_schema: JSON schema is invalid")}, 1, 400, false, "invalid_request_error: tools.0.input_schema: JSON schema is invalid"},
		{"401 is final", 0, []func(http.ResponseWriter){status(401, "authentication_error", "invalid x-api-key")}, 1, 401, false, "authentication_error: invalid x-api-key"},
		{"proxy page", -1, []func(http.ResponseWriter){raw(502, "<html>\n<h1>502 Bad Gateway</h1>\n</html>")}, 1, 502, true, "<html> <h1>502 Bad Gateway</h1> </html>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFake(t, tt.answers...)
			resp, err := provider(srv, Options{MaxRetries: tt.maxRetries}).Complete(context.Background(), request(schemaText))
			if n := srv.count.Load(); n != tt.requests {
				t.Errorf("%d requests, want %d", n, tt.requests)
			}
			if tt.status == 0 {
				if err != nil || resp.Content != `{"zeta":"ok"}` {
					t.Fatalf("%v %+v", err, resp)
				}
				return
			}
			var ae *llm.APIError
			if !errors.As(err, &ae) {
				t.Fatalf("err = %#v, want an *llm.APIError", err)
			}
			if ae.Provider != "anthropic" || ae.StatusCode != tt.status || ae.Retryable != tt.retryable || ae.Err == nil {
				t.Errorf("error %+v", ae)
			}
			if ae.Message != tt.message+" (request req_test)" {
				t.Errorf("message %q", ae.Message)
			}
		})
	}
}

func TestTransportError(t *testing.T) {
	var count atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		count.Add(1)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close() // no answer at all
		}
	}))
	defer srv.Close()
	// Without an answer there is no retry-after header: one retry keeps the
	// client's backoff to half a second.
	_, err := New(Options{Model: "m", BaseURL: srv.URL, APIKey: "k", MaxRetries: 1}).Complete(context.Background(), request(schemaText))
	var ae *llm.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 0 || !ae.Retryable || ae.Provider != "anthropic" {
		t.Fatalf("err = %#v", err)
	}
	if n := count.Load(); n != 2 {
		t.Errorf("%d requests, want MaxRetries+1 = 2", n)
	}
}

func TestTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := newFake(t, func(w http.ResponseWriter) { <-release })
	t.Cleanup(func() { close(release) }) // runs before the server closes
	_, err := provider(srv, Options{Timeout: 20 * time.Millisecond, MaxRetries: -1}).Complete(context.Background(), request(schemaText))
	var ae *llm.APIError
	if !errors.As(err, &ae) || !ae.Retryable || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %#v, want a retryable *llm.APIError for the deadline", err)
	}
}

func TestCancel(t *testing.T) {
	release := make(chan struct{})
	srv := newFake(t, func(w http.ResponseWriter) { <-release })
	t.Cleanup(func() { close(release) }) // runs before the server closes
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := provider(srv, Options{}).Complete(ctx, request(schemaText))
		done <- err
	}()
	<-srv.arrived
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Complete did not return after its context was cancelled")
	}
	if n := srv.count.Load(); n != 1 {
		t.Errorf("%d requests: a cancelled request is not retried", n)
	}
}

// TestPromptCache: a request whose tool and system text are long enough
// to be cached gets a cache breakpoint after them — on the system text,
// or on the tool when there is none — and a short one gets none, since
// Anthropic ignores a breakpoint on a prefix under its minimum.
func TestPromptCache(t *testing.T) {
	var long strings.Builder
	long.WriteString(`{"type":"object","properties":{`)
	for i := range 400 {
		if i > 0 {
			long.WriteString(",")
		}
		fmt.Fprintf(&long, `"a%d":{"type":"string","description":"item %d's value"}`, i, i)
	}
	long.WriteString(`}}`)
	srv := newFake(t, toolUse("step1_draft", `{"a0":"x"}`))
	p := provider(srv, Options{})
	ctx := context.Background()
	for _, c := range []struct {
		schema, system string
		want           []string // JSON paths of the breakpoints
	}{
		{long.String(), "You fill in JSON.", []string{"system.0"}},
		{long.String(), "", []string{"tools.0"}},
		{schemaText, "You fill in JSON.", nil},
	} {
		req := request(c.schema)
		req.System = c.system
		if _, err := p.Complete(ctx, req); err != nil {
			t.Fatal(err)
		}
		srv.mu.Lock()
		body := srv.bodies[len(srv.bodies)-1]
		srv.mu.Unlock()
		var sent struct {
			System []map[string]json.RawMessage `json:"system"`
			Tools  []map[string]json.RawMessage `json:"tools"`
		}
		if err := json.Unmarshal(body, &sent); err != nil {
			t.Fatal(err)
		}
		var got []string
		for i, b := range sent.System {
			if _, ok := b["cache_control"]; ok {
				got = append(got, fmt.Sprintf("system.%d", i))
			}
		}
		for i, b := range sent.Tools {
			if _, ok := b["cache_control"]; ok {
				got = append(got, fmt.Sprintf("tools.%d", i))
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("schema of %d bytes, system %q: breakpoints %v, want %v", len(c.schema), c.system, got, c.want)
		}
	}
	// Never, when told so.
	p = provider(srv, Options{CacheMinTokens: -1})
	if _, err := p.Complete(ctx, request(long.String())); err != nil {
		t.Fatal(err)
	}
	srv.mu.Lock()
	body := string(srv.bodies[len(srv.bodies)-1])
	srv.mu.Unlock()
	if strings.Contains(body, "cache_control") {
		t.Errorf("a breakpoint though CacheMinTokens < 0: %.300s", body)
	}
}
