package action

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"go.temporal.io/sdk/temporal"

	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

// Func is a server action on JSON: the input is built from the step's
// references, the output is validated against the step's output schema.
type Func func(ctx context.Context, input jsonv.Value) (jsonv.Value, error)

// Action is a registered server action.
type Action struct {
	Name string
	Run  Func
	// Retry is Temporal's retry policy for the action; nil means
	// DefaultRetry. Errors made with NonRetryable are never retried.
	Retry *temporal.RetryPolicy
	// Timeout bounds one attempt; 0 means DefaultTimeout.
	Timeout time.Duration
	// Unwrap gives the action, at a SERVER step, the values the step
	// references rather than the minimal context that holds them under
	// their paths: the one value ({"llmContext1": {"fetchAvailability": V}}
	// gives V), or the members of several objects merged (Unwrapped). The
	// action takes its arguments flat, as an MCP tool does.
	Unwrap bool
	// InputSchema, when set, returns the JSON Schema the action's input
	// must fit (an MCP tool's input schema): Client.Start checks every step
	// that runs the action against it before the process starts.
	InputSchema func(ctx context.Context) (jsonv.Value, error)
	// ReadOnly says the action only reads — it changes nothing outside the
	// process (a calendar's free slots, a lookup). The MCP server tells its
	// clients that a process whose actions all read is not destructive
	// (mcpserve); an action that does not say so is taken to have effects.
	ReadOnly bool
}

// DefaultRetry retries an action with exponential backoff from one second
// to one minute, at most ten times.
var DefaultRetry = &temporal.RetryPolicy{
	InitialInterval:    time.Second,
	BackoffCoefficient: 2,
	MaximumInterval:    time.Minute,
	MaximumAttempts:    10,
}

// DefaultTimeout bounds one attempt of an action.
const DefaultTimeout = 5 * time.Minute

// Registry is a set of server actions by name. The zero value is empty and
// ready to use; it is safe for concurrent use.
type Registry struct {
	mu sync.RWMutex
	m  map[string]*Action
}

// Register adds an action. A second action of the same name is an error.
func (a *Registry) Register(act Action) error {
	if act.Name == "" || act.Run == nil {
		return errors.New("action: an action needs a name and a function")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m = make(map[string]*Action)
	}
	if _, dup := a.m[act.Name]; dup {
		return fmt.Errorf("action: action %q is registered twice", act.Name)
	}
	a.m[act.Name] = &act
	return nil
}

// Options are the options of RegisterFunc.
type Options struct {
	Retry   *temporal.RetryPolicy
	Timeout time.Duration
}

// RegisterFunc registers a typed Go function as an action: its input is
// decoded from the step's JSON with encoding/json and its result encoded
// back. Use Registry.Register with a Func where member order must be
// kept.
func RegisterFunc[In, Out any](a *Registry, name string, fn func(context.Context, In) (Out, error), opts Options) error {
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
func (a *Registry) Lookup(name string) (*Action, bool) {
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
func (a *Registry) Resolve(name string) (*Action, bool) {
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
func (a *Registry) Names() []string {
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

// ErrTypeNonRetryable is the type (temporal.ApplicationError.Type) of an
// error made with NonRetryable.
const ErrTypeNonRetryable = "NonRetryable"

// NonRetryable marks err so that the action is not retried: the input is
// wrong, and trying again will not help.
func NonRetryable(err error) error {
	return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeNonRetryable, err)
}

// HTTP is an action that POSTs its input as JSON to an endpoint and
// takes the JSON reply as its output. A 2xx reply succeeds; 429, 5xx and
// transport errors are retried; any other 4xx fails at once. The call's
// idempotency key (IdempotencyKey) goes in the Idempotency-Key header, the
// same on every retry: an endpoint that honours it applies the effect once.
type HTTP struct {
	URL     string
	Headers map[string]string
	Client  *http.Client // nil: a client with a 30 s timeout
}

// Run calls the endpoint.
func (h HTTP) Run(ctx context.Context, input jsonv.Value) (jsonv.Value, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(jsonv.Marshal(input)))
	if err != nil {
		return jsonv.Value{}, NonRetryable(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	for k, v := range h.Headers {
		req.Header.Set(k, os.ExpandEnv(v))
	}
	if key := IdempotencyKey(ctx); key != "" {
		req.Header.Set("Idempotency-Key", key) // the call's own, whatever Headers say
	}
	c := h.Client
	if c == nil {
		c = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := c.Do(req)
	if errors.Is(err, errLinkLocal) {
		return jsonv.Value{}, NonRetryable(fmt.Errorf("POST %s: %w", h.URL, err))
	}
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
	MaxAttempts = 1000
	MaxTimeout  = 24 * time.Hour
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

// Load reads an actions file: a JSON object from action names to
// HTTP endpoints or MCP tools. An HTTP endpoint is a URL or an object
//
//	{"url": "http://…", "headers": {"Authorization": "Bearer $TOKEN"}, "timeout": "30s", "maxAttempts": 5}
//
// and an MCP tool names its server — a command that speaks MCP on stdio,
// or the URL of a streamable HTTP endpoint — and the tool:
//
//	{"mcp": {"command": "calendar-mcp", "args": ["-v"], "env": {"KEY": "$KEY"}, "dir": "…"}, "tool": "find_slots", "timeout": "30s", "maxAttempts": 5}
//	{"mcp": {"url": "https://…/mcp", "headers": {"Authorization": "Bearer $TOKEN"}}, "tool": "send_invitation"}
//	{"mcp": "https://…/mcp", "tool": "send_invitation"}
//
// A command runs in "dir", relative to the file's directory, or in the
// file's directory itself. Header and environment values expand
// $VARIABLES from the environment. The tools' sessions are kept in pool,
// one per server, shared by every entry that names the same server; nil
// means a pool of the file's own, whose sessions end with the program.
// Every problem is reported with the file and JSON path.
func Load(path string, pool *MCPPool) ([]Action, error) {
	doc, err := schema.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var errs schema.ErrorList
	if doc.Object() == nil {
		errs.Add(path, "", "an actions file is a JSON object from action names to endpoints, not %s", doc.Kind())
		return nil, errs
	}
	if pool == nil {
		pool = &MCPPool{}
	}
	var acts []Action
	for name, v := range doc.Members() {
		at := jsonv.PointerTo(name)
		if !validName(name) {
			errs.Add(path, at, "action name %q: a name is printable text without spaces or control characters, at most %d bytes", name, maxNameLength)
			continue
		}
		var act Action
		switch v.Kind() {
		case jsonv.KindString:
			act = Action{Name: name, Run: HTTP{URL: v.Str(), Client: guardedClient(0)}.Run}
			checkURL(&errs, path, at, name, v.Str(), false)
		case jsonv.KindObject:
			timeout, retry := loadRetry(&errs, path, at, v)
			if _, ok := v.Get("mcp"); ok {
				act = loadMCPTool(&errs, path, at, name, v, pool)
			} else {
				act = loadHTTPAction(&errs, path, at, name, v, timeout)
			}
			act.Timeout, act.Retry = timeout, retry
		default:
			errs.Add(path, at, "action %q must be a URL or an object with \"url\" or \"mcp\", not %s", name, v.Kind())
			continue
		}
		acts = append(acts, act)
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return acts, nil
}

// onlyKeys reports the members of v not in keys.
func onlyKeys(errs *schema.ErrorList, path string, at jsonv.Pointer, v jsonv.Value, keys ...string) {
	for k := range v.Members() {
		if !slices.Contains(keys, k) {
			errs.Add(path, at.Append(k), "unknown key %q (want %s)", k, strings.Join(keys, ", "))
		}
	}
}

// loadStrings reads an object of strings, such as headers or an
// environment; header names must be HTTP tokens.
func loadStrings(errs *schema.ErrorList, path string, at jsonv.Pointer, v jsonv.Value, headers bool) map[string]string {
	var out map[string]string
	if !v.IsNull() && v.Object() == nil {
		errs.Add(path, at, "must be an object of strings, not %s", v.Kind())
		return nil
	}
	for k, hv := range v.Members() {
		if headers && !checkHeader(errs, path, at.Append(k), k) {
			continue
		}
		if hv.Kind() != jsonv.KindString || (headers && !validHeader(k)) || !validValue(hv.Str(), headers) || (!headers && !validValue(k, false)) {
			what := "an environment variable is a name and a string value, neither with a NUL"
			if headers {
				what = "a header is a name (letters, digits, -) and a string value without control characters (CR, LF, NUL)"
			}
			errs.Add(path, at.Append(k), "%s", what)
			continue
		}
		checkValue(errs, path, at.Append(k), hv.Str())
		if out == nil {
			out = map[string]string{}
		}
		out[k] = hv.Str()
	}
	return out
}

// maxNameLength bounds an action's name.
const maxNameLength = 200

// CheckName says why name cannot name an action, or nil when it can: a
// name is printable text without spaces (no control, bidirectional or
// invisible character), not empty, at most 200 bytes.
func CheckName(name string) error {
	if !validName(name) {
		return fmt.Errorf("%q is no action name: give printable text without spaces, 1 to %d bytes", name, maxNameLength)
	}
	return nil
}

// validName reports whether name can name an action: printable, without
// spaces, not empty, at most maxNameLength bytes.
func validName(name string) bool {
	if name == "" || len(name) > maxNameLength || !utf8.ValidString(name) {
		return false
	}
	for _, c := range name {
		if !unicode.IsPrint(c) || unicode.IsSpace(c) {
			return false
		}
	}
	return true
}

// validValue reports whether s may be a header's value (no control
// character but a tab: a CR or LF would start another header) or, for an
// environment, a variable's name or value (no NUL).
func validValue(s string, header bool) bool {
	for _, c := range s {
		if c == 0 || (header && c != '\t' && (c < 0x20 || c == 0x7f)) {
			return false
		}
	}
	return true
}

// loadHTTPAction reads an HTTP endpoint entry.
func loadHTTPAction(errs *schema.ErrorList, path string, at jsonv.Pointer, name string, v jsonv.Value, timeout time.Duration) Action {
	h := HTTP{URL: v.Lookup("url").Str()}
	if u, ok := v.Get("url"); ok && u.Kind() != jsonv.KindString {
		errs.Add(path, at.Append("url"), "url must be a string, not %s", u.Kind())
	}
	h.Headers = loadStrings(errs, path, at.Append("headers"), v.Lookup("headers"), true)
	allow := allowLinkLocal(errs, path, at, v)
	h.Client = guardedClient(timeout)
	if allow {
		h.Client = &http.Client{Timeout: cmp.Or(timeout, 30*time.Second)}
	}
	onlyKeys(errs, path, at, v, "url", "headers", "timeout", "maxAttempts", "allowLinkLocal")
	checkURL(errs, path, at, name, h.URL, allow)
	return Action{Name: name, Run: h.Run}
}

// loadMCPTool reads an MCP tool entry.
func loadMCPTool(errs *schema.ErrorList, path string, at jsonv.Pointer, name string, v jsonv.Value, pool *MCPPool) Action {
	t := &MCPTool{Tool: v.Lookup("tool").Str(), Pool: pool}
	if tv, ok := v.Get("tool"); !ok || tv.Kind() != jsonv.KindString || tv.Str() == "" {
		errs.Add(path, at.Append("tool"), "an MCP action names its tool: \"tool\": \"name\"")
	}
	m := v.Lookup("mcp")
	mat := at.Append("mcp")
	switch m.Kind() {
	case jsonv.KindString:
		t.Server.URL = m.Str()
	case jsonv.KindObject:
		for _, k := range []string{"command", "url", "dir"} {
			if kv, ok := m.Get(k); ok && kv.Kind() != jsonv.KindString {
				errs.Add(path, mat.Append(k), "%s must be a string, not %s", k, kv.Kind())
			}
		}
		t.Server.Command, t.Server.URL, t.Server.Dir = m.Lookup("command").Str(), m.Lookup("url").Str(), m.Lookup("dir").Str()
		if args, ok := m.Get("args"); ok {
			if args.Kind() != jsonv.KindArray || len(schema.Strings(args)) != args.Len() {
				errs.Add(path, mat.Append("args"), "args must be an array of strings")
			}
			t.Server.Args = schema.Strings(args)
		}
		t.Server.Env = loadStrings(errs, path, mat.Append("env"), m.Lookup("env"), false)
		t.Server.Headers = loadStrings(errs, path, mat.Append("headers"), m.Lookup("headers"), true)
		onlyKeys(errs, path, mat, m, "command", "args", "env", "dir", "url", "headers")
	default:
		errs.Add(path, mat, "mcp is the server: {\"command\": …} for stdio, {\"url\": …} or a URL for streamable HTTP; not %s", m.Kind())
	}
	switch {
	case (t.Server.Command == "") == (t.Server.URL == "") && m.Kind() == jsonv.KindObject:
		errs.Add(path, mat, "an MCP server is a command (stdio) or a url (streamable HTTP): give exactly one")
	case t.Server.URL != "":
		checkURL(errs, path, mat, name, t.Server.URL, allowLinkLocal(errs, path, at, v))
	default:
		// A command runs where the actions file is, unless dir says where.
		base := filepath.Dir(path)
		if !filepath.IsAbs(t.Server.Dir) {
			t.Server.Dir = filepath.Join(base, t.Server.Dir)
		}
	}
	onlyKeys(errs, path, at, v, "mcp", "tool", "timeout", "maxAttempts", "allowLinkLocal")
	return t.Action(name)
}

// allowLinkLocal reads an entry's "allowLinkLocal": whether its URL may
// be a link-local or metadata address.
func allowLinkLocal(errs *schema.ErrorList, path string, at jsonv.Pointer, v jsonv.Value) bool {
	a, ok := v.Get("allowLinkLocal")
	if !ok {
		return false
	}
	if a.Kind() != jsonv.KindBool {
		errs.Add(path, at.Append("allowLinkLocal"), "allowLinkLocal must be true or false, not %s", jsonv.Marshal(a))
		return false
	}
	return a.Bool()
}

// loadRetry reads an entry's "timeout" and "maxAttempts": zero and nil
// when it has none (the defaults).
func loadRetry(errs *schema.ErrorList, path string, at jsonv.Pointer, v jsonv.Value) (time.Duration, *temporal.RetryPolicy) {
	var timeout time.Duration
	if t, ok := v.Get("timeout"); ok {
		d, err := time.ParseDuration(t.Str())
		if err != nil || d <= 0 || d > MaxTimeout {
			errs.Add(path, at.Append("timeout"), "timeout must be a duration from 1ms to %s, such as \"30s\", not %s", MaxTimeout, jsonv.Marshal(t))
		} else {
			timeout = d
		}
	}
	var retry *temporal.RetryPolicy
	if m, ok := v.Get("maxAttempts"); ok {
		n, isInt := m.Int()
		if !isInt || n < 1 || n > MaxAttempts {
			errs.Add(path, at.Append("maxAttempts"), "maxAttempts must be an integer from 1 to %d, not %s", MaxAttempts, jsonv.Marshal(m))
			n = 1
		}
		r := *DefaultRetry
		r.MaximumAttempts = int32(n)
		retry = &r
	}
	return timeout, retry
}

// Unwrapped is what an action that takes its arguments unwrapped
// (Action.Unwrap: an MCP tool) gets from a step's input, the minimal
// context of its references: the one value the step references, or the
// members of the objects it references, merged in order — from
// {"llmContext2": {"draft": {"to", "subject"}}, "userContext": {"approve":
// {"decision"}}}, {"to", "subject", "decision"}. Two references that give
// the same member are an error.
func Unwrapped(input jsonv.Value, refs []jsonv.Pointer) (jsonv.Value, error) {
	if len(refs) == 1 {
		v, err := input.At(refs[0])
		if err != nil {
			return jsonv.Value{}, fmt.Errorf("its input has no %s: %w", refs[0], err)
		}
		return v, nil
	}
	out := jsonv.NewObject(8)
	from := map[string]jsonv.Pointer{}
	for _, p := range refs {
		v, err := input.At(p)
		if err != nil {
			return jsonv.Value{}, fmt.Errorf("its input has no %s: %w", p, err)
		}
		if v.Object() == nil {
			return jsonv.Value{}, fmt.Errorf("%s is %s, not an object whose members are arguments", p, v.Kind())
		}
		for name, m := range v.Members() {
			if other, dup := from[name]; dup {
				return jsonv.Value{}, fmt.Errorf("%s and %s both give the argument %q", other, p, name)
			}
			from[name] = p
			out.Set(name, m)
		}
	}
	return out.Value(), nil
}
