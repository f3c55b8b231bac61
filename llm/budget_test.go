package llm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/registry"
)

func TestModels(t *testing.T) {
	m := DefaultModels()
	for _, tc := range []struct {
		model   string
		context int
	}{
		{"gpt-4o-mini", 128000},
		{"gpt-4o-mini-2024-07-18", 128000}, // a dated snapshot
		{"claude-sonnet-4-5-20250929", 200000},
		{"no-such-model", 0},
	} {
		if got := m.Limits(tc.model).Context; got != tc.context {
			t.Errorf("%s: context %d, want %d", tc.model, got, tc.context)
		}
	}
	dir := t.TempDir()
	own := filepath.Join(dir, "models.json")
	os.WriteFile(own, []byte(`{"models": {"gpt-4o-mini": {"context": 1000, "output": 100}, "local": {"context": 8192, "output": 2048, "tokenizer": "cl100k_base"}}}`), 0o644)
	m, err := LoadModels(own)
	if err != nil {
		t.Fatal(err)
	}
	if l := m.Limits("gpt-4o-mini"); l.Context != 1000 || l.Output != 100 {
		t.Errorf("the file does not override the shipped table: %+v", l)
	}
	if l := m.Limits("gpt-4.1"); l.Context != 1047576 {
		t.Errorf("the shipped table is lost under the file: %+v", l)
	}
	if tok := TokenizerFor("local", m); !tok.Exact() || tok.Name() != "cl100k_base" {
		t.Errorf("local's tokenizer: %s", tok.Name())
	}
	for _, tc := range []struct{ body, want string }{
		{`[]`, "models.json: /: a models file is an object"},
		{`{"models": {"m": {"context": -1}}}`, "models.json: /models/m/context: context must be a whole number of tokens above 0, not -1"},
		{`{"models": {"m": {"tokenizer": "claude"}}}`, `/models/m/tokenizer: tokenizer must be "o200k_base" or "cl100k_base"`},
		{`{"model": {}}`, `models.json: /model: unknown key "model"`},
	} {
		os.WriteFile(own, []byte(tc.body), 0o644)
		if _, err := LoadModels(own); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.body, err, tc.want)
		}
	}
}

func TestTokenizer(t *testing.T) {
	for _, tc := range []struct {
		model, name string
		exact       bool
		hello       int
	}{
		{"gpt-4o-mini", "o200k_base", true, 3},
		{"gpt-4-0613", "cl100k_base", true, 3},
		{"claude-haiku-4-5", "estimate (4 bytes a token)", false, 3},
	} {
		tok := TokenizerFor(tc.model, DefaultModels())
		if tok.Name() != tc.name || tok.Exact() != tc.exact {
			t.Errorf("%s: %s (exact %v), want %s", tc.model, tok.Name(), tok.Exact(), tc.name)
		}
		if n := tok.Count("Hello, world"); n != tc.hello {
			t.Errorf("%s: %d tokens in \"Hello, world\", want %d", tc.model, n, tc.hello)
		}
	}
}

func TestBudgetLoop(t *testing.T) {
	// A chunk that loops shows the model its previous attempt: the
	// largest context is that too.
	reg := registry.NewFS(fstest.MapFS{
		"instructions/Draft.json": {Data: []byte(`{"type": "object", "properties": {"text": {"type": "string", "maxLength": 4000}}, "required": ["text"]}`)},
	}, "test")
	p, err := compile.CompilePipeline(context.Background(), `"Write" | Draft`, compile.Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	prog := p.Program()
	b, err := NewBudget(prog, BudgetOptions{Model: "gpt-4o-mini"})
	if err != nil {
		t.Fatal(err)
	}
	if c := b.Chunks[0]; c.Context != 0 || c.Output < 1000 || c.Prompt != c.System+c.Schema+c.Text {
		t.Errorf("one call: %+v", c)
	}
	prog.Chunks[0].Loop = &compile.Loop{Max: 3, Done: "/_loopDone"}
	if b, err = NewBudget(prog, BudgetOptions{Model: "gpt-4o-mini"}); err != nil {
		t.Fatal(err)
	}
	if c := b.Chunks[0]; c.Context < 1000 {
		t.Errorf("in a loop, the previous attempt is not in the context: %+v", c)
	}
}
