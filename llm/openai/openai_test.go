package openai

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
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

// fakeServer speaks the Chat Completions protocol: it records each request
// and answers with the answers it is given, in turn, repeating the last.
type fakeServer struct {
	*httptest.Server
	mu      sync.Mutex
	bodies  [][]byte
	lines   []string // method, path and Authorization of each request
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
		f.lines = append(f.lines, r.Method+" "+r.URL.Path+" auth="+r.Header.Get("Authorization"))
		f.mu.Unlock()
		n := int(f.count.Add(1)) - 1
		select {
		case f.arrived <- struct{}{}:
		default:
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "req_test")
		f.answers[min(n, len(f.answers)-1)](w)
	}))
	t.Cleanup(f.Close)
	return f
}

func completion(content string) func(w http.ResponseWriter) {
	return answer("stop", content)
}

// answer is a chat.completion with the given finish reason and content.
func answer(finish, content string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		c, _ := json.Marshal(content)
		io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"gpt-4o-mini-2024-07-18",`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":`+string(c)+`,"refusal":null},"logprobs":null,"finish_reason":"`+finish+`"}],`+
			`"usage":{"prompt_tokens":57,"completion_tokens":21,"total_tokens":78,"prompt_tokens_details":{"cached_tokens":32}},"system_fingerprint":"fp_test"}`)
	}
}

func toolCall(name, args string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		a, _ := json.Marshal(args)
		io.WriteString(w, `{"id":"chatcmpl-2","object":"chat.completion","created":1700000000,"model":"llama3.1",`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"`+name+`","arguments":`+string(a)+`}}]},"finish_reason":"tool_calls"}],`+
			`"usage":{"prompt_tokens":40,"completion_tokens":9,"total_tokens":49}}`)
	}
}

// status is an OpenAI error answer. Its retry-after-ms header keeps the
// client's backoff short.
func status(code int, msg string) func(w http.ResponseWriter) {
	return raw(code, `{"error":{"message":"`+msg+`","type":"requests","param":null,"code":"test"}}`)
}

func raw(code int, body string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Retry-After-Ms", "1")
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

func request() *llm.Request {
	return &llm.Request{
		Name:     "step1_draft",
		System:   "You fill in JSON.",
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "Draft it."}, {Role: llm.RoleAssistant, Content: "{}"}, {Role: llm.RoleUser, Content: "Again."}},
		Schema:   json.RawMessage(schemaText),
	}
}

// keyOrder returns the member names of the object at path in body, in the
// order the bytes hold them. A path element on an array takes its first
// item.
func keyOrder(t *testing.T, body []byte, path ...string) string {
	t.Helper()
	v, err := jsonv.Parse(body)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range path {
		if v.Kind() == jsonv.KindArray {
			v = v.Array()[0]
			continue
		}
		v = v.Lookup(p)
	}
	if v.Object() == nil {
		t.Fatalf("no object at %v in %s", path, body)
	}
	return strings.Join(v.Object().Names(), ",")
}

func TestJSONSchemaMode(t *testing.T) {
	srv := newFake(t, completion(`{"zeta":"z","alpha":{"yy":1,"bb":"b"}}`))
	p := New(Options{Model: "gpt-4o-mini", BaseURL: srv.URL, APIKey: "sk-test"})
	resp, err := p.Complete(context.Background(), request())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != `{"zeta":"z","alpha":{"yy":1,"bb":"b"}}` || resp.Model != "gpt-4o-mini-2024-07-18" || resp.Replayed {
		t.Errorf("response %+v", resp)
	}
	// For the GenAI conventions' gen_ai.response.id and finish_reasons.
	if resp.ID != "chatcmpl-1" || !slices.Equal(resp.FinishReasons, []string{"stop"}) || p.Endpoint() != srv.URL {
		t.Errorf("id %q, finish reasons %q, endpoint %q", resp.ID, resp.FinishReasons, p.Endpoint())
	}
	// The prompt's tokens read from OpenAI's cache are counted apart too.
	if resp.Usage != (llm.Usage{PromptTokens: 57, CompletionTokens: 21, CachedPromptTokens: 32}) || resp.Latency <= 0 {
		t.Errorf("usage %+v latency %v", resp.Usage, resp.Latency)
	}
	if srv.lines[0] != "POST /chat/completions auth=Bearer sk-test" {
		t.Errorf("request line %q", srv.lines[0])
	}
	body := srv.bodies[0]
	var got struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
		ResponseFormat struct {
			Type       string `json:"type"`
			JSONSchema struct {
				Name   string          `json:"name"`
				Strict *bool           `json:"strict"`
				Schema json.RawMessage `json:"schema"`
			} `json:"json_schema"`
		} `json:"response_format"`
		Tools      []any `json:"tools"`
		ToolChoice any   `json:"tool_choice"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	var turns []string
	for _, m := range got.Messages {
		turns = append(turns, m.Role+":"+m.Content)
	}
	if got.Model != "gpt-4o-mini" || strings.Join(turns, "|") != "system:You fill in JSON.|user:Draft it.|assistant:{}|user:Again." {
		t.Errorf("model %q messages %q", got.Model, turns)
	}
	if got.ResponseFormat.Type != "json_schema" || got.ResponseFormat.JSONSchema.Name != "step1_draft" || got.ResponseFormat.JSONSchema.Strict != nil {
		t.Errorf("response_format %+v", got.ResponseFormat)
	}
	if got.Tools != nil || got.ToolChoice != nil {
		t.Errorf("tools %v tool_choice %v sent in json_schema mode", got.Tools, got.ToolChoice)
	}
	// The schema as received keeps its order, nested objects too.
	if k := keyOrder(t, body, "response_format", "json_schema", "schema", "properties"); k != "zeta,alpha,mid" {
		t.Errorf("schema properties arrived as %q", k)
	}
	if k := keyOrder(t, body, "response_format", "json_schema", "schema", "properties", "alpha", "properties"); k != "yy,bb" {
		t.Errorf("nested properties arrived as %q", k)
	}
	if string(got.ResponseFormat.JSONSchema.Schema) != schemaText {
		t.Errorf("schema bytes changed:\n%s", got.ResponseFormat.JSONSchema.Schema)
	}
}

func TestNoSystem(t *testing.T) {
	srv := newFake(t, completion(`{}`))
	req := request()
	req.System = ""
	req.Name = "step 1: draft!"
	if _, err := New(Options{Model: "m", BaseURL: srv.URL}).Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Messages []struct {
			Role string `json:"role"`
		} `json:"messages"`
		ResponseFormat struct {
			JSONSchema struct {
				Name string `json:"name"`
			} `json:"json_schema"`
		} `json:"response_format"`
	}
	json.Unmarshal(srv.bodies[0], &got)
	if len(got.Messages) != 3 || got.Messages[0].Role != "user" {
		t.Errorf("messages %+v: an empty system text is not sent", got.Messages)
	}
	if got.ResponseFormat.JSONSchema.Name != "step_1__draft_" {
		t.Errorf("name %q is not a wire name", got.ResponseFormat.JSONSchema.Name)
	}
}

func TestToolMode(t *testing.T) {
	srv := newFake(t, toolCall("step1_draft", `{"zeta":"z","alpha":{"yy":1,"bb":"b"}}`))
	p := New(Options{Model: "llama3.1", BaseURL: srv.URL, Mode: ModeTool})
	resp, err := p.Complete(context.Background(), request())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != `{"zeta":"z","alpha":{"yy":1,"bb":"b"}}` || resp.Model != "llama3.1" || resp.Usage != (llm.Usage{PromptTokens: 40, CompletionTokens: 9}) {
		t.Errorf("response %+v", resp)
	}
	var got struct {
		Tools []struct {
			Type     string `json:"type"`
			Function struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
		ToolChoice struct {
			Type     string `json:"type"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tool_choice"`
		ResponseFormat any `json:"response_format"`
	}
	body := srv.bodies[0]
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Tools) != 1 || got.Tools[0].Type != "function" || got.Tools[0].Function.Name != "step1_draft" || got.ResponseFormat != nil {
		t.Fatalf("tools %+v response_format %v", got.Tools, got.ResponseFormat)
	}
	if got.ToolChoice.Type != "function" || got.ToolChoice.Function.Name != "step1_draft" {
		t.Errorf("tool_choice %+v: the tool call must be forced", got.ToolChoice)
	}
	if k := keyOrder(t, body, "tools", "0", "function", "parameters", "properties"); k != "zeta,alpha,mid" {
		t.Errorf("parameters arrived as %q", k)
	}
	if k := keyOrder(t, body, "tools", "0", "function", "parameters", "properties", "alpha", "properties"); k != "yy,bb" {
		t.Errorf("nested parameters arrived as %q", k)
	}
	if string(got.Tools[0].Function.Parameters) != schemaText {
		t.Errorf("parameters changed:\n%s", got.Tools[0].Function.Parameters)
	}
}

func TestStrict(t *testing.T) {
	// The model leaves the optional "mid" null, as strict mode makes it.
	const answer = `{"zeta":"z","alpha":{"yy":1,"bb":"b"},"mid":null}`
	const strictSchema = `{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"object","properties":{"yy":{"type":"integer"},"bb":{"type":"string"}},"required":["yy","bb"],"additionalProperties":false},"mid":{"type":["boolean","null"]}},"required":["zeta","alpha","mid"],"additionalProperties":false}`
	tests := []struct {
		mode         Mode
		answer       func(http.ResponseWriter)
		strict, sent string // JSON paths of the strict flag and the schema
	}{
		{ModeJSONSchema, completion(answer), "response_format.json_schema.strict", "response_format.json_schema.schema"},
		{ModeTool, toolCall("step1_draft", answer), "tools.0.function.strict", "tools.0.function.parameters"},
	}
	for _, tt := range tests {
		srv := newFake(t, tt.answer)
		resp, err := New(Options{Model: "gpt-4o", BaseURL: srv.URL, Strict: true, Mode: tt.mode}).Complete(context.Background(), request())
		if err != nil {
			t.Fatal(err)
		}
		if resp.Content != `{"zeta":"z","alpha":{"yy":1,"bb":"b"}}` {
			t.Errorf("mode %d: the strict null was not restored: %s", tt.mode, resp.Content)
		}
		v, _ := jsonv.Parse(srv.bodies[0])
		flag, _ := v.At(pointer(tt.strict))
		sent, _ := v.At(pointer(tt.sent))
		if !flag.Bool() || string(jsonv.Marshal(sent)) != strictSchema {
			t.Errorf("mode %d: strict %v schema\n%s", tt.mode, flag, jsonv.Marshal(sent))
		}
	}
}

func TestSharedSchema(t *testing.T) {
	// Two steps that share their fields, each with its own description
	// beside the reference: strict mode takes no keyword there.
	const shared = `{"type":"object","properties":{` +
		`"one":{"description":"The first step.","$ref":"#/$defs/step"},` +
		`"two":{"description":"The second step.","$ref":"#/$defs/step"}},"required":["one","two"],` +
		`"$defs":{"step":{"type":"object","properties":{"result":{"type":"string","description":"What the step decided, in a few sentences, for the next."}},"required":["result"]}}}`
	for _, tc := range []struct {
		name     string
		opts     Options
		schema   string // as sent
		inSystem string // what the system text ends with
	}{{
		name:     "strict: the descriptions go after the system text",
		opts:     Options{Strict: true},
		schema:   `{"type":"object","properties":{"one":{"$ref":"#/$defs/step"},"two":{"$ref":"#/$defs/step"}},"required":["one","two"],"$defs":{"step":{"type":"object","properties":{"result":{"type":"string","description":"What the step decided, in a few sentences, for the next."}},"required":["result"],"additionalProperties":false}},"additionalProperties":false}`,
		inSystem: "You fill in JSON.\n\nWhat these parts of the schema are:\n- one: The first step.\n- two: The second step.",
	}, {
		name:     "loose: the schema as it is",
		schema:   shared,
		inSystem: "You fill in JSON.",
	}, {
		name:     "inline: every reference replaced",
		opts:     Options{Inline: true},
		schema:   `{"type":"object","properties":{"one":{"description":"The first step.","type":"object","properties":{"result":{"type":"string","description":"What the step decided, in a few sentences, for the next."}},"required":["result"]},"two":{"description":"The second step.","type":"object","properties":{"result":{"type":"string","description":"What the step decided, in a few sentences, for the next."}},"required":["result"]}},"required":["one","two"]}`,
		inSystem: "You fill in JSON.",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFake(t, completion(`{"one":{"result":"a"},"two":{"result":"b"}}`))
			opts := tc.opts
			opts.Model, opts.BaseURL = "gpt-4o", srv.URL
			req := request()
			req.Schema = json.RawMessage(shared)
			if _, err := New(opts).Complete(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			v, _ := jsonv.Parse(srv.bodies[0])
			sent, _ := v.At(pointer("response_format.json_schema.schema"))
			if got := string(jsonv.Marshal(sent)); got != tc.schema {
				t.Errorf("schema sent\n got %s\nwant %s", got, tc.schema)
			}
			if system := v.Lookup("messages").Array()[0].Lookup("content").Str(); system != tc.inSystem {
				t.Errorf("system text %q, want %q", system, tc.inSystem)
			}
		})
	}
}

// pointer turns a dotted path into a JSON Pointer.
func pointer(dotted string) jsonv.Pointer {
	return jsonv.PointerTo(strings.Split(dotted, ".")...)
}

func TestNoAnswer(t *testing.T) {
	tests := []struct {
		name   string
		mode   Mode
		answer func(http.ResponseWriter)
		want   string
	}{
		{"refusal", ModeJSONSchema, raw(200, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`),
			"refused: I can't help with that."},
		{"empty", ModeJSONSchema, completion(""), `answered nothing (finish reason "stop")`},
		{"cut off", ModeJSONSchema, answer("length", `{"zeta":"abc`), `hit the token limit`},
		{"no choices", ModeJSONSchema, raw(200, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":0,"total_tokens":1}}`), "no choices"},
		{"prose instead of a call", ModeTool, completion("I'd rather chat."), `did not call the tool "step1_draft" (finish reason "stop")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFake(t, tt.answer)
			_, err := New(Options{Model: "m", BaseURL: srv.URL, Mode: tt.mode}).Complete(context.Background(), request())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
			if n := srv.count.Load(); n != 1 {
				t.Errorf("%d requests: an answer without content is not retried by the client", n)
			}
		})
	}
	if _, err := New(Options{}).Complete(context.Background(), request()); err == nil || !strings.Contains(err.Error(), "no model") {
		t.Errorf("no model: %v", err)
	}
}

func TestRetries(t *testing.T) {
	tests := []struct {
		name       string
		maxRetries int
		answers    []func(http.ResponseWriter)
		requests   int32
		status     int // of the *llm.APIError; 0 for success
		retryable  bool
	}{
		{"429 then 500 then success", 0, []func(http.ResponseWriter){status(429, "Rate limit reached"), status(500, "The server had an error"), completion(`{"zeta":"ok"}`)}, 3, 0, false},
		{"always 500, default bound", 0, []func(http.ResponseWriter){status(500, "The server had an error")}, 3, 500, true},
		{"always 503, bound 3", 3, []func(http.ResponseWriter){status(503, "The server had an error")}, 4, 503, true},
		{"no retries", -1, []func(http.ResponseWriter){status(429, "Rate limit reached")}, 1, 429, true},
		{"400 is final", 0, []func(http.ResponseWriter){status(400, "Invalid schema for response_format 'step1_draft'")}, 1, 400, false},
		{"401 is final", 0, []func(http.ResponseWriter){status(401, "Incorrect API key provided")}, 1, 401, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFake(t, tt.answers...)
			resp, err := New(Options{Model: "m", BaseURL: srv.URL, MaxRetries: tt.maxRetries}).Complete(context.Background(), request())
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
			if ae.Provider != "openai" || ae.StatusCode != tt.status || ae.Retryable != tt.retryable || ae.Err == nil {
				t.Errorf("error %+v", ae)
			}
			if !strings.Contains(ae.Message, "(request req_test)") {
				t.Errorf("message %q has no request id", ae.Message)
			}
		})
	}
}

func TestErrorBodies(t *testing.T) {
	// OpenAI-compatible servers shape their errors differently; each must
	// keep its status and message.
	tests := []struct {
		name, body, message string
	}{
		{"openai", `{"error":{"message":"Invalid schema","type":"invalid_request_error","param":"response_format","code":null}}`, "Invalid schema"},
		{"vllm", `{"object":"error","message":"This model's maximum context length is 4096 tokens.","type":"BadRequestError","param":null,"code":400}`, "This model's maximum context length is 4096 tokens."},
		{"llama.cpp", `{"error":{"code":400,"message":"the request exceeds the available context size","type":"exceed_context_size_error"}}`, "the request exceeds the available context size"},
		{"error string", `{"error":"model \"llama9\" not found, try pulling it first"}`, `model "llama9" not found, try pulling it first`},
		{"fastapi", `{"detail":"Not Found"}`, "Not Found"},
		{"proxy page", "<html><body>\n<h1>400 Bad Request</h1>\n</body></html>", "<html><body> <h1>400 Bad Request</h1> </body></html>"},
		{"empty", ``, "Bad Request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFake(t, raw(400, tt.body))
			_, err := New(Options{Model: "m", BaseURL: srv.URL}).Complete(context.Background(), request())
			var ae *llm.APIError
			if !errors.As(err, &ae) {
				t.Fatalf("err = %#v, want an *llm.APIError", err)
			}
			if ae.StatusCode != 400 || ae.Message != tt.message+" (request req_test)" {
				t.Errorf("status %d message %q", ae.StatusCode, ae.Message)
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
	_, err := New(Options{Model: "m", BaseURL: srv.URL, MaxRetries: 1}).Complete(context.Background(), request())
	var ae *llm.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 0 || !ae.Retryable || ae.Provider != "openai" {
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
	_, err := New(Options{Model: "m", BaseURL: srv.URL, Timeout: 20 * time.Millisecond, MaxRetries: -1}).Complete(context.Background(), request())
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
		_, err := New(Options{Model: "m", BaseURL: srv.URL}).Complete(ctx, request())
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

// TestBoundedAnswer: an endpoint that sends its headers and then a byte
// now and then fails the call once it is silent past the idle timeout (a
// failure of the endpoint: down), and one whose answer has no end fails it
// past llm.MaxBodySize, not retried.
func TestBoundedAnswer(t *testing.T) {
	stop := make(chan struct{})
	drip := newFake(t, func(w http.ResponseWriter) {
		w.WriteHeader(200)
		io.WriteString(w, `{"id":`)
		w.(http.Flusher).Flush()
		<-stop
	})
	t.Cleanup(func() { close(stop) }) // runs before the server closes
	_, err := New(Options{Model: "m", BaseURL: drip.URL, IdleTimeout: 50 * time.Millisecond, MaxRetries: -1}).Complete(context.Background(), request())
	if ne, ok := errors.AsType[net.Error](err); !ok || !ne.Timeout() || llm.Classify(err) != llm.FaultDown || !strings.Contains(err.Error(), "sent nothing of its answer for 50ms") {
		t.Errorf("a stalled answer: %v", err)
	}

	endless := newFake(t, func(w http.ResponseWriter) {
		io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"`)
		chunk := strings.Repeat("x", 64<<10)
		for range 2 * llm.MaxBodySize / len(chunk) {
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
	})
	_, err = New(Options{Model: "m", BaseURL: endless.URL}).Complete(context.Background(), request())
	if _, ok := errors.AsType[*llm.AnswerTooLargeError](err); !ok || !errors.Is(err, llm.ErrCutOff) || endless.count.Load() != 1 {
		t.Errorf("an endless answer: %v after %d requests", err, endless.count.Load())
	}
}
