package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/tidwall/sjson"

	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
)

// Options configures a Provider. The zero value talks to Anthropic with the
// client's own credentials ($ANTHROPIC_API_KEY and the like) and needs only
// a Model.
type Options struct {
	Model   string // required: "claude-sonnet-4-5", …
	BaseURL string // default https://api.anthropic.com/
	APIKey  string // default: the client's own credential lookup
	// MaxTokens caps the answer; 0 means 4096. The Messages API requires a
	// cap.
	MaxTokens int64
	// MaxRetries is how often the client retries transport errors, 408,
	// 409, 429 and 5xx (529 overloaded included), with exponential backoff
	// (honouring the endpoint's retry-after-ms and retry-after headers).
	// 0 means 2; -1 means none.
	MaxRetries int
	// Timeout bounds each attempt, from the request to the answer's last
	// byte; 0 means llm.CallTimeout.
	Timeout time.Duration
	// IdleTimeout bounds the wait for the next bytes of an answer; 0 means
	// llm.IdleTimeout.
	IdleTimeout time.Duration
	// HTTPClient replaces the client's HTTP client (tests, proxies).
	HTTPClient *http.Client
	// Inline sends every schema with its "$ref"s replaced by what they
	// name (compile.Inline), for proxies that take no "$ref".
	Inline bool
	// CacheMinTokens is the shortest prefix of a request — its tool (the
	// schema) and system text, in tokens estimated as bytes / 4 — that is
	// marked for Anthropic's prompt cache (cache_control); 0 is
	// DefaultCacheMinTokens, a negative value never marks one.
	CacheMinTokens int
}

// DefaultMaxTokens is the answer cap when Options.MaxTokens is 0.
const DefaultMaxTokens = 4096

// DefaultCacheMinTokens is the shortest prefix (tool and system text, in
// tokens, estimated as bytes / 4) marked for the prompt cache when
// Options.CacheMinTokens is 0: Anthropic's minimum for its Sonnet and Opus
// models. Haiku models cache from 2,048 tokens; set it for them.
const DefaultCacheMinTokens = 1024

// cacheMin is the shortest prefix marked for the prompt cache.
func (p *Provider) cacheMin() int {
	if p.opts.CacheMinTokens != 0 {
		return p.opts.CacheMinTokens
	}
	return DefaultCacheMinTokens
}

// Provider fills schemas through Anthropic's Messages API. It is safe for
// concurrent use.
type Provider struct {
	opts   Options
	client sdk.Client
}

// New returns a Provider.
func New(opts Options) *Provider {
	ro := llm.SDKOptions(llm.Connection{BaseURL: opts.BaseURL, APIKey: opts.APIKey, MaxRetries: opts.MaxRetries, Timeout: opts.Timeout, HTTPClient: opts.HTTPClient},
		option.WithBaseURL, option.WithAPIKey, option.WithMaxRetries, option.WithRequestTimeout, option.WithHTTPClient)
	if opts.MaxTokens <= 0 {
		opts.MaxTokens = DefaultMaxTokens
	}
	return &Provider{opts: opts, client: sdk.NewClient(ro...)}
}

// bound is middleware of a model call: its answer's body is bounded in
// time and size (llm.BoundAnswer).
func (p *Provider) bound(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	resp, err := next(req)
	return llm.BoundAnswer(resp, err, p.opts.IdleTimeout)
}

// System is the GenAI system of the provider, for traces: "anthropic".
func (p *Provider) System() string { return "anthropic" }

// Model is the model the provider asks for.
func (p *Provider) Model() string { return p.opts.Model }

// Endpoint is the base URL requests go to (llm.Endpointer).
func (p *Provider) Endpoint() string {
	if p.opts.BaseURL != "" {
		return p.opts.BaseURL
	}
	return "https://api.anthropic.com/"
}

// Complete sends req with its schema as the input schema of one tool the
// model must call, and returns the call's input as JSON text. An endpoint's
// error is an *llm.APIError; a cancelled ctx returns ctx's error.
func (p *Provider) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	c, err := p.build(req)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	// params tell the client the request's timeout; the body goes as build
	// made it, so that a batch's request holds the very bytes a direct call
	// sends.
	msg, err := p.client.Messages.New(ctx, c.params, option.WithRequestBody("application/json", c.body), option.WithMiddleware(p.bound))
	latency := time.Since(start)
	if err != nil {
		return nil, apiError(ctx, err)
	}
	out, err := read(msg, c.name)
	if err != nil {
		return nil, err
	}
	out.Latency = latency
	return out, nil
}

// call is one request as the endpoint gets it.
type call struct {
	params sdk.MessageNewParams // the typed params, the schema left out
	body   []byte               // the Messages request body, schema included
	name   string               // the tool's name
}

// build makes the Messages request body of req: the one Complete sends and
// a batch's request holds as its params.
func (p *Provider) build(req *llm.Request) (*call, error) {
	if p.opts.Model == "" {
		return nil, errors.New("anthropic: no model given (Options.Model)")
	}
	schema, err := objectSchema(req.Schema, p.opts.Inline)
	if err != nil {
		return nil, err
	}
	name := llm.WireName(req.Name)
	params := sdk.MessageNewParams{
		Model:     sdk.Model(p.opts.Model),
		MaxTokens: p.opts.MaxTokens,
		// The typed input_schema would be encoded through Go maps, which
		// sort keys; it is replaced by the raw bytes below.
		Tools:      []sdk.ToolUnionParam{sdk.ToolUnionParamOfTool(sdk.ToolInputSchemaParam{}, name)},
		ToolChoice: sdk.ToolChoiceParamOfTool(name),
	}
	if req.System != "" {
		params.System = []sdk.TextBlockParam{{Text: req.System}}
	}
	if req.Temperature != nil {
		params.Temperature = sdk.Float(*req.Temperature)
	}
	for _, m := range req.Messages {
		block := sdk.NewTextBlock(m.Content)
		if m.Role == llm.RoleAssistant {
			params.Messages = append(params.Messages, sdk.NewAssistantMessage(block))
		} else {
			params.Messages = append(params.Messages, sdk.NewUserMessage(block))
		}
	}
	// The tool (the schema) and the system text come first in Anthropic's
	// prompt and are the same for every call of a chunk, a batch's groups
	// included: a cache breakpoint after them lets later calls read them
	// from the prompt cache, when they are long enough to be cached at all
	// (a breakpoint on a shorter prefix is ignored, so none is set).
	toolBreakpoint := false
	if min := p.cacheMin(); min > 0 && (len(schema)+len(req.System))/4 >= min {
		if len(params.System) > 0 {
			params.System[len(params.System)-1].CacheControl = sdk.NewCacheControlEphemeralParam()
		} else {
			toolBreakpoint = true
		}
	}
	// The client encodes params so (MarshalJSON) before it sends them; the
	// raw sets are those option.WithJSONSet would make.
	body, err := params.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("anthropic: encode the request: %w", err)
	}
	if body, err = sjson.SetBytes(body, "tools.0.input_schema", json.RawMessage(schema)); err != nil {
		return nil, fmt.Errorf("anthropic: set the tool's input schema: %w", err)
	}
	if toolBreakpoint {
		if body, err = sjson.SetBytes(body, "tools.0.cache_control", map[string]string{"type": "ephemeral"}); err != nil {
			return nil, fmt.Errorf("anthropic: set the tool's cache breakpoint: %w", err)
		}
	}
	return &call{params: params, body: body, name: name}, nil
}

// read turns a message into the Response (Latency aside): its tool call's
// input, the model and the usage.
func read(msg *sdk.Message, name string) (*llm.Response, error) {
	content, err := answer(msg, name)
	if err != nil {
		return nil, err
	}
	var reasons []string
	if msg.StopReason != "" {
		reasons = []string{string(msg.StopReason)}
	}
	return &llm.Response{
		Content:       content,
		Model:         string(msg.Model),
		ID:            msg.ID,
		FinishReasons: reasons,
		// Anthropic's input_tokens leave out those read from or written to
		// its prompt cache: the prompt is all three.
		Usage: llm.Usage{PromptTokens: msg.Usage.InputTokens + msg.Usage.CacheReadInputTokens + msg.Usage.CacheCreationInputTokens,
			CompletionTokens: msg.Usage.OutputTokens, CachedPromptTokens: msg.Usage.CacheReadInputTokens, CacheWriteTokens: msg.Usage.CacheCreationInputTokens},
	}, nil
}

// answer returns the input of msg's tool call, or an error saying why there
// is none. These are not APIErrors: the endpoint answered, the model did not.
func answer(msg *sdk.Message, name string) (string, error) {
	switch msg.StopReason {
	case sdk.StopReasonMaxTokens:
		// The tool input is cut off; asking again with the same cap would
		// be cut off too.
		return "", fmt.Errorf("anthropic: model %s hit the token limit before the answer was complete (stop reason \"max_tokens\"); raise the max tokens or ask for less: %w", msg.Model, llm.ErrCutOff)
	case sdk.StopReasonModelContextWindowExceeded:
		return "", fmt.Errorf("anthropic: model %s ran out of its context window (stop reason %q): %w", msg.Model, msg.StopReason, llm.ErrCutOff)
	case sdk.StopReasonRefusal:
		return "", fmt.Errorf("anthropic: model %s refused (stop reason \"refusal\"): %w", msg.Model, llm.ErrRefused)
	}
	var input json.RawMessage
	for _, b := range msg.Content {
		if b.Type != "tool_use" {
			continue
		}
		// Only one tool is offered; prefer an exact name all the same.
		if input == nil || b.Name == name {
			input = b.Input
		}
		if b.Name == name {
			break
		}
	}
	if input == nil {
		return "", fmt.Errorf("anthropic: model %s did not call the tool %q (stop reason %q)", msg.Model, name, msg.StopReason)
	}
	return string(input), nil
}

// objectSchema returns the schema's bytes (its references replaced by
// what they name when inline), with "type": "object" put first when the
// schema names no type: the Messages API requires an object schema for a
// tool's input.
func objectSchema(raw []byte, inline bool) ([]byte, error) {
	s, err := jsonv.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("anthropic: the schema is not valid JSON: %w", err)
	}
	if inline {
		s = compile.Inline(s)
		raw = jsonv.Marshal(s)
	}
	o := s.Object()
	if o == nil {
		return nil, fmt.Errorf("anthropic: the schema must be a JSON object, not %s", s.Kind())
	}
	if t, ok := o.Get("type"); ok {
		if t.Str() != "object" {
			return nil, fmt.Errorf("anthropic: a tool's input schema must have \"type\": \"object\", not %s", t)
		}
		return raw, nil
	}
	o = o.Clone()
	o.Insert(0, "type", jsonv.StringValue("object"))
	return jsonv.Marshal(o.Value()), nil
}

// apiError turns the client's error into an *llm.APIError, or returns the
// context's error when the caller gave up.
func apiError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		// Whatever failed, it failed because the caller gave up.
		return fmt.Errorf("anthropic: %w", ctx.Err())
	}
	var ae *sdk.Error
	if errors.As(err, &ae) {
		msg := errorMessage(ae)
		if ae.RequestID != "" {
			msg += " (request " + ae.RequestID + ")"
		}
		return &llm.APIError{
			Provider:   "anthropic",
			StatusCode: ae.StatusCode,
			Message:    msg,
			Retryable:  ae.StatusCode == http.StatusTooManyRequests || ae.StatusCode >= 500,
			Err:        err,
			TooLarge:   llm.TooLargeMessage(ae.StatusCode, msg),
		}
	}
	var ne net.Error
	retryable := errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.ErrUnexpectedEOF)
	return &llm.APIError{Provider: "anthropic", Message: err.Error(), Retryable: retryable, Err: err}
}

// errorMessage is the message of an error answer: "type: message" from the
// API's {"type": "error", "error": {…}} body, else the body's text (a
// proxy's page), else the status text.
func errorMessage(ae *sdk.Error) string {
	raw := ae.RawJSON()
	var body struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(raw), &body) == nil {
		switch {
		case body.Error.Message != "" && body.Error.Type != "":
			return body.Error.Type + ": " + body.Error.Message
		case body.Error.Message != "":
			return body.Error.Message
		}
		return http.StatusText(ae.StatusCode)
	}
	text := strings.Join(strings.Fields(raw), " ")
	if len(text) > 300 {
		text = text[:300] + "…"
	}
	if text == "" {
		return http.StatusText(ae.StatusCode)
	}
	return text
}
