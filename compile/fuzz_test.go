package compile

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/augceo/vibe/jsonv"
)

// FuzzCompile feeds the compiler arbitrary documents: it must never panic,
// must return either a process or located errors, and what it compiles must
// decode again. Run: go test -fuzz=FuzzCompile ./compile
func FuzzCompile(f *testing.F) {
	// Small seeds: the fuzzer minimizes every input that finds new coverage,
	// and minimizing a seed-001-sized document takes longer than a run.
	for _, s := range []string{
		`{"properties":{"llmContext1":{"properties":{"p":{"type":"object","properties":{"o":{"type":"string"}},"required":["o"]},"f":{"references":["p"]}},"required":["p","f"]},"serverContext1":{"properties":{"F_Activity":{"references":["llmContext1.f"]}}},"userContext":{"properties":{"c":{"references":["llmContext1.p.o"],"enum":["A","R"]}}}}}`,
		`{"properties":{"a":{"references":["b"]},"b":{"properties":{"output":{"type":"object"}}}}}`,
		`{"properties":{"llmContext1":{"properties":{"x":{"references":["llmContext1.x.y"]}}},"userContext":{"properties":{"ok":{}}}}}`,
		`{"properties":{"s_Activity":{"properties":{"output":{}}},"t":{"references":["s_Activity.output"]}},"required":["s_Activity","u"]}`,
		`{"properties":{"a":{"$ref":"#/properties/b"},"b":{"allOf":[{"properties":{"default":{}}}]}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := jsonv.Parse(data)
		if err != nil {
			return
		}
		p, err := Compile(context.Background(), "fuzz.json", doc, Options{Actions: []string{"x", "s_Activity", "t"}})
		if err != nil {
			return
		}
		prog := p.Program()
		if _, err := json.Marshal(prog); err != nil {
			t.Fatalf("the program does not encode: %v\n%s", err, jsonv.Marshal(p.Document))
		}
		// What a model is sent is what the chunk says, written once.
		for _, pc := range prog.Chunks {
			if pc.Kind != LLM {
				continue
			}
			loose := lean(Project(p.Document.Lookup("$defs").Lookup(pc.Name), ProjectOptions{}).Schema)
			if back := Inline(pc.Schema); !jsonv.Equal(back, loose) {
				t.Fatalf("chunk %s as sent, inlined:\n%s\nas written:\n%s", pc.Name, jsonv.Marshal(back), jsonv.Marshal(loose))
			}
			Project(pc.Schema, ProjectOptions{Strict: true})
		}
		for _, c := range p.Chunks {
			Project(p.Document.Lookup("$defs").Lookup(c.Name), ProjectOptions{Strict: true})
		}
		_ = p.Explain(discard{})
	})
}

type discard struct{}

func (discard) Write(b []byte) (int, error) { return len(b), nil }
