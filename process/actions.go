package process

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

// ActionFunc is a server action on JSON: the input is built from the step's
// references, the output is validated against the step's output schema.
type ActionFunc func(ctx context.Context, input jsonv.Value) (jsonv.Value, error)

// Action is a registered server action.
type Action struct {
	Name string
	Run  ActionFunc
	// Retry is Temporal's retry policy for the action; nil means
	// DefaultRetry. Errors made with NonRetryable are never retried.
	Retry *temporal.RetryPolicy
	// Timeout bounds one attempt; 0 means DefaultActionTimeout.
	Timeout time.Duration
}

// DefaultRetry retries an action with exponential backoff from one second
// to one minute, at most ten times.
var DefaultRetry = &temporal.RetryPolicy{
	InitialInterval:    time.Second,
	BackoffCoefficient: 2,
	MaximumInterval:    time.Minute,
	MaximumAttempts:    10,
}

// DefaultActionTimeout bounds one attempt of an action.
const DefaultActionTimeout = 5 * time.Minute

// Actions is a set of server actions by name. The zero value is empty and
// ready to use; it is safe for concurrent use.
type Actions struct {
	mu sync.RWMutex
	m  map[string]*Action
}

// Register adds an action. A second action of the same name is an error.
func (a *Actions) Register(act Action) error {
	if act.Name == "" || act.Run == nil {
		return errors.New("process: an action needs a name and a function")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m = make(map[string]*Action)
	}
	if _, dup := a.m[act.Name]; dup {
		return fmt.Errorf("process: action %q is registered twice", act.Name)
	}
	a.m[act.Name] = &act
	return nil
}

// ActionOptions are the options of RegisterFunc.
type ActionOptions struct {
	Retry   *temporal.RetryPolicy
	Timeout time.Duration
}

// RegisterFunc registers a typed Go function as an action: its input is
// decoded from the step's JSON with encoding/json and its result encoded
// back. Use Actions.Register with an ActionFunc where member order must be
// kept.
func RegisterFunc[In, Out any](a *Actions, name string, fn func(context.Context, In) (Out, error), opts ActionOptions) error {
	run := func(ctx context.Context, input jsonv.Value) (jsonv.Value, error) {
		var in In
		if err := json.Unmarshal(jsonv.Marshal(input), &in); err != nil {
			return jsonv.Value{}, NonRetryable(fmt.Errorf("action %s: input does not fit %T: %w", name, in, err))
		}
		out, err := fn(ctx, in)
		if err != nil {
			return jsonv.Value{}, err
		}
		b, err := json.Marshal(out)
		if err != nil {
			return jsonv.Value{}, NonRetryable(fmt.Errorf("action %s: encode result: %w", name, err))
		}
		return jsonv.Parse(b)
	}
	return a.Register(Action{Name: name, Run: run, Retry: opts.Retry, Timeout: opts.Timeout})
}

// Lookup returns the action of that name.
func (a *Actions) Lookup(name string) (*Action, bool) {
	if a == nil {
		return nil, false
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	act, ok := a.m[name]
	return act, ok
}

// Resolve returns the action a step's action name runs: the action of that
// name, or the one compile.MatchAction matches it to (a pipeline step
// "step2_fetch_availability" runs FetchAvailability).
func (a *Actions) Resolve(name string) (*Action, bool) {
	if act, ok := a.Lookup(name); ok {
		return act, true
	}
	if m, ok := compile.MatchAction(name, a.Names()); ok {
		return a.Lookup(m)
	}
	return nil, false
}

// Names returns the registered names, sorted: the compiler's input
// (compile.Options.Actions).
func (a *Actions) Names() []string {
	if a == nil {
		return []string{}
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	names := make([]string, 0, len(a.m))
	for n := range a.m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// NonRetryable marks err so that the action is not retried: the input is
// wrong, and trying again will not help.
func NonRetryable(err error) error {
	return temporal.NewNonRetryableApplicationError(err.Error(), "NonRetryable", err)
}

// HTTPAction is an action that POSTs its input as JSON to an endpoint and
// takes the JSON reply as its output. A 2xx reply succeeds; 429, 5xx and
// transport errors are retried; any other 4xx fails at once. The call's
// idempotency key (IdempotencyKey) goes in the Idempotency-Key header, the
// same on every retry: an endpoint that honours it applies the effect once.
type HTTPAction struct {
	URL     string
	Headers map[string]string
	Client  *http.Client // nil: a client with a 30 s timeout
}

// Run calls the endpoint.
func (h HTTPAction) Run(ctx context.Context, input jsonv.Value) (jsonv.Value, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(jsonv.Marshal(input)))
	if err != nil {
		return jsonv.Value{}, NonRetryable(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if key := IdempotencyKey(ctx); key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	for k, v := range h.Headers {
		req.Header.Set(k, os.ExpandEnv(v))
	}
	c := h.Client
	if c == nil {
		c = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := c.Do(req)
	if err != nil {
		return jsonv.Value{}, fmt.Errorf("POST %s: %w", h.URL, err) // retried
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return jsonv.Value{}, fmt.Errorf("POST %s: read the reply: %w", h.URL, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		err := fmt.Errorf("POST %s: %s: %s", h.URL, resp.Status, excerpt(body))
		if resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests {
			return jsonv.Value{}, NonRetryable(err)
		}
		return jsonv.Value{}, err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return jsonv.NullValue(), nil
	}
	v, err := jsonv.Parse(body)
	if err != nil {
		return jsonv.Value{}, NonRetryable(fmt.Errorf("POST %s: the reply is not JSON: %w", h.URL, err))
	}
	return v, nil
}

func excerpt(b []byte) string {
	s := strings.TrimSpace(string(b))
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	if s == "" {
		return "(empty body)"
	}
	return s
}

// Bounds of an actions file's settings: a typo such as 4294967296 attempts
// (which wrapped to 0, unlimited) or a timeout of days is refused.
const (
	MaxActionAttempts = 1000
	MaxActionTimeout  = 24 * time.Hour
)

// validHeader reports whether name is an HTTP header name (an RFC 9110
// token).
func validHeader(name string) bool {
	if name == "" {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r)) {
			return false
		}
	}
	return true
}

// LoadActions reads an actions file: a JSON object from action names to
// HTTP endpoints, each a URL or an object
//
//	{"url": "http://…", "headers": {"Authorization": "Bearer $TOKEN"}, "timeout": "30s", "maxAttempts": 5}
//
// Header values expand $VARIABLES from the environment. Every problem is
// reported with the file and JSON path.
func LoadActions(path string) ([]Action, error) {
	doc, err := schema.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var errs schema.ErrorList
	if doc.Object() == nil {
		errs.Add(path, "", "an actions file is a JSON object from action names to endpoints, not %s", doc.Kind())
		return nil, errs
	}
	var acts []Action
	for name, v := range doc.Members() {
		at := jsonv.PointerTo(name)
		var h HTTPAction
		act := Action{Name: name}
		switch v.Kind() {
		case jsonv.KindString:
			h.URL = v.Str()
		case jsonv.KindObject:
			h.URL = v.Lookup("url").Str()
			if u, ok := v.Get("url"); ok && u.Kind() != jsonv.KindString {
				errs.Add(path, at.Append("url"), "url must be a string, not %s", u.Kind())
			}
			for k, hv := range v.Lookup("headers").Members() {
				if hv.Kind() != jsonv.KindString || !validHeader(k) {
					errs.Add(path, at.Append("headers").Append(k), "a header is a name (letters, digits, -) and a string value")
					continue
				}
				if h.Headers == nil {
					h.Headers = map[string]string{}
				}
				h.Headers[k] = hv.Str()
			}
			if t, ok := v.Get("timeout"); ok {
				d, err := time.ParseDuration(t.Str())
				if err != nil || d <= 0 || d > MaxActionTimeout {
					errs.Add(path, at.Append("timeout"), "timeout must be a duration from 1ms to %s, such as \"30s\", not %s", MaxActionTimeout, jsonv.Marshal(t))
				}
				act.Timeout = d
				h.Client = &http.Client{Timeout: d}
			}
			if m, ok := v.Get("maxAttempts"); ok {
				n, isInt := m.Int()
				if !isInt || n < 1 || n > MaxActionAttempts {
					errs.Add(path, at.Append("maxAttempts"), "maxAttempts must be an integer from 1 to %d, not %s", MaxActionAttempts, jsonv.Marshal(m))
					n = 1
				}
				r := *DefaultRetry
				r.MaximumAttempts = int32(n)
				act.Retry = &r
			}
			for k := range v.Members() {
				if !slices.Contains([]string{"url", "headers", "timeout", "maxAttempts"}, k) {
					errs.Add(path, at.Append(k), "unknown key %q (want url, headers, timeout, maxAttempts)", k)
				}
			}
		default:
			errs.Add(path, at, "action %q must be a URL or an object with \"url\", not %s", name, v.Kind())
			continue
		}
		if u, err := url.Parse(h.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs.Add(path, at, "action %q needs an http(s) URL, not %q", name, h.URL)
			continue
		}
		act.Run = h.Run
		acts = append(acts, act)
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return acts, nil
}
