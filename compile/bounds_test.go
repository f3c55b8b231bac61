package compile

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/augceo/vibe/compose"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

// steps is a process of n plain steps, each referencing the one before.
func steps(n int) jsonv.Value {
	props := jsonv.NewObject(n)
	for i := 1; i <= n; i++ {
		s := `{"type": "object", "properties": {"v": {"type": "string"}}}`
		if i > 1 {
			s = fmt.Sprintf(`{"type": "object", "references": ["s%d.v"], "properties": {"v": {"type": "string"}}}`, i-1)
		}
		v, err := jsonv.Parse([]byte(s))
		if err != nil {
			panic(err)
		}
		props.Set(fmt.Sprintf("s%d", i), v)
	}
	return jsonv.ObjectValue(jsonv.Member{Name: "properties", Value: props.Value()})
}

// TestStepBound: a process of more than MaxSteps steps is refused, naming
// the count and the bound, before its references are looked at; raised in
// Options, the same process compiles.
func TestStepBound(t *testing.T) {
	doc := steps(compose.MaxSteps + 1)
	_, err := Compile(context.Background(), "big.json", doc, Options{})
	if want := "big.json: /properties: the process is too large: it has 1001 steps, over the limit of 1000 for one process"; err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
	p, err := Compile(context.Background(), "big.json", doc, Options{MaxSteps: compose.MaxSteps + 1})
	if err != nil || len(p.Steps()) != compose.MaxSteps+1 {
		t.Errorf("with MaxSteps raised: %v", err)
	}
	// The pipeline's bound is the same option.
	expr := `"p"` + strings.Repeat(" | Classify", 3)
	if _, err := CompilePipeline(context.Background(), expr, Options{Registry: testRegistry(t), MaxSteps: 2}); err == nil || !strings.Contains(err.Error(), "over the limit of 2 instruction calls for one pipeline") {
		t.Errorf("a pipeline past MaxSteps: %v", err)
	}
}

// TestBudget: a compilation that outlives its budget, or whose context
// ends, stops and says why.
func TestBudget(t *testing.T) {
	reg := testRegistry(t)
	expr := `"p"` + strings.Repeat(" | Classify | Explain", 400)
	tests := []struct {
		name string
		ctx  func() context.Context
		opts Options
		is   []error
		msg  string
	}{
		{"budget", context.Background, Options{Registry: reg, Budget: time.Nanosecond},
			[]error{ErrBudget, context.DeadlineExceeded}, "stopped: the compile time budget ran out (1ns): context deadline exceeded"},
		{"cancelled", func() context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		}, Options{Registry: reg}, []error{context.Canceled}, "stopped: context canceled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, pipeErr := CompilePipeline(tt.ctx(), expr, tt.opts)
			_, docErr := Compile(tt.ctx(), "big.json", steps(800), tt.opts)
			for _, err := range []error{pipeErr, docErr} {
				for _, target := range tt.is {
					if !errors.Is(err, target) {
						t.Errorf("err = %v, want %v", err, target)
					}
				}
				if err == nil || !strings.Contains(err.Error(), tt.msg) {
					t.Errorf("err = %v, want it to say %q", err, tt.msg)
				}
			}
		})
	}
	// The default budget is far more than a long pipeline needs.
	if _, err := CompilePipeline(context.Background(), expr, Options{Registry: reg}); err != nil {
		t.Errorf("within the default budget: %v", err)
	}
}

// TestUnreadableStepNames: context and step names with control,
// bidirectional or invisible characters are refused at the properties
// that hold them, and the rest of the process is still checked.
func TestUnreadableStepNames(t *testing.T) {
	doc := parse(t, `{"properties": {
		"llmContext1": {"properties": {"ok": {}, "bad\u0000": {}, "a\u202eb": {"references": ["nowhere"]}}},
		"serverContext\u2069": {"properties": {"x": {}}},
		"z\ufeff": {},
		"later": {"references": ["missing"]}}}`)
	_, err := Compile(context.Background(), "names.json", doc, Options{})
	want := []string{
		`names.json: /properties/llmContext1/properties: step name "bad\x00" holds U+0000, a control character: a step's name must read as it is written`,
		`names.json: /properties/llmContext1/properties: step name "a\u202eb" holds U+202E, a bidirectional text control: a step's name must read as it is written`,
		`names.json: /properties: context name "serverContext\u2069" holds U+2069, a bidirectional text control: a context's name must read as it is written`,
		`names.json: /properties: step name "z\ufeff" holds U+FEFF, an invisible character: a step's name must read as it is written`,
		`names.json: /properties/later/references/0: step "later" references "missing", which names no step`,
	}
	if err == nil || err.Error() != strings.Join(want, "\n") {
		t.Errorf("err:\n%v\nwant:\n%s", err, strings.Join(want, "\n"))
	}
}

// TestBatchBound: BatchCalls refuses more items than MaxBatchItems before
// it makes anything.
func TestBatchBound(t *testing.T) {
	p, err := CompilePipeline(context.Background(), `"Moderate" | Classify | Explain`, Options{Registry: testRegistry(t)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		n    int
		want string
	}{
		{0, "0 items; give at least 1"},
		{MaxBatchItems + 1, "100001 items is over the limit of 100000 items laid out at once"},
		{100_000_000, "100000000 items is over the limit of 100000 items laid out at once"},
	} {
		if _, err := p.BatchCalls(tt.n, Limits{}, ProjectOptions{}, MultiplexOptions{}); err == nil || err.Error() != tt.want {
			t.Errorf("BatchCalls(%d) = %v, want %s", tt.n, err, tt.want)
		}
	}
	calls, err := p.BatchCalls(100, Limits{}, ProjectOptions{}, MultiplexOptions{})
	if err != nil || len(calls) != 4 {
		t.Errorf("BatchCalls(100): %d calls, %v", len(calls), err)
	}
}

// TestInvalidSchemaRefused: a process whose schema the validator would
// refuse to compile when the process runs — a pattern that is no regular
// expression, a type that is no type, a minimum that is no number, in a
// step of the process or of an instruction it references — is refused
// when it is compiled, each problem at its path. A place the compiler
// reports itself is not reported twice.
func TestInvalidSchemaRefused(t *testing.T) {
	tests := []struct {
		name, doc string
		want      []string
	}{
		{"a pattern that is no regular expression",
			`{"properties": {"greet": {"type": "object", "properties": {"text": {"type": "string", "pattern": "(["}}}}}`,
			[]string{"p.json: /properties/greet/properties/text/pattern: not a valid JSON Schema: '([' is not valid regex: error parsing regexp: missing closing ]: `[`"}},
		{"a type that is no type",
			`{"properties": {"greet": {"type": "object", "properties": {"text": {"type": "strng"}}}}}`,
			[]string{"p.json: /properties/greet/properties/text/type: not a valid JSON Schema: value must be one of 'array', 'boolean', 'integer', 'null', 'number', 'object', 'string'"}},
		{"a minimum that is no number",
			`{"properties": {"llmContext1": {"properties": {"count": {"type": "object", "properties": {"n": {"type": "integer", "minimum": "5"}}}}}}}`,
			[]string{"p.json: /properties/llmContext1/properties/count/properties/n/minimum: not a valid JSON Schema: got string, want number"}},
		{"an output schema a person never sees",
			`{"properties": {"look_Activity": {"properties": {"q": {"type": "string"}, "output": {"type": ["object", "null"], "properties": {"hits": {"type": "array", "maxItems": -1}}}}}}}`,
			[]string{"p.json: /properties/look_Activity/properties/output/properties/hits/maxItems: not a valid JSON Schema: minimum: got -1, want 0"}},
		{"said once where the compiler says it",
			`{"properties": {"a": 42, "b": {"type": "object", "properties": {"x": {}}, "required": "x"}}}`,
			[]string{
				`p.json: /properties/a: step "a" must be an object schema, not 42`,
				`p.json: /properties/b/required: required must be an array of property names, not "x"`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compile(context.Background(), "p.json", parse(t, tt.doc), Options{})
			var list schema.ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("err = %v (%T), want a schema.ErrorList", err, err)
			}
			list.Sort()
			if got := list.Error(); got != strings.Join(tt.want, "\n") {
				t.Errorf("err:\n%s\nwant:\n%s", got, strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestEmptyStepName: a step named "" is refused at its own path, in a
// context and at the top, and the rest of the process is still checked.
func TestEmptyStepName(t *testing.T) {
	doc := parse(t, `{"properties": {
		"llmContext1": {"properties": {"ok": {}, "": {"type": "object"}}},
		"": {"type": "object"},
		"later": {"references": ["missing"]}}}`)
	_, err := Compile(context.Background(), "names.json", doc, Options{})
	want := []string{
		`names.json: /properties/llmContext1/properties/: a step's name is empty: a step needs a name, which its results and references go by`,
		`names.json: /properties/: a step's name is empty: a step needs a name, which its results and references go by`,
		`names.json: /properties/later/references/0: step "later" references "missing", which names no step`,
	}
	if err == nil || err.Error() != strings.Join(want, "\n") {
		t.Errorf("err:\n%v\nwant:\n%s", err, strings.Join(want, "\n"))
	}
}
