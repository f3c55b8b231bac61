package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
	"github.com/tidwall/sjson"

	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
)

// Mode is how the schema is sent.
type Mode int

const (
	// ModeJSONSchema sends response_format {"type": "json_schema"}: the
	// model's message content is the answer.
	ModeJSONSchema Mode = iota
	// ModeTool sends one function tool whose parameters are the schema and
	// forces the model to call it: the call's arguments are the answer. For
	// servers that support tools but not structured outputs.
	ModeTool
)

// Options configures a Provider. The zero value talks to OpenAI with the
// key in $OPENAI_API_KEY (the client's default) and needs only a Model.
type Options struct {
	Model   string // required: "gpt-4o-mini", "llama3.1", …
	BaseURL string // default https://api.openai.com/v1/; e.g. http://localhost:11434/v1/ for Ollama
	APIKey  string // default: the client's own lookup of $OPENAI_API_KEY; local servers need none
	Mode    Mode
	// Strict sends the strict projection of the schema with "strict": true
	// (OpenAI structured outputs) and restores the answer. Strict mode
	// takes no keyword beside "$ref": the titles and descriptions a shared
	// schema keeps there go at the end of the system text instead, or the
	// place is sent whole, whichever is shorter (compile.Project).
	Strict bool
	// Inline sends every schema with its "$ref"s replaced by what they
	// name (compile.Inline), for servers that take no "$ref".
	Inline bool
	// MaxRetries is how often the client retries transport errors, 408,
	// 409, 429 and 5xx, with exponential backoff (honouring the endpoint's
	// retry-after-ms and retry-after headers). 0 means 2; -1 means none.
	MaxRetries int
	// Timeout bounds each attempt, from the request to the answer's last
	// byte; 0 means llm.CallTimeout.
	Timeout time.Duration
	// IdleTimeout bounds the wait for the next bytes of an answer; 0 means
	// llm.IdleTimeout.
	IdleTimeout time.Duration
	// MaxTokens caps the answer (max_completion_tokens); 0 leaves it to the
	// endpoint.
	MaxTokens int64
	// HTTPClient replaces the client's HTTP client (tests, proxies).
	HTTPClient *http.Client
}

// Provider fills schemas through an OpenAI-compatible Chat Completions
// endpoint. It is safe for concurrent use.
type Provider struct {
	opts   Options
	client oai.Client
}

// New returns a Provider.
func New(opts Options) *Provider {
	ro := llm.SDKOptions(llm.Connection{BaseURL: opts.BaseURL, APIKey: opts.APIKey, MaxRetries: opts.MaxRetries, Timeout: opts.Timeout, HTTPClient: opts.HTTPClient},
		option.WithBaseURL, option.WithAPIKey, option.WithMaxRetries, option.WithRequestTimeout, option.WithHTTPClient)
	ro = append(ro, option.WithMiddleware(errorEnvelope))
	return &Provider{opts: opts, client: oai.NewClient(ro...)}
}

// bound is middleware of a model call: its answer's body is bounded in
// time and size (llm.BoundAnswer).
func (p *Provider) bound(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	resp, err := next(req)
	return llm.BoundAnswer(resp, err, p.opts.IdleTimeout)
}

// System is the GenAI system of the provider, for traces: "openai".
func (p *Provider) System() string { return "openai" }

// Model is the model the provider asks for.
func (p *Provider) Model() string { return p.opts.Model }

// Endpoint is the base URL requests go to (llm.Endpointer).
func (p *Provider) Endpoint() string {
	if p.opts.BaseURL != "" {
		return p.opts.BaseURL
	}
	return "https://api.openai.com/v1/"
}

// Complete sends req and returns the model's answer: the message content in
// ModeJSONSchema, the forced call's arguments in ModeTool. An endpoint's
// error is an *llm.APIError; a cancelled ctx returns ctx's error.
func (p *Provider) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	c, err := p.build(req)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	// The body is sent as build made it, so that a batch's request file
	// holds the very bytes a direct call sends.
	resp, err := p.client.Chat.Completions.New(ctx, c.params, option.WithRequestBody("application/json", c.body), option.WithMiddleware(p.bound))
	latency := time.Since(start)
	if err != nil {
		return nil, apiError(ctx, err)
	}
	out, err := p.read(resp, c)
	if err != nil {
		return nil, err
	}
	out.Latency = latency
	return out, nil
}

// call is one request as the endpoint gets it, and what reading its answer
// needs.
type call struct {
	params oai.ChatCompletionNewParams // the typed params, a tool's schema left out
	body   []byte                      // the chat-completion body, compact JSON
	name   string                      // the schema's wire name
	proj   *compile.Projection         // the strict projection to undo; nil when not strict
}

// build makes the chat-completion body of req: the one Complete sends and
// a batch's request file holds.
func (p *Provider) build(req *llm.Request) (*call, error) {
	if p.opts.Model == "" {
		return nil, errors.New("openai: no model given (Options.Model)")
	}
	schemaBytes, system := []byte(req.Schema), req.System
	var proj *compile.Projection
	if p.opts.Strict || p.opts.Inline {
		s, err := jsonv.Parse(req.Schema)
		if err != nil {
			return nil, fmt.Errorf("openai: the schema is not valid JSON: %w", err)
		}
		if p.opts.Inline {
			s = compile.Inline(s)
		}
		if p.opts.Strict {
			proj = compile.Project(s, compile.ProjectOptions{Strict: true})
			s = proj.Schema
			// After the system text, before the conversation: the same for
			// every call of a chunk, so still the prompt's stable prefix.
			if notes := compile.NotesText(proj.Notes); notes != "" {
				system = strings.TrimSpace(system + "\n\n" + notes)
			}
		}
		schemaBytes = jsonv.Marshal(s)
	}
	name := llm.WireName(req.Name)
	params := oai.ChatCompletionNewParams{Model: shared.ChatModel(p.opts.Model)}
	if system != "" {
		params.Messages = append(params.Messages, oai.SystemMessage(system))
	}
	for _, m := range req.Messages {
		switch m.Role {
		case llm.RoleAssistant:
			params.Messages = append(params.Messages, oai.AssistantMessage(m.Content))
		default:
			params.Messages = append(params.Messages, oai.UserMessage(m.Content))
		}
	}
	if p.opts.MaxTokens > 0 {
		params.MaxCompletionTokens = oai.Int(p.opts.MaxTokens)
	}
	if req.Temperature != nil {
		params.Temperature = oai.Float(*req.Temperature)
	}
	toolMode := p.opts.Mode == ModeTool
	if toolMode {
		fn := shared.FunctionDefinitionParam{Name: name}
		if p.opts.Strict {
			fn.Strict = oai.Bool(true)
		}
		params.Tools = []oai.ChatCompletionToolUnionParam{oai.ChatCompletionFunctionTool(fn)}
		params.ToolChoice = oai.ToolChoiceOptionFunctionToolChoice(oai.ChatCompletionNamedToolChoiceFunctionParam{Name: name})
	} else {
		// Schema is an any: json.RawMessage goes out as it is.
		js := shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: name, Schema: json.RawMessage(schemaBytes)}
		if p.opts.Strict {
			js.Strict = oai.Bool(true)
		}
		params.ResponseFormat = oai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{JSONSchema: js}}
	}
	// The client encodes params so (MarshalJSON) before it sends them.
	body, err := params.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("openai: encode the request: %w", err)
	}
	if toolMode {
		// The SDK types parameters as a map, which would sort the keys: set
		// the raw bytes into the body instead, as option.WithJSONSet does.
		if body, err = sjson.SetBytes(body, "tools.0.function.parameters", json.RawMessage(schemaBytes)); err != nil {
			return nil, fmt.Errorf("openai: set the tool's parameters: %w", err)
		}
	}
	return &call{params: params, body: body, name: name, proj: proj}, nil
}

// read turns a chat completion into the Response for c (Latency aside):
// the answer text, strict mode undone, the model and the usage.
func (p *Provider) read(resp *oai.ChatCompletion, c *call) (*llm.Response, error) {
	content, err := p.answer(resp, c.name)
	if err != nil {
		return nil, err
	}
	if c.proj != nil {
		// Undo the strict changes; an answer that is not JSON is left for the
		// call path to report and repair.
		if v, err := jsonv.Parse([]byte(content)); err == nil {
			content = string(jsonv.Marshal(c.proj.Restore(v)))
		}
	}
	var reasons []string
	for _, ch := range resp.Choices {
		if ch.FinishReason != "" {
			reasons = append(reasons, ch.FinishReason)
		}
	}
	return &llm.Response{
		Content:       content,
		Model:         resp.Model,
		ID:            resp.ID,
		FinishReasons: reasons,
		Usage: llm.Usage{PromptTokens: resp.Usage.PromptTokens, CompletionTokens: resp.Usage.CompletionTokens,
			CachedPromptTokens: resp.Usage.PromptTokensDetails.CachedTokens},
	}, nil
}

// answer returns the answer text of resp, or an error saying why there is
// none. These are not APIErrors: the endpoint answered, the model did not.
func (p *Provider) answer(resp *oai.ChatCompletion, name string) (string, error) {
	if len(resp.Choices) == 0 {
		return "", fmt.Errorf("openai: model %s returned no choices", resp.Model)
	}
	choice := resp.Choices[0]
	msg := choice.Message
	if msg.Refusal != "" {
		return "", fmt.Errorf("openai: model %s refused: %s: %w", resp.Model, msg.Refusal, llm.ErrRefused)
	}
	if choice.FinishReason == "length" {
		// The answer is cut off mid-JSON; asking again with the same limit
		// would be cut off too.
		return "", fmt.Errorf("openai: model %s hit the token limit before the answer was complete (finish reason \"length\"); raise the max tokens or ask for less: %w", resp.Model, llm.ErrCutOff)
	}
	if p.opts.Mode == ModeTool {
		if len(msg.ToolCalls) == 0 {
			return "", fmt.Errorf("openai: model %s did not call the tool %q (finish reason %q)", resp.Model, name, choice.FinishReason)
		}
		// Only one tool is offered, so any call is to it; prefer an exact
		// name for servers that report several calls.
		call := msg.ToolCalls[0]
		for _, tc := range msg.ToolCalls {
			if tc.Function.Name == name {
				call = tc
				break
			}
		}
		if strings.TrimSpace(call.Function.Arguments) == "" {
			return "", fmt.Errorf("openai: model %s called the tool %q without arguments", resp.Model, name)
		}
		return call.Function.Arguments, nil
	}
	if strings.TrimSpace(msg.Content) == "" {
		return "", fmt.Errorf("openai: model %s answered nothing (finish reason %q)", resp.Model, choice.FinishReason)
	}
	return msg.Content, nil
}

// apiError turns the client's error into an *llm.APIError, or returns the
// context's error when the caller gave up.
func apiError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		// Whatever failed, it failed because the caller gave up.
		return fmt.Errorf("openai: %w", ctx.Err())
	}
	var ae *oai.Error
	if errors.As(err, &ae) {
		msg := ae.Message
		if msg == "" {
			msg = http.StatusText(ae.StatusCode)
		}
		if ae.Response != nil {
			if id := ae.Response.Header.Get("X-Request-Id"); id != "" {
				msg += " (request " + id + ")"
			}
		}
		return &llm.APIError{
			Provider:   "openai",
			StatusCode: ae.StatusCode,
			Message:    msg,
			Retryable:  ae.StatusCode == http.StatusTooManyRequests || ae.StatusCode >= 500,
			Err:        err,
			TooLarge:   llm.TooLargeMessage(ae.StatusCode, msg+" "+ae.Code),
		}
	}
	var ne net.Error
	retryable := errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.ErrUnexpectedEOF)
	return &llm.APIError{Provider: "openai", Message: err.Error(), Retryable: retryable, Err: err}
}

// errorEnvelope is client middleware that puts an error answer that is not
// in OpenAI's shape, {"error": {"message": …}}, into that shape, so that the
// client keeps its status and message. OpenAI-compatible servers differ
// here: vLLM answers {"message": …} at the top level, some servers
// {"error": "text"}, proxies plain text or HTML; the client would report
// the first as a bare status and fail to read the second.
func errorEnvelope(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	res, err := next(req)
	if err != nil || res.StatusCode < 400 || res.Body == nil {
		return res, err
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		return nil, err
	}
	if msg, ok := foreignErrorMessage(body); ok {
		env, _ := json.Marshal(map[string]map[string]string{"error": {"message": msg}})
		body = env
		res.Header.Set("Content-Type", "application/json")
		res.ContentLength = int64(len(body))
	}
	res.Body = io.NopCloser(bytes.NewReader(body))
	return res, nil
}

// foreignErrorMessage returns the message of an error body that is not in
// OpenAI's shape, and false for one that is.
func foreignErrorMessage(body []byte) (string, bool) {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  string          `json:"detail"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		// Not JSON: a proxy's page. Its text is the best message there is.
		text := strings.Join(strings.Fields(string(body)), " ")
		if len(text) > 300 {
			text = text[:300] + "…"
		}
		return text, true
	}
	if bytes.HasPrefix(bytes.TrimSpace(v.Error), []byte("{")) {
		return "", false
	}
	var s string
	if json.Unmarshal(v.Error, &s) == nil && s != "" {
		return s, true
	}
	if v.Message != "" {
		return v.Message, true
	}
	return v.Detail, true
}
