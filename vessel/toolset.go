package vessel

import (
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode"

	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/compose"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/schema"
)

// ToolKind says what calling a tool does.
type ToolKind string

// The kinds of tools.
const (
	// Instruction: the call's parameters are the filled instruction; its
	// result is them without thinking fields and metrics.
	Instruction ToolKind = "instruction"
	// Launch: the call's parameters are a process's entry chunk, filled;
	// the process starts with that chunk done and the result is its id.
	Launch ToolKind = "launch"
	// Action: a registered server action runs with the parameters.
	Action ToolKind = "action"
	// DelegateKind: the call runs in an isolated sub-request (SPEC §8); the
	// sub-request's result is the call's.
	DelegateKind ToolKind = "delegate"
)

// Resolution strategies of a delegate tool's "_resolve".
const (
	// ResolveRuntime (the default) loads the delegate when the call runs
	// and hands it the call's parameters as they are: the delegate's model
	// bridges any mismatch with its input schema.
	ResolveRuntime = "runtime"
	// ResolveAhead loads the delegate when the toolset is built: its input
	// schema is merged into the tool's parameters and its _output becomes
	// the result's contract, validated on return.
	ResolveAhead = "ahead"
)

// Tool is one tool of a Vessel's toolset.
type Tool struct {
	Name string   `json:"name"` // the call's _tool
	Kind ToolKind `json:"kind"`
	URI  string   `json:"uri"`
	// Schema is the tool's parameters as the model sees them: flattened,
	// wrapped in the Vessel's mixins, projected.
	Schema jsonv.Value `json:"schema"`
	// Action is the action an Action tool runs.
	Action string `json:"action,omitempty"`
	// Program is a Launch tool's compiled process, prepared to run;
	// ProcessName names it and Entry is the parameter holding its entry
	// chunk (llmContext1).
	Program     *compile.Program `json:"program,omitempty"`
	ProcessName string           `json:"processName,omitempty"`
	Entry       string           `json:"entry,omitempty"`
	// Delegate is a delegate tool's _delegate: a registry URI, an absolute
	// file path, an http(s) URL, or "anonymous".
	Delegate string `json:"delegate,omitempty"`
	// Scopes is its _scopes: what of the parent's context it sees.
	Scopes []string `json:"scopes,omitempty"`
	// Resolve is ResolveRuntime or ResolveAhead.
	Resolve string `json:"resolve,omitempty"`
	// Output is the schema of the result: the tool's _output, or with
	// ResolveAhead the delegate's.
	Output jsonv.Value `json:"output,omitzero"`
	// Contract, with ResolveAhead, is Output as the caller sees the result
	// (its thinking fields and metrics neither listed nor required): a
	// result that breaks it is the call's error.
	Contract jsonv.Value `json:"contract,omitzero"`
	// Loop, when the tool's schema has a Loop_Mixin around it or around
	// one of its parameters (seed 001 puts one around the StartProcess
	// tool's llmContext1), repeats a call of it as a process repeats a
	// chunk: the model is asked for the call again, with its previous
	// attempt, until the value at Done (in the call) is true or Max
	// attempts were made. A launch tool whose process's entry chunk loops
	// loops too: the process takes the chunk as the Vessel filled it.
	Loop *compile.Loop `json:"loop,omitempty"`
}

// Toolset is a Vessel's tools, side by side.
type Toolset struct {
	Vessel string  `json:"vessel"`
	System string  `json:"system"`
	Tools  []*Tool `json:"tools"`
	// FollowUps and DecisionSize are the Vessel's (already defaulted).
	FollowUps    int `json:"followUps"`
	DecisionSize int `json:"decisionSize"`
}

// Tool returns the tool of that name, or nil.
func (ts *Toolset) Tool(name string) *Tool {
	for _, t := range ts.Tools {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// Names returns the tools' names in order.
func (ts *Toolset) Names() []string {
	names := make([]string, len(ts.Tools))
	for i, t := range ts.Tools {
		names[i] = t.Name
	}
	return names
}

// BuildOptions configures Build.
type BuildOptions struct {
	Registry *registry.Registry
	// Loader loads delegates resolved ahead of time; nil means one over
	// Registry that loads no URLs. Its Roots, the registry's directory and
	// the Vessel file's directory are where delegate files may be.
	Loader *Loader
	// Actions are the registered server actions: a tool of that name is an
	// Action tool, and launched processes are compiled against them.
	Actions []string
}

// LaunchProcessURI is where the generic LaunchProcess macro is looked up;
// without it in the registry, DefaultLaunchProcess is used.
const LaunchProcessURI = "aug:vibes/macros/LaunchProcess"

// DefaultLaunchProcess is the generic LaunchProcess macro: a mixin whose
// slot takes the process's name and its filled entry chunk.
var DefaultLaunchProcess = mustParse(`{
  "title": "LaunchProcess",
  "description": "Starts a process with its first step already done: the slot takes the process's name and its entry chunk.",
  "type": "object",
  "properties": {
    "name": {"type": "string", "description": "The process to launch."},
    "default": {"type": "object", "description": "Slot: the process's entry chunk, which the model fills."}
  },
  "required": ["name", "default"]
}`)

func mustParse(s string) jsonv.Value {
	v, err := jsonv.Parse([]byte(s))
	if err != nil {
		panic(err)
	}
	return v
}

// Build builds a Vessel's toolset. Every problem of every tool is reported.
// A delegate tool resolved ahead of time is loaded here.
func Build(ctx context.Context, v *Vessel, opts BuildOptions) (*Toolset, error) {
	if opts.Loader == nil {
		opts.Loader = &Loader{Registry: opts.Registry}
	}
	ts := &Toolset{Vessel: v.Name, System: v.System, FollowUps: DefaultFollowUps, DecisionSize: orDefault(v.DecisionSize, DefaultDecisionSize)}
	if v.FollowUps != nil {
		ts.FollowUps = *v.FollowUps
	}
	var errs schema.ErrorList
	copts := compose.Options{Registry: opts.Registry}
	var tools []compose.Tool
	for i, uri := range v.Tools {
		got, err := compose.Toolset(ctx, []string{uri}, copts)
		if err != nil {
			// A URI that names nothing is the Vessel file's error; problems
			// inside a tool's own files keep their place.
			for _, e := range schema.Errors(err, v.File) {
				if e.File == uri || e.File == v.File {
					e = &schema.Error{File: v.File, Path: jsonv.PointerTo("tools").AppendIndex(i), Message: e.Message, Err: e}
				}
				errs = append(errs, e)
			}
			continue
		}
		tools = append(tools, got...)
	}
	nameApart(v, tools, &errs)
	for _, t := range tools {
		if t.Name == "" {
			continue // refused by nameApart
		}
		tool := &Tool{Name: t.Name, Kind: Instruction, URI: t.URI}
		params := t.Schema
		if _, ok := t.Schema.Get("_delegate"); ok {
			var err error
			if params, err = delegateTool(ctx, v, tool, t.Schema, opts); err != nil {
				errs.Append(v.File, err)
				continue
			}
		} else if uri, entry, ok := launchMacro(t.Schema, opts.Registry); ok {
			// The LaunchProcess macro filled by hand (seed 001's StartProcess
			// tool): it launches its process like a "processes" entry.
			p, d, err := compileLaunch(ctx, uri, opts)
			if err != nil {
				errs.Append(v.File, err)
				continue
			}
			tool.Kind, tool.Program, tool.ProcessName, tool.Entry = Launch, p.Program(), path.Base(d.URI.Path), entry
			// What the two schemas prove never fits is refused now, not
			// after a model call per attempt.
			have, _ := schema.Properties(t.Schema).Get(entry)
			if misfit := entryMisfits(have, tool.Program.FirstChunk()); len(misfit) > 0 {
				for _, m := range misfit {
					errs.Add(v.File, toolAt(v, t.URI), "tool %s: parameter %s: %s, so no call of it can launch process %s (chunk %s)",
						t.Name, jsonv.PointerTo(entry)+m.Path, m.Message, tool.ProcessName, tool.Program.FirstChunk().Name)
				}
				continue
			}
		} else if msg := unknownLaunch(t.Name, t.Schema, opts.Registry); msg != "" {
			errs.Add(v.File, toolAt(v, t.URI), "%s", msg)
			continue
		} else if a, ok := compile.MatchAction(t.Name, opts.Actions); ok {
			tool.Kind, tool.Action = Action, a
		}
		s, loop, err := wrap(ctx, v, params, copts)
		if err != nil {
			errs.Append(v.File, err)
			continue
		}
		tool.Schema, tool.Loop = s, loop
		ts.Tools = append(ts.Tools, tool)
	}
	for i, uri := range v.Processes {
		tool, err := launchTool(ctx, v, uri, opts)
		if err != nil {
			errs.Append(v.File, err)
			continue
		}
		if ts.Tool(tool.Name) != nil {
			errs.Add(v.File, jsonv.PointerTo("processes").AppendIndex(i), "tool name %q is taken twice", tool.Name)
			continue
		}
		ts.Tools = append(ts.Tools, tool)
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return ts, nil
}

// delegateTool reads a delegate tool's _delegate, _scopes, _resolve and
// _output; resolved ahead of time, it loads the delegate and returns the
// tool's parameters merged with the delegate's input schema.
func delegateTool(ctx context.Context, v *Vessel, tool *Tool, s jsonv.Value, opts BuildOptions) (jsonv.Value, error) {
	file := tool.URI
	if opts.Registry != nil {
		if d, err := opts.Registry.Document(tool.URI); err == nil {
			file = d.File
		}
	}
	var errs schema.ErrorList
	tool.Kind = DelegateKind
	tool.Resolve = ResolveRuntime
	ref := s.Lookup("_delegate")
	if ref.Kind() != jsonv.KindString || ref.Str() == "" {
		errs.Add(file, "/_delegate", "_delegate must be a registry URI, a file path, an http(s) URL or \"anonymous\"")
	}
	tool.Delegate = ref.Str()
	loader := opts.Loader
	if isFile := tool.Delegate != "" && !registry.IsURI(tool.Delegate) && tool.Delegate != Anonymous && !strings.Contains(tool.Delegate, "://"); isFile {
		// A file path is relative to the Vessel file, and must stay in its
		// directory or the registry's: a tool from the registry must not
		// read what else the machine holds.
		var roots []string
		if v.File != "" {
			roots = append(roots, filepath.Dir(v.File))
			if !filepath.IsAbs(tool.Delegate) {
				tool.Delegate = filepath.Join(filepath.Dir(v.File), tool.Delegate)
			}
		}
		if abs, err := filepath.Abs(tool.Delegate); err == nil {
			tool.Delegate = abs
		}
		if err := loader.confine(tool.Delegate, roots...); err != nil {
			errs = append(errs, &schema.Error{File: file, Path: "/_delegate", Err: err,
				Message: fmt.Sprintf("tool %s: delegate file %q is outside the Vessel's directory and the registry's: a delegate file must be in one of them", tool.Name, ref.Str())})
		}
		within := *loader
		within.Roots = slices.Concat(loader.Roots, roots)
		loader = &within
	}
	if sc, ok := s.Get("_scopes"); ok {
		for i, e := range sc.Array() {
			at := jsonv.PointerTo("_scopes").AppendIndex(i)
			if e.Kind() != jsonv.KindString {
				errs.Add(file, at, "a scope is a string such as \"state.currentUser\", not %s", e.Kind())
				continue
			}
			if _, _, err := parseScope(e.Str()); err != nil {
				errs.Add(file, at, "%v", err)
				continue
			}
			tool.Scopes = append(tool.Scopes, e.Str())
		}
		if sc.Kind() != jsonv.KindArray {
			errs.Add(file, "/_scopes", "_scopes must be an array such as [\"state\", \"input\"]")
		}
	}
	if r, ok := s.Get("_resolve"); ok {
		switch r.Str() {
		case ResolveRuntime, ResolveAhead:
			tool.Resolve = r.Str()
		default:
			errs.Add(file, "/_resolve", "_resolve must be %q (the default) or %q, not %s", ResolveRuntime, ResolveAhead, jsonv.Marshal(r))
		}
	}
	tool.Output = s.Lookup("_output")
	if err := errs.Err(); err != nil {
		return jsonv.Value{}, err
	}
	if tool.Resolve != ResolveAhead {
		return s, nil
	}
	d, err := loader.Load(ctx, tool.Delegate)
	var list schema.ErrorList
	var one *schema.Error
	if errors.As(err, &list) || (errors.As(err, &one) && one.File != "") {
		return jsonv.Value{}, err // the stored Request's own errors, each naming its file
	}
	if err != nil {
		return jsonv.Value{}, &schema.Error{File: file, Path: "/_delegate", Message: "resolving the delegate ahead of time: " + err.Error(), Err: err}
	}
	if !d.Output.IsNull() {
		tool.Output = d.Output
	}
	if !tool.Output.IsNull() {
		tool.Contract = compose.OutputSchema(tool.Output)
	}
	if d.Input.IsNull() {
		return s, nil
	}
	// The delegate's input becomes the tool's exact parameters.
	merged := jsonv.ObjectValue(jsonv.Member{Name: "allOf", Value: jsonv.ArrayValue(s, d.Input)})
	flat, err := compose.Flatten(ctx, file, merged, compose.Options{Registry: opts.Registry})
	if err != nil {
		return jsonv.Value{}, err
	}
	return flat, nil
}

// wrap puts a schema in the Vessel's mixins (outside-in, as listed), keeps
// its own title and description, and projects it for the model; the loop
// is the wrapped schema's (loopOf), which the projection leaves out.
func wrap(ctx context.Context, v *Vessel, s jsonv.Value, opts compose.Options) (jsonv.Value, *compile.Loop, error) {
	if len(v.Mixins) > 0 {
		items := make([]jsonv.Value, 0, len(v.Mixins)+1)
		for _, m := range v.Mixins {
			items = append(items, jsonv.ObjectValue(jsonv.Member{Name: "$ref", Value: jsonv.StringValue(m)}))
		}
		items = append(items, jsonv.ObjectValue(jsonv.Member{Name: "properties", Value: jsonv.ObjectValue(jsonv.Member{Name: "default", Value: s})}))
		doc := jsonv.ObjectValue(jsonv.Member{Name: "type", Value: jsonv.StringValue("object")}, jsonv.Member{Name: "allOf", Value: jsonv.ArrayValue(items...)})
		flat, err := compose.Flatten(ctx, v.File, doc, opts)
		if err != nil {
			return jsonv.Value{}, nil, err
		}
		o := flat.Object()
		for i, kw := range []string{"title", "description"} {
			if val, ok := s.Get(kw); ok {
				o.Insert(i, kw, val)
			}
		}
		s = flat
	}
	return compile.Project(s, compile.ProjectOptions{}).Schema, loopOf(s), nil
}

// loopOf reads the loop of a flattened tool schema (the engine keyword
// "loop" a Loop_Mixin leaves, compose.LoopDone): around the whole tool, or
// else around its first parameter that has one — where compile finds a
// chunk's loop, around its context or a step. Nil when it has none.
func loopOf(s jsonv.Value) *compile.Loop {
	read := func(l jsonv.Value, at jsonv.Pointer) *compile.Loop {
		if l.Object() == nil {
			return nil
		}
		n, _ := l.Lookup("max").Int()
		return &compile.Loop{Max: int(min(max(n, 1), compose.MaxLoop)), Done: at.Append(l.Lookup("done").Str())}
	}
	if lp := read(s.Lookup("loop"), ""); lp != nil {
		return lp
	}
	for name, p := range schema.Properties(s).All() {
		if lp := read(p.Lookup("loop"), jsonv.PointerTo(name)); lp != nil {
			return lp
		}
	}
	return nil
}

// ProcessName turns a process URI into a tool name: the last part of its
// path in PascalCase (schedule-meeting → ScheduleMeeting).
func ProcessName(uri string) string {
	u, err := registry.ParseURI(uri)
	if err != nil {
		return uri
	}
	var b strings.Builder
	up := true
	for _, r := range path.Base(u.Path) {
		if r == '-' || r == '_' || r == '.' || r == ' ' {
			up = true
			continue
		}
		if up {
			r = unicode.ToUpper(r)
			up = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// nameApart gives tools that share a name distinct ones: a tool's name
// is its URI's last path part without the version, so foo:1 and foo:2
// would both be "foo"; they become "foo_v1" and "foo_v2". Tools of one
// name that no version tells apart are refused, naming both URIs (their
// Name is cleared).
func nameApart(v *Vessel, tools []compose.Tool, errs *schema.ErrorList) {
	byName := map[string][]int{}
	for i, t := range tools {
		byName[t.Name] = append(byName[t.Name], i)
	}
	taken := map[string]bool{}
	for _, t := range tools {
		taken[t.Name] = true
	}
	for i := range tools {
		same := byName[tools[i].Name]
		if len(same) < 2 {
			continue
		}
		u, err := registry.ParseURI(tools[i].URI)
		if err != nil || u.Version == 0 {
			other := tools[same[0]].URI
			if same[0] == i {
				other = tools[same[1]].URI
			}
			errs.Add(v.File, jsonv.PointerTo("tools").AppendIndex(slices.Index(v.Tools, tools[i].URI)),
				"tools %s and %s are both named %q: two tools need different names (give each a version, or rename one)", tools[i].URI, other, tools[i].Name)
			tools[i].Name = ""
			continue
		}
		renamed := fmt.Sprintf("%s_v%d", tools[i].Name, u.Version)
		if taken[renamed] {
			errs.Add(v.File, jsonv.PointerTo("tools").AppendIndex(slices.Index(v.Tools, tools[i].URI)), "tool %s would be named %q, which another tool has", tools[i].URI, renamed)
			tools[i].Name = ""
			continue
		}
		tools[i].Name, taken[renamed] = renamed, true
	}
}

// compileLaunch compiles a process a Vessel may launch: one whose first
// chunk is a model's.
func compileLaunch(ctx context.Context, uri string, opts BuildOptions) (*compile.Process, *registry.Document, error) {
	if opts.Registry == nil {
		return nil, nil, fmt.Errorf("cannot launch %s: %w", uri, registry.ErrNoRegistry)
	}
	d, err := opts.Registry.Document(uri)
	if err != nil {
		return nil, nil, err
	}
	p, err := compile.Compile(ctx, d.File, d.Value, compile.Options{Registry: opts.Registry, Actions: opts.Actions})
	if err != nil {
		return nil, nil, err
	}
	if first := p.Chunks[0]; first.Kind != compile.LLM {
		return nil, nil, &schema.Error{File: d.File, Message: fmt.Sprintf("process %s starts with a %s chunk (%s): a Vessel can launch only a process whose first chunk is a model's", uri, first.Kind, first.Name)}
	}
	return p, d, nil
}

// ProcessesFolder is where processes are in the registry.
const ProcessesFolder = "processes"

// launchMacro reports the process a tool launches when its schema is the
// LaunchProcess macro filled by hand — seed 001's composed StartProcess
// tool, {"name": {"const": P}, "<entry>": {…}} — and P names a process in
// the registry (as ProcessName names it): its URI and the entry member.
func launchMacro(s jsonv.Value, reg *registry.Registry) (uri, entry string, ok bool) {
	name, entry, ok := launchShape(s)
	if !ok || reg == nil {
		return "", "", false
	}
	for _, n := range reg.Names(ProcessesFolder) {
		if u := "aug:" + ProcessesFolder + "/" + n; ProcessName(u) == name {
			return u, entry, true
		}
	}
	return "", "", false
}

// toolAt is where the Vessel file lists the tool of uri: its entry of
// "tools".
func toolAt(v *Vessel, uri string) jsonv.Pointer {
	if i := slices.Index(v.Tools, uri); i >= 0 {
		return jsonv.PointerTo("tools").AppendIndex(i)
	}
	return jsonv.PointerTo("tools")
}

// launchTool expands LaunchProcess for one process: {name: {const: Name},
// llmContext1: <entry chunk in the Vessel's mixins>}.
func launchTool(ctx context.Context, v *Vessel, uri string, opts BuildOptions) (*Tool, error) {
	p, d, err := compileLaunch(ctx, uri, opts)
	if err != nil {
		return nil, err
	}
	first := p.Chunks[0]
	entry := first.Context
	if entry == "" {
		entry = "llmContext1"
	}
	chunk := compile.Project(p.Document.Lookup("$defs").Lookup(first.Name), compile.ProjectOptions{}).Schema
	launch := DefaultLaunchProcess
	if ld, err := opts.Registry.Document(LaunchProcessURI); err == nil {
		launch = ld.Value
	}
	name := ProcessName(uri)
	wrapped, loop, err := wrap(ctx, v, chunk, compose.Options{Registry: opts.Registry})
	if err != nil {
		return nil, err
	}
	if loop == nil {
		loop = first.Loop // the chunk's own, which its projection left out
	}
	if loop != nil {
		loop = &compile.Loop{Max: loop.Max, Done: jsonv.PointerTo(entry) + loop.Done}
	}
	doc := jsonv.ObjectValue(
		jsonv.Member{Name: "type", Value: jsonv.StringValue("object")},
		jsonv.Member{Name: "allOf", Value: jsonv.ArrayValue(launch, jsonv.ObjectValue(jsonv.Member{Name: "properties", Value: jsonv.ObjectValue(
			jsonv.Member{Name: "name", Value: jsonv.ObjectValue(jsonv.Member{Name: "const", Value: jsonv.StringValue(name)})},
			jsonv.Member{Name: entry, Value: wrapped},
		)}))})
	flat, err := compose.Flatten(ctx, v.File, doc, compose.Options{Registry: opts.Registry})
	if err != nil {
		return nil, err
	}
	o := flat.Object()
	title := d.Value.Lookup("title").Str()
	if title == "" {
		title = name
	}
	o.Insert(0, "title", jsonv.StringValue("Launch: "+title))
	desc := "Starts the process " + name + " with its first step filled in here; the process then runs on its own."
	if pd := d.Value.Lookup("description").Str(); pd != "" {
		desc += " " + pd
	}
	o.Insert(1, "description", jsonv.StringValue(desc))
	return &Tool{Name: name, Kind: Launch, URI: uri, Schema: flat, Program: p.Program(), ProcessName: path.Base(d.URI.Path), Entry: entry, Loop: loop}, nil
}

// CheckLaunch checks a launch call's entry chunk, params[t.Entry], against
// the chunk of t's process it fills (compile.Program.CheckFirst, the check
// of POST /v1/processes): a tool composed by hand may offer the model an
// entry that is not the process's. Each problem is located at the call's
// path in file. A call of another kind, or whose entry is still a "†state"
// reference, passes (the runtime checks it once the reference holds a
// value).
func CheckLaunch(file string, c *Call, t *Tool, params jsonv.Value) error {
	if t == nil || t.Kind != Launch || t.Program == nil {
		return nil
	}
	first, ok := params.Get(t.Entry)
	if !ok || IsRef(first) {
		return nil // the tool's own schema says whether it is required
	}
	err := t.Program.CheckFirst(first)
	var fe *compile.FirstError
	if !errors.As(err, &fe) {
		return err
	}
	var errs schema.ErrorList
	at := c.Path.Append(t.Entry)
	for _, p := range fe.Problems {
		errs.Add(file, at+p.Path, "%s: the entry chunk does not fit process %s's %s: %s", c.Name(), t.ProcessName, fe.Chunk, p.Message)
	}
	if len(fe.Problems) == 0 {
		errs.Add(file, at, "%s: %v", c.Name(), fe)
	}
	return errs.Err()
}
