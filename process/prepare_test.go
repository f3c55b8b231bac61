package process

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/schema"
)

// effect is a registry process of two contexts; the second's step takes
// its shape from the document's $defs.
const effect = `{"title": "Effect", "properties": {
	"llmContext1": {"properties": {"draft": {"type": "object", "properties": {"text": {"type": "string"}}}}},
	"llmContext2": {"properties": {"summary": {"$ref": "#/$defs/Summary"}}},
	"note": {"type": "string"}},
	"$defs": {"Summary": {"type": "object", "properties": {"gist": {"type": "string"}}}}}`

func effectRegistry(t *testing.T) *registry.Registry {
	t.Helper()
	var reg registry.Registry
	if err := reg.Add("aug:processes/effect", mustParse(t, effect)); err != nil {
		t.Fatal(err)
	}
	return &reg
}

// steps lists the steps of a prepared process, in order.
func steps(in durable.Start) []string {
	var names []string
	for _, ch := range in.Program.Chunks {
		for _, s := range ch.Steps {
			names = append(names, s.Name)
		}
	}
	return names
}

// TestPrepareFragment: a process URI's fragment selects the part of the
// document it names — a JSON Pointer or a step's name — and only that part
// runs, its references resolved in its document; a fragment that names
// nothing is refused as not found, naming the fragment, and one that names
// no schema object at its place. Nothing reaches the engine: the client
// has none.
func TestPrepareFragment(t *testing.T) {
	c := &Client{Registry: effectRegistry(t)}
	ctx := context.Background()
	for uri, want := range map[string]string{
		"aug:processes/effect":                          "draft summary note",
		"aug:processes/effect#/properties/llmContext2":  "summary",
		"aug:processes/effect#llmContext1":              "draft",
		"aug:processes/effect#/properties/llmContext1/": "", // the member "" of llmContext1: there is none
	} {
		in, _, err := c.Prepare(ctx, StartOptions{Process: uri})
		if want == "" {
			if !errors.Is(err, registry.ErrNotFound) {
				t.Errorf("%s: err = %v, want not found", uri, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", uri, err)
			continue
		}
		if got := strings.Join(steps(in), " "); got != want || in.Name != "effect" {
			t.Errorf("%s runs %s steps %q, want %q", uri, in.Name, got, want)
		}
	}
	for uri, want := range map[string]string{
		"aug:processes/effect#/nope/x": `cannot start aug:processes/effect#/nope/x: aug:processes/effect#/nope/x: fragment #/nope/x: /nope: no member "nope": not found`,
		"aug:processes/effect#nope":    `cannot start aug:processes/effect#nope: aug:processes/effect#nope: no step named "nope": not found`,
	} {
		_, _, err := c.Prepare(ctx, StartOptions{Process: uri})
		if !errors.Is(err, registry.ErrNotFound) || err.Error() != want {
			t.Errorf("%s:\n got %v\nwant %s (not found)", uri, err, want)
		}
	}
	_, _, err := c.Prepare(ctx, StartOptions{Process: "aug:processes/effect#/properties/note/type"})
	var located *schema.Error
	if !errors.As(err, &located) || located.Path != "/properties/note/type" ||
		err.Error() != "aug:processes/effect: /properties/note/type: aug:processes/effect#/properties/note/type names a string, not a process schema (an object)" {
		t.Errorf("a fragment that names a string: %v", err)
	}
	_, _, err = c.Prepare(ctx, StartOptions{Process: "aug:processes/effect#/a~2"})
	if !errors.As(err, &located) || errors.Is(err, registry.ErrNotFound) || !strings.Contains(err.Error(), `JSON pointer "/a~2"`) {
		t.Errorf("a malformed pointer: %v", err)
	}
}

// TestPrepareInvalidSchema: an inline process whose schema the validator
// refuses is refused when it is prepared, with the file, the JSON path and
// what was expected — not started to fail at its first model call.
func TestPrepareInvalidSchema(t *testing.T) {
	tests := []struct{ name, prop, want string }{
		{"pattern", `{"type": "string", "pattern": "(["}`, "inline: /properties/greet/properties/text/pattern: not a valid JSON Schema: '([' is not valid regex"},
		{"type", `{"type": "strng"}`, "inline: /properties/greet/properties/text/type: not a valid JSON Schema: value must be one of 'array', 'boolean', 'integer', 'null', 'number', 'object', 'string'"},
		{"minimum", `{"type": "integer", "minimum": "5"}`, "inline: /properties/greet/properties/text/minimum: not a valid JSON Schema: got string, want number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := mustParse(t, `{"title": "Greet", "properties": {"greet": {"type": "object", "properties": {"text": `+tt.prop+`}}}}`)
			_, _, err := (&Client{}).Prepare(context.Background(), StartOptions{Document: doc, File: "inline"})
			var list schema.ErrorList
			if !errors.As(err, &list) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v (%T), want a schema.ErrorList with %q", err, err, tt.want)
			}
		})
	}
}

// TestBadSchemaNotRetried: a schema the validator refuses fails a model
// call, and a check of a value, at once and for good (ErrTypeBadSchema),
// not after five attempts at a deterministic error.
func TestBadSchemaNotRetried(t *testing.T) {
	bad := mustParse(t, `{"type": "object", "properties": {"a": {"type": "string", "pattern": "(["}}}`)
	_, err := llm.Fill(context.Background(), nil, llm.Task{Name: "LLM_a", Schema: bad}, llm.Options{})
	if !errors.Is(err, llm.ErrBadSchema) {
		t.Fatalf("llm.Fill: %v, want llm.ErrBadSchema", err)
	}
	for what, err := range map[string]error{
		"a model call": durable.FillError(err),
		"a check": func() error {
			_, err := durable.CheckValue(context.Background(), durable.CheckInput{Schema: bad, Value: jsonv.StringValue("x")})
			return err
		}(),
	} {
		var ae *temporal.ApplicationError
		if !errors.As(err, &ae) || !ae.NonRetryable() || ae.Type() != durable.ErrTypeBadSchema || !strings.Contains(ae.Message(), "/properties/a/pattern") {
			t.Errorf("%s: %v (%T), want a non-retryable %s naming the pattern", what, err, err, durable.ErrTypeBadSchema)
		}
	}
}
