package vessel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/schema"
)

// Anonymous is the _delegate of a fresh, empty delegate: the call runs in
// a clean context of its own.
const Anonymous = "anonymous"

// Delegate is a stored Request a call is delegated to: its own context,
// the input it expects, the result it gives, and the tools it may call.
type Delegate struct {
	// ID is where it was loaded from: a registry URI, an absolute path, a
	// URL, or "anonymous". A delegate that reaches itself again is a cycle.
	ID string
	// Name names it in logs and ids.
	Name string
	// Context is its own messages.
	Context jsonv.Value
	// Input is the schema of the input it expects (its "schema" without
	// "_output"); null for none.
	Input jsonv.Value
	// Output is the schema of its result ("_output"); null for none.
	Output jsonv.Value
	// Vessel holds its tools, processes and mixins; it may have none.
	Vessel *Vessel
}

// Loader loads delegates: from the registry, a file, or an allowed URL.
// The zero Loader loads anonymous delegates only: no registry, no
// directory to read files from, no host to fetch from.
type Loader struct {
	Registry *registry.Registry
	// Allow lists the hosts (host or host:port) delegates may be fetched
	// from over http(s); a URL on any other host is refused.
	Allow []string
	// Roots lists the directories delegate files may be read from, besides
	// the registry's directory: a file outside all of them, once symbolic
	// links are resolved, is refused (ErrOutsideRoots), so that a
	// "_delegate" of "../../etc/passwd" or "/etc/passwd" reads nothing.
	// Build adds the Vessel file's directory for the delegates it resolves.
	Roots []string
	// HTTP fetches URLs; nil means a client with Timeout.
	HTTP *http.Client
	// Timeout bounds fetching a URL; 0 means 10 s.
	Timeout time.Duration
	// MaxBytes bounds a delegate's size; 0 means 1 MiB.
	MaxBytes int64
}

// Load loads the delegate ref names: "anonymous", a registry URI
// (aug:…), an http(s) URL from an allowed host, or a file path.
func (l *Loader) Load(ctx context.Context, ref string) (*Delegate, error) {
	switch {
	case ref == Anonymous:
		return &Delegate{ID: Anonymous, Name: Anonymous, Context: jsonv.ArrayValue(), Vessel: &Vessel{Name: Anonymous}}, nil
	case registry.IsURI(ref):
		if l.Registry == nil {
			return nil, fmt.Errorf("delegate %s: %w", ref, registry.ErrNoRegistry)
		}
		d, err := l.Registry.Document(ref)
		if err != nil {
			return nil, fmt.Errorf("delegate %s: %w", ref, err)
		}
		return ParseDelegate(d.URI.String(), d.File, d.Value)
	case strings.HasPrefix(ref, "http://"), strings.HasPrefix(ref, "https://"):
		return l.fetch(ctx, ref)
	}
	path, err := filepath.Abs(ref)
	if err != nil {
		return nil, fmt.Errorf("delegate %s: %w", ref, err)
	}
	if err := l.confine(path); err != nil {
		return nil, fmt.Errorf("delegate %s: %w", ref, err)
	}
	data, err := readLimited(path, l.maxBytes())
	if err != nil {
		return nil, fmt.Errorf("delegate %s: %w", ref, err)
	}
	doc, err := schema.Parse(ref, data)
	if err != nil {
		return nil, err
	}
	return ParseDelegate(path, ref, doc)
}

func (l *Loader) maxBytes() int64 {
	if l.MaxBytes > 0 {
		return l.MaxBytes
	}
	return 1 << 20
}

// ErrOutsideRoots is wrapped by the error for a delegate file outside the
// directories delegate files are read from (Loader.Roots and the
// registry's directory).
var ErrOutsideRoots = errors.New("outside the directories delegate files are read from")

// confine checks that the file path (absolute) lies in one of the
// loader's roots or the extra ones, symbolic links resolved on both sides.
func (l *Loader) confine(path string, extra ...string) error {
	roots := slices.Concat(l.Roots, extra)
	if l.Registry != nil && l.Registry.Dir() != "" {
		roots = append(roots, l.Registry.Dir())
	}
	real := resolveLinks(path)
	for _, root := range roots {
		abs, err := filepath.Abs(root)
		if err != nil {
			continue
		}
		if rel, err := filepath.Rel(resolveLinks(abs), real); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return nil
		}
	}
	return fmt.Errorf("%s is %w", path, ErrOutsideRoots)
}

// resolveLinks is path with its symbolic links resolved. A file that does
// not exist (yet) keeps its name, resolved in its directory: it may still
// not be reached through a link out of the roots.
func resolveLinks(path string) string {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		return real
	}
	dir, file := filepath.Split(filepath.Clean(path))
	if dir == path || dir == "" {
		return filepath.Clean(path)
	}
	return filepath.Join(resolveLinks(filepath.Clean(dir)), file)
}

func readLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("larger than the limit of %d bytes", limit)
	}
	return data, nil
}

// allowed reports whether u's host (host or host:port) is on the
// allow-list.
func (l *Loader) allowed(u *url.URL) bool {
	return slices.Contains(l.Allow, u.Host) || slices.Contains(l.Allow, u.Hostname())
}

// ErrTransient is wrapped by the error for a delegate URL that failed in a
// way worth retrying: the network, 429 or a 5xx status.
var ErrTransient = errors.New("transient, retried")

// ErrNotAllowed is wrapped by the error for a delegate URL whose host is
// not on the allow-list.
var ErrNotAllowed = errors.New("not allowed")

func (l *Loader) fetch(ctx context.Context, ref string) (*Delegate, error) {
	u, err := url.Parse(ref)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("delegate %s: not a URL", ref)
	}
	if !l.allowed(u) {
		return nil, fmt.Errorf("delegate %s: host %s is %w: only hosts on the allow-list are fetched from", ref, u.Host, ErrNotAllowed)
	}
	timeout := l.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ref, nil)
	if err != nil {
		return nil, fmt.Errorf("delegate %s: %w", ref, err)
	}
	req.Header.Set("Accept", "application/json")
	c := &http.Client{Timeout: timeout}
	if l.HTTP != nil {
		*c = *l.HTTP
	}
	// A redirect is followed only to a host on the allow-list too.
	c.CheckRedirect = func(r *http.Request, via []*http.Request) error {
		if !l.allowed(r.URL) {
			return fmt.Errorf("redirected to host %s, which is %w", r.URL.Host, ErrNotAllowed)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	resp, err := c.Do(req)
	if err != nil {
		if errors.Is(err, ErrNotAllowed) {
			return nil, fmt.Errorf("delegate %s: %w", ref, err)
		}
		return nil, fmt.Errorf("delegate %s: %w (%w)", ref, err, ErrTransient)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return nil, fmt.Errorf("delegate %s: %s (%w)", ref, resp.Status, ErrTransient)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("delegate %s: %s", ref, resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, l.maxBytes()+1))
	if err != nil {
		return nil, fmt.Errorf("delegate %s: %w", ref, err)
	}
	if int64(len(data)) > l.maxBytes() {
		return nil, fmt.Errorf("delegate %s: larger than the limit of %d bytes", ref, l.maxBytes())
	}
	doc, err := schema.Parse(ref, data)
	if err != nil {
		return nil, err
	}
	return ParseDelegate(ref, ref, doc)
}

// ParseDelegate reads a stored Request: {"context": [messages], "schema":
// its input, with "_output": its result, and optionally "name", "tools",
// "processes", "mixins"}. id is where it came from, file names it in
// errors.
func ParseDelegate(id, file string, doc jsonv.Value) (*Delegate, error) {
	var errs schema.ErrorList
	if doc.Object() == nil {
		errs.Add(file, "", "a stored Request is an object {\"context\", \"schema\"}, not %s", doc.Kind())
		return nil, errs
	}
	d := &Delegate{ID: id, Name: doc.Lookup("name").Str(), Context: jsonv.ArrayValue(), Input: jsonv.NullValue(), Output: jsonv.NullValue()}
	if d.Name == "" {
		d.Name = strings.TrimSuffix(filepath.Base(id), ".json")
	}
	if c, ok := doc.Get("context"); ok {
		if _, err := ParseContext(file, "/context", c); err != nil {
			errs.Append(file, err)
		}
		d.Context = c
	}
	if s, ok := doc.Get("schema"); ok {
		if s.Object() == nil {
			errs.Add(file, "/schema", "schema must be an object: the input the delegate expects")
		} else {
			in := s.Clone().Object()
			if out, ok := in.Get("_output"); ok {
				d.Output = out
				in.Delete("_output")
			}
			d.Input = in.Value()
		}
	}
	v := &Vessel{Name: d.Name, System: "", File: file}
	v.Tools = parseURIs(file, doc, "tools", &errs)
	v.Processes = parseURIs(file, doc, "processes", &errs)
	v.Mixins = parseURIs(file, doc, "mixins", &errs)
	d.Vessel = v
	for name := range doc.Members() {
		switch name {
		case "name", "context", "schema", "tools", "processes", "mixins", "$schema", "title", "description":
		default:
			errs.Add(file, jsonv.PointerTo(name), "unknown key %q in a stored Request (want context, schema, name, tools, processes, mixins)", name)
		}
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return d, nil
}

// Scope selectors: what of the parent's context a delegate sees.
const (
	ScopeState  = "state"  // the call's instance's state, or a path in it
	ScopeInput  = "input"  // the input the call's instance sees, or a path in it
	ScopeData   = "data"   // the data messages of the call's instance and the global ones
	ScopeSystem = "system" // the parent's system messages
)

// parseScope splits a _scopes entry into its root (state, input, data,
// system) and the path under it.
func parseScope(s string) (root string, path []string, err error) {
	root, rest, dotted := strings.Cut(s, ".")
	switch root {
	case ScopeState, ScopeInput:
	case ScopeData, ScopeSystem:
		if !dotted {
			return root, nil, nil
		}
		fallthrough
	default:
		return "", nil, fmt.Errorf("unknown scope %q: want state, state.a.b, input, input.a.b, data or system", s)
	}
	if !dotted {
		return root, nil, nil
	}
	path = strings.Split(rest, ".")
	if slices.Contains(path, "") {
		return "", nil, fmt.Errorf("scope %q has an empty part", s)
	}
	return root, path, nil
}

// Scoped returns the parent messages a delegate call sees: for each scope,
// the call's instance's part of the parent's context and nothing else —
// never another instance's, and without _instance.
func Scoped(scopes []string, msgs []*Message, state jsonv.Value, instance string) ([]jsonv.Value, error) {
	var out []jsonv.Value
	for _, sc := range scopes {
		root, path, err := parseScope(sc)
		if err != nil {
			return nil, err
		}
		switch root {
		case ScopeState, ScopeInput:
			src := state
			if root == ScopeInput {
				src = InputFor(msgs, instance)
			}
			v, err := src.At(jsonv.PointerTo(path...))
			if err != nil {
				return nil, fmt.Errorf("scope %s: the %s has no %s", sc, root, strings.Join(path, "."))
			}
			member := "data"
			if root == ScopeInput {
				member = "input"
			}
			out = append(out, jsonv.ObjectValue(jsonv.Member{Name: "type", Value: jsonv.StringValue(root)}, jsonv.Member{Name: member, Value: nest(path, v.Clone())}))
		case ScopeData, ScopeSystem:
			for _, m := range msgs {
				if m.IsState() || (m.Instance != "" && m.Instance != instance) {
					continue
				}
				if (root == ScopeData && m.Type == DataMessage) || (root == ScopeSystem && m.Type == SystemMessage) {
					raw := m.Raw.Clone().Object()
					raw.Delete("_instance")
					out = append(out, raw.Value())
				}
			}
		}
	}
	return out, nil
}

// SubRequest is a delegate call's isolated context: the delegate's own
// messages, the scoped parent messages, and an input message with the
// call's parameters and the delegate's input schema — whether they match
// or not (the delegate's model bridges the gap).
func SubRequest(d *Delegate, scoped []jsonv.Value, params jsonv.Value) jsonv.Value {
	msgs := slices.Clone(d.Context.Array())
	msgs = append(msgs, scoped...)
	in := jsonv.NewObject(3)
	in.Set("type", jsonv.StringValue(InputMessage))
	in.Set("input", params)
	if !d.Input.IsNull() {
		in.Set("schema", d.Input)
	}
	return jsonv.ArrayValue(append(msgs, in.Value())...)
}

// DefaultOutput is what a delegate without "_output" fills: any object.
var DefaultOutput = mustParse(`{"type": "object", "description": "The result of the task given in the input message."}`)

// Prepare builds a delegate call's isolated sub-request, ready to run: the
// delegate's own toolset (built with opts), the context SubRequest
// assembles from the scoped parent messages and the call's parameters, and
// the schema of its result — the delegate's _output, else the tool's, else
// DefaultOutput. An anonymous delegate's input schema is the tool's own.
func (d *Delegate) Prepare(ctx context.Context, t *Tool, scoped []jsonv.Value, params jsonv.Value, opts BuildOptions) (*Request, error) {
	ts := &Toolset{Vessel: d.Name}
	if len(d.Vessel.Tools) > 0 || len(d.Vessel.Processes) > 0 {
		var err error
		if ts, err = Build(ctx, d.Vessel, opts); err != nil {
			return nil, err
		}
	}
	if d.ID == Anonymous {
		d.Input = t.Schema
	}
	output := d.Output
	if output.IsNull() {
		output = t.Output
	}
	if output.IsNull() {
		output = DefaultOutput
	}
	return NewRequest(ts, SubRequest(d, scoped, params), RequestOptions{File: d.ID, Output: output})
}

// Nest makes r the sub-request of delegate id inside parent: one level
// deeper, under the parent's bounds. A delegate already in the parent's
// chain (A → B → A) is a cycle, refused with the chain.
func (r *Request) Nest(parent *Request, id string) error {
	if id != Anonymous && slices.Contains(parent.Chain, id) {
		return fmt.Errorf("delegate cycle: %s", ChainText(parent.Chain, id))
	}
	r.Chain = append(slices.Clone(parent.Chain), id)
	r.Depth = parent.Depth + 1
	r.MaxDepth, r.MaxFanOut = parent.MaxDepth, parent.MaxFanOut
	r.ModelQueue = parent.ModelQueue
	return nil
}

// ChainText shows a chain of delegates and the next one: "a → b → c".
func ChainText(chain []string, next string) string {
	return strings.Join(append(slices.Clone(chain), next), " → ")
}
