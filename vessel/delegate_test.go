package vessel

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/schema"
)

// writeFiles writes files (path → content) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAheadOfTime: resolved ahead, the tool's parameters are exactly the
// delegate's input fields and its _output is the result's contract.
func TestAheadOfTime(t *testing.T) {
	ts, _ := example(t, "speaker", "orchestrator.vessel.json")
	tool := ts.Tool("sendMessageChecked")
	if tool.Kind != DelegateKind || tool.Resolve != ResolveAhead {
		t.Fatalf("tool %+v", tool)
	}
	if got := string(jsonv.Marshal(tool.Schema.Lookup("properties"))); got != `{"recipientId":{"type":"string"},"messageBody":{"type":"string"}}` {
		t.Errorf("parameters %s, want the delegate's input fields", got)
	}
	if got := schema.Properties(tool.Output).Names(); !slices.Equal(got, []string{"recipientId", "messageBody"}) {
		t.Errorf("contract %v", got)
	}
	for _, kw := range []string{"_delegate", "_resolve", "_output"} {
		if strings.Contains(string(jsonv.Marshal(tool.Schema)), kw) {
			t.Errorf("the model sees %s", kw)
		}
	}
	// The runtime tool keeps its own parameters.
	if got := schema.Properties(ts.Tool("sendMessage").Schema).Names(); !slices.Equal(got, []string{"userId", "text"}) {
		t.Errorf("runtime tool parameters %v", got)
	}
}

const speakerDoc = `{"name": "speaker_EN", "context": [{"type": "system", "message": "You speak English."}],
	"schema": {"type": "object", "properties": {"recipientId": {"type": "string"}, "messageBody": {"type": "string"}},
		"_output": {"type": "object", "properties": {"recipientId": {"type": "string"}, "messageBody": {"type": "string"}}, "required": ["recipientId", "messageBody"]}}}`

// TestBadDelegateTools: every problem of a delegate tool is reported with
// the file and path.
func TestBadDelegateTools(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"registry/instructions/bad.json":  `{"_delegate": 3, "_scopes": ["state", "secrets", 4, "state..user"], "_resolve": "later", "type": "object"}`,
		"registry/instructions/gone.json": `{"_delegate": "aug:requests/nobody", "_resolve": "ahead", "type": "object"}`,
		"v.vessel.json":                   `{"name": "v", "tools": ["aug:instructions/bad", "aug:instructions/gone"]}`,
	})
	r, err := registry.Open(filepath.Join(dir, "registry"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := Load(filepath.Join(dir, "v.vessel.json"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Build(context.Background(), v, BuildOptions{Registry: r})
	for _, want := range []string{
		`instructions/bad.json: /_delegate: _delegate must be a registry URI, a file path, an http(s) URL or "anonymous"`,
		`instructions/bad.json: /_scopes/1: unknown scope "secrets": want state, state.a.b, input, input.a.b, data or system`,
		`instructions/bad.json: /_scopes/2: a scope is a string such as "state.currentUser", not number`,
		`instructions/bad.json: /_scopes/3: scope "state..user" has an empty part`,
		`instructions/bad.json: /_resolve: _resolve must be "runtime" (the default) or "ahead", not "later"`,
		`instructions/gone.json: /_delegate: resolving the delegate ahead of time: delegate aug:requests/nobody:`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in\n%v", want, err)
		}
	}
}

func TestParseDelegate(t *testing.T) {
	_, err := ParseDelegate("d", "d.json", mustJSON(t, `{"context": {"type": "system"}, "schema": [], "tools": ["x"], "colour": 1}`))
	for _, want := range []string{
		`d.json: /context: a context is an array of messages, not object`,
		`d.json: /schema: schema must be an object`,
		`d.json: /tools/0: "x" is not a registry URI`,
		`d.json: /colour: unknown key "colour" in a stored Request`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in\n%v", want, err)
		}
	}
	d, err := ParseDelegate("aug:requests/x", "x.json", mustJSON(t, `{"schema": {"type": "object", "properties": {"a": {}}, "_output": {"type": "string"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(jsonv.Marshal(d.Input)); got != `{"type":"object","properties":{"a":{}}}` || d.Output.Str() != "" || d.Output.Kind() != jsonv.KindObject {
		t.Errorf("input %s output %s", got, jsonv.Marshal(d.Output))
	}
}

// FuzzDelegate feeds arbitrary stored Requests, parent contexts and
// scopes through ParseDelegate, Scoped and SubRequest: an error or a
// sub-request, never a panic; no scoped message keeps an _instance.
func FuzzDelegate(f *testing.F) {
	f.Add(speakerDoc, `[{"type":"state","_instance":"A","data":{"u":{"id":1}}},{"type":"state","_instance":"B","data":{"u":{"id":2}}},{"type":"data","_instance":"B","data":"b"}]`, "state.u,data,input", "A")
	f.Add(`{"context":[{"type":"input","input":3}],"schema":{"_output":true}}`, `[{"type":"input","input":{"x":[1]}},{"type":"system","message":"s"}]`, "input.x,system", "")
	f.Fuzz(func(t *testing.T, doc, parent, scopes, instance string) {
		d, err := jsonv.Parse([]byte(doc))
		if err != nil {
			return
		}
		del, err := ParseDelegate("d", "d.json", d)
		if err != nil {
			return
		}
		p, err := jsonv.Parse([]byte(parent))
		if err != nil {
			return
		}
		msgs, err := ParseContext("p.json", "", p)
		if err != nil {
			return
		}
		states, err := InitialStates(msgs)
		if err != nil {
			return
		}
		scoped, err := Scoped(strings.Split(scopes, ","), msgs, states[instance], instance)
		if err != nil {
			return
		}
		for _, m := range scoped {
			if _, ok := m.Get("_instance"); ok {
				t.Fatalf("scoped message %s keeps _instance", jsonv.Marshal(m))
			}
		}
		sub := SubRequest(del, scoped, jsonv.ObjectValue())
		if sub.Len() != del.Context.Len()+len(scoped)+1 {
			t.Fatalf("sub-request %s", jsonv.Marshal(sub))
		}
	})
}

// BenchmarkDelegate is the delegate activity's work for one call: load
// speaker_EN from the registry and prepare its isolated sub-request.
func BenchmarkDelegate(b *testing.B) {
	ts, reg := example(b, "speaker", "orchestrator.vessel.json")
	loader := &Loader{Registry: reg}
	tool := ts.Tool("sendMessage")
	params := mustJSON(b, `{"userId": "u_123", "text": "Hello, world!"}`)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		d, err := loader.Load(ctx, tool.Delegate)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := d.Prepare(ctx, tool, nil, params, BuildOptions{Registry: reg, Loader: loader}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDelegateFilesConfined: a delegate file is read only from the Vessel's
// directory, the registry's or a Loader root — symbolic links resolved —
// and a tool whose _delegate points elsewhere is refused when the toolset
// is built, naming the tool and the path as written.
func TestDelegateFilesConfined(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{"secret.json": speakerDoc})
	writeFiles(t, dir, map[string]string{
		"helper.json":                        speakerDoc,
		"registry/requests/inside.json":      speakerDoc,
		"registry/instructions/near.json":    `{"_delegate": "helper.json", "type": "object"}`,
		"registry/instructions/up.json":      `{"_delegate": "../../../../../../../../etc/passwd", "type": "object"}`,
		"registry/instructions/abs.json":     `{"_delegate": "` + filepath.Join(outside, "secret.json") + `", "_resolve": "ahead", "type": "object"}`,
		"registry/instructions/linked.json":  `{"_delegate": "registry/requests/link.json", "type": "object"}`,
		"registry/instructions/inreg.json":   `{"_delegate": "registry/requests/inside.json", "_resolve": "ahead", "type": "object"}`,
		"registry/instructions/missing.json": `{"_delegate": "../nowhere.json", "type": "object"}`,
		"v.vessel.json":                      `{"name": "v", "tools": ["aug:instructions/near", "aug:instructions/up", "aug:instructions/abs", "aug:instructions/linked", "aug:instructions/inreg", "aug:instructions/missing"]}`,
	})
	// A link inside the registry to a file outside it.
	if err := os.Symlink(filepath.Join(outside, "secret.json"), filepath.Join(dir, "registry/requests/link.json")); err != nil {
		t.Fatal(err)
	}
	r, err := registry.Open(filepath.Join(dir, "registry"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := Load(filepath.Join(dir, "v.vessel.json"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Build(context.Background(), v, BuildOptions{Registry: r})
	reg := filepath.Join(dir, "registry", "instructions")
	want := []string{
		reg + `/up.json: /_delegate: tool up: delegate file "../../../../../../../../etc/passwd" is outside the Vessel's directory and the registry's: a delegate file must be in one of them`,
		reg + `/abs.json: /_delegate: tool abs: delegate file "` + filepath.Join(outside, "secret.json") + `" is outside the Vessel's directory and the registry's: a delegate file must be in one of them`,
		reg + `/linked.json: /_delegate: tool linked: delegate file "registry/requests/link.json" is outside the Vessel's directory and the registry's: a delegate file must be in one of them`,
		reg + `/missing.json: /_delegate: tool missing: delegate file "../nowhere.json" is outside the Vessel's directory and the registry's: a delegate file must be in one of them`,
	}
	if err == nil || err.Error() != strings.Join(want, "\n") {
		t.Errorf("err:\n%v\nwant:\n%s", err, strings.Join(want, "\n"))
	}
	for _, e := range schema.Errors(err, "") {
		if !errors.Is(e, ErrOutsideRoots) {
			t.Errorf("%v does not wrap ErrOutsideRoots", e)
		}
	}

	// The loader a worker runs delegates with: the registry's directory and
	// its roots, nothing else.
	ctx := context.Background()
	for _, tt := range []struct {
		loader *Loader
		path   string
		ok     bool
	}{
		{&Loader{Registry: r}, filepath.Join(dir, "registry/requests/inside.json"), true},
		{&Loader{Registry: r}, filepath.Join(dir, "helper.json"), false},
		{&Loader{Registry: r, Roots: []string{dir}}, filepath.Join(dir, "helper.json"), true},
		{&Loader{Registry: r, Roots: []string{dir}}, filepath.Join(dir, "registry/requests/link.json"), false},
		{&Loader{Registry: r, Roots: []string{dir}}, filepath.Join(dir, "..", filepath.Base(outside), "secret.json"), false},
		{&Loader{}, filepath.Join(outside, "secret.json"), false},
		{&Loader{Roots: []string{outside}}, filepath.Join(outside, "secret.json"), true},
	} {
		_, err := tt.loader.Load(ctx, tt.path)
		if tt.ok != (err == nil) || (!tt.ok && !errors.Is(err, ErrOutsideRoots)) {
			t.Errorf("Load(%s) with roots %v: %v", tt.path, tt.loader.Roots, err)
		}
	}
}

// TestNestKeepsTheModelQueue: a delegate's sub-request asks the model its
// parent asks, on the parent's model queue, one level deeper in its chain;
// a split request's parts keep it too.
func TestNestKeepsTheModelQueue(t *testing.T) {
	parent := &Request{Chain: []string{"a"}, Depth: 1, MaxDepth: 3, MaxFanOut: 5, ModelQueue: "vibe.model"}
	sub := &Request{}
	if err := sub.Nest(parent, "b"); err != nil {
		t.Fatal(err)
	}
	if sub.ModelQueue != "vibe.model" || sub.Depth != 2 || !slices.Equal(sub.Chain, []string{"a", "b"}) || sub.MaxDepth != 3 || sub.MaxFanOut != 5 {
		t.Errorf("nested %+v", sub)
	}
	ts := &Toolset{Vessel: "v", DecisionSize: 1}
	r := &Request{Toolset: ts, Instances: []string{"x", "y"}, States: map[string]jsonv.Value{}, ModelQueue: "vibe.model"}
	for _, p := range r.Split() {
		if p.ModelQueue != "vibe.model" {
			t.Errorf("a part's model queue %q", p.ModelQueue)
		}
	}
}
