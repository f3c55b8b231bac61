package compose

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/augceo/vibe/internal/golden"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/schema"
)

const exampleDir = "../examples/schedule-meeting"

func parse(t testing.TB, s string) jsonv.Value {
	t.Helper()
	v, err := jsonv.Parse([]byte(s))
	if err != nil {
		t.Fatalf("parse %s: %v", s, err)
	}
	return v
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Check(t, "testdata/"+name, got)
}

func exampleRegistry(t testing.TB) *registry.Registry {
	t.Helper()
	r, err := registry.Open(exampleDir + "/registry")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestScheduleMeetingTool composes seed 001's Vessel tool schema: the
// golden file holds the whole result, and the points the seed's "final
// composed tool schema" makes are asserted one by one.
func TestScheduleMeetingTool(t *testing.T) {
	doc, err := schema.ReadFile(exampleDir + "/tool.json")
	if err != nil {
		t.Fatal(err)
	}
	out, err := Flatten(context.Background(), "tool.json", doc, Options{Registry: exampleRegistry(t)})
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "schedule-meeting-tool.json", append(jsonv.MarshalIndent(out, "  "), '\n'))

	names := func(v jsonv.Value) []string { return schema.Properties(v).Names() }
	if got := names(out); !slices.Equal(got, []string{"name", "llmContext1"}) {
		t.Errorf("top-level properties %q", got)
	}
	ctx := out.Lookup("properties").Lookup("llmContext1")
	wantOrder := []string{"_considerations", "_previousAttempt", "_loopDone", "identifyParticipants", "fetchAvailability", "_feedback"}
	if got := names(ctx); !slices.Equal(got, wantOrder) {
		t.Errorf("llmContext1 properties %q, want %q", got, wantOrder)
	}
	if got := schema.Required(ctx); !slices.Equal(got, wantOrder) {
		t.Errorf("llmContext1 required %q, want %q", got, wantOrder)
	}
	if got := schema.Required(out); !slices.Equal(got, []string{"name", "llmContext1"}) {
		t.Errorf("required %q", got)
	}
	ip := ctx.Lookup("properties").Lookup("identifyParticipants")
	wantDesc := "Определяет участников встречи из ввода пользователя\nИзвлекает и идентифицирует информацию об участниках из промпта пользователя, определяя, кто должен быть включен во встречу"
	if got := ip.Lookup("description").Str(); got != wantDesc {
		t.Errorf("identifyParticipants description %q: the allOf item's description must follow the instruction's after a newline", got)
	}
	if got := out.Lookup("properties").Lookup("name").Lookup("const").Str(); got != "ScheduleMeeting" {
		t.Errorf("name const %q", got)
	}
	// Nothing of the composition machinery is left.
	jsonv.Walk(out, func(p jsonv.Pointer, v jsonv.Value) error {
		for _, kw := range []string{"allOf", "$ref", "$defs"} {
			if v.Object().Has(kw) {
				t.Errorf("%s still has %q", p, kw)
			}
		}
		if schema.Properties(v).Has("default") {
			t.Errorf("%s still has a default slot", p)
		}
		return nil
	})
}

// TestOrderSurvives200 checks that property order survives parse → compose
// → emit for a schema of 200 properties whose names are not in sorted
// order, with nested objects, references and a mixin among them.
func TestOrderSurvives200(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	var b strings.Builder
	var want []string
	b.WriteString(`{"type":"object","properties":{`)
	for i, n := range r.Perm(200) {
		name := fmt.Sprintf("p%03d_%c", n, 'z'-rune(i%26))
		want = append(want, name)
		if i > 0 {
			b.WriteByte(',')
		}
		switch i % 4 {
		case 0: // a nested object with its own unsorted order
			fmt.Fprintf(&b, `%q:{"type":"object","properties":{"zz":{"type":"string"},"aa":{"type":"object","properties":{"y":{"type":"string"},"b":{"type":"integer"}}},"mm":{"type":"boolean"}}}`, name)
		case 1: // a local reference
			fmt.Fprintf(&b, `%q:{"$ref":"#/$defs/shared","description":"use %d"}`, name, i)
		case 2: // a mixin around nested content
			fmt.Fprintf(&b, `%q:{"allOf":[{"$ref":"#/$defs/wrap"},{"properties":{"default":{"properties":{"q":{"type":"string"},"c":{"type":"string"}}}}}]}`, name)
		default:
			fmt.Fprintf(&b, `%q:{"type":"number"}`, name)
		}
	}
	b.WriteString(`},"$defs":{"shared":{"type":"object","properties":{"k":{"type":"string"},"d":{"type":"string"}}},` +
		`"wrap":{"type":"object","properties":{"_before":{"type":"string"},"default":{"type":"object"},"_after":{"type":"string"}},"required":["_before","default","_after"]}}}`)
	doc := parse(t, b.String())
	out, err := Flatten(context.Background(), "big.json", doc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	back := parse(t, string(jsonv.MarshalIndent(out, "  ")))
	props := schema.Properties(back)
	if got := props.Names(); !slices.Equal(got, want) {
		t.Fatalf("top-level order changed:\n got %q\nwant %q", got[:10], want[:10])
	}
	if slices.IsSorted(want) {
		t.Fatal("the test's names are sorted: it proves nothing")
	}
	for i, name := range want {
		p, _ := props.Get(name)
		var got, wantNested []string
		switch i % 4 {
		case 0:
			got, wantNested = schema.Properties(p).Names(), []string{"zz", "aa", "mm"}
			if inner := schema.Properties(p.Lookup("properties").Lookup("aa")).Names(); !slices.Equal(inner, []string{"y", "b"}) {
				t.Errorf("%s/aa order %q", name, inner)
			}
		case 1:
			got, wantNested = schema.Properties(p).Names(), []string{"k", "d"}
		case 2:
			got, wantNested = schema.Properties(p).Names(), []string{"_before", "q", "c", "_after"}
		default:
			continue
		}
		if !slices.Equal(got, wantNested) {
			t.Errorf("%s: nested order %q, want %q", name, got, wantNested)
		}
	}
}

func TestFlattenRules(t *testing.T) {
	reg := &registry.Registry{}
	add := func(uri, doc string) {
		if err := reg.Add(uri, parse(t, doc)); err != nil {
			t.Fatal(err)
		}
	}
	add("aug:instructions/x", `{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"X","description":"Does x.","type":"object","properties":{"b":{"type":"string"},"a":{"type":"string"}},"required":["b"]}`)
	add("aug:m/Outer", `{"title":"Outer","description":"a mixin","type":"object","properties":{"_o1":{"type":"string"},"default":{"type":"object"},"_o2":{"type":"string"}},"required":["_o1","default","_o2"]}`)
	add("aug:m/Inner", `{"type":"object","properties":{"_i":{"type":"string"},"default":{"type":"object"}},"required":["_i","default"]}`)
	add("aug:m/Loose", `{"type":"object","properties":{"_l":{"type":"string"},"default":{"type":"object"}}}`)
	add("aug:m/v:1", `{"const":1}`)
	add("aug:m/v:3", `{"const":3}`)

	tests := []struct {
		name, in, want string
	}{
		{"ref sibling description is appended, other siblings override",
			`{"$ref":"aug:instructions/x","description":"Here: for y.","title":"Y"}`,
			`{"title":"Y","description":"Does x.\nHere: for y.","type":"object","properties":{"b":{"type":"string"},"a":{"type":"string"}},"required":["b"]}`},
		{"the same description is not repeated",
			`{"$ref":"aug:instructions/x","description":"Does x."}`,
			`{"title":"X","description":"Does x.","type":"object","properties":{"b":{"type":"string"},"a":{"type":"string"}},"required":["b"]}`},
		{"allOf of an instruction and a description",
			`{"allOf":[{"$ref":"aug:instructions/x"},{"description":"More."}]}`,
			`{"title":"X","description":"Does x.\nMore.","type":"object","properties":{"b":{"type":"string"},"a":{"type":"string"}},"required":["b"]}`},
		{"own keywords first, allOf spliced where it stands",
			`{"title":"T","allOf":[{"type":"object","properties":{"p":{"type":"string"}}}],"description":"D"}`,
			`{"title":"T","type":"object","properties":{"p":{"type":"string"}},"description":"D"}`},
		{"nested mixins wrap outside-in; content with required keeps its own",
			`{"allOf":[{"$ref":"aug:m/Outer"},{"$ref":"aug:m/Inner"},{"properties":{"default":{"$ref":"aug:instructions/x"}}}]}`,
			`{"type":"object","properties":{"_o1":{"type":"string"},"_i":{"type":"string"},"b":{"type":"string"},"a":{"type":"string"},"_o2":{"type":"string"}},"required":["_o1","_i","b","_o2"]}`},
		{"content without required becomes all required when the slot is",
			`{"allOf":[{"$ref":"aug:m/Outer"},{"properties":{"default":{"properties":{"z":{},"y":{}}}}}]}`,
			`{"type":"object","properties":{"_o1":{"type":"string"},"z":{},"y":{},"_o2":{"type":"string"}},"required":["_o1","z","y","_o2"]}`},
		{"a mixin that does not require its slot keeps the content's required",
			`{"allOf":[{"$ref":"aug:m/Loose"},{"properties":{"default":{"properties":{"z":{},"y":{}},"required":["y"]}}}]}`,
			`{"type":"object","properties":{"_l":{"type":"string"},"z":{},"y":{}},"required":["y"]}`},
		{"a slot filled directly by an item's properties",
			`{"allOf":[{"$ref":"aug:m/Outer"},{"properties":{"c":{"type":"integer"}}}]}`,
			`{"type":"object","properties":{"_o1":{"type":"string"},"c":{"type":"integer"},"_o2":{"type":"string"}},"required":["_o1","c","_o2"]}`},
		{"a property refined by a later item",
			`{"allOf":[{"properties":{"n":{"type":"string","description":"the name"}},"required":["n"]},{"properties":{"n":{"const":"A"},"m":{}},"required":["m"]}]}`,
			`{"properties":{"n":{"type":"string","description":"the name","const":"A"},"m":{}},"required":["n","m"]}`},
		{"local references and definitions",
			`{"type":"object","properties":{"a":{"$ref":"#/$defs/s"},"b":{"$ref":"#a"}},"$defs":{"s":{"type":"object","properties":{"s":{"type":"string"}}}}}`,
			`{"type":"object","properties":{"a":{"type":"object","properties":{"s":{"type":"string"}}},"b":{"type":"object","properties":{"s":{"type":"string"}}}}}`},
		{"the latest version",
			`{"$ref":"aug:m/v"}`, `{"const":3}`},
		{"an exact version",
			`{"$ref":"aug:m/v:1"}`, `{"const":1}`},
		{"subschemas everywhere are flattened",
			`{"items":{"$ref":"aug:m/v:1"},"anyOf":[{"$ref":"aug:m/v:3"},true],"not":{"$ref":"aug:m/v:1"},"const":{"$ref":"data, not a schema"}}`,
			`{"items":{"const":1},"anyOf":[{"const":3},true],"not":{"const":1},"const":{"$ref":"data, not a schema"}}`},
		{"a property named default outside allOf is not a slot",
			`{"type":"object","properties":{"default":{"type":"string"}}}`,
			`{"type":"object","properties":{"default":{"type":"string"}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := parse(t, tt.in)
			before := string(jsonv.Marshal(in))
			out, err := Flatten(context.Background(), "in.json", in, Options{Registry: reg})
			if err != nil {
				t.Fatal(err)
			}
			if got := string(jsonv.Marshal(out)); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			if after := string(jsonv.Marshal(in)); after != before {
				t.Errorf("Flatten changed its input:\n%s", after)
			}
		})
	}
	// The registry's documents are shared: flattening must not change them.
	d, _ := reg.Document("aug:m/Outer")
	if got := string(jsonv.Marshal(d.Value)); !strings.Contains(got, `"default"`) || !strings.Contains(got, `"title":"Outer"`) {
		t.Errorf("a registry document was changed: %s", got)
	}
}

func TestFlattenReportsEveryError(t *testing.T) {
	in := parse(t, `{"properties":{"a":{"$ref":"#/nope"},"b":{"$ref":"aug:x"},"c":{"allOf":[{"type":"string"},{"type":"integer"}]}}}`)
	_, err := Flatten(context.Background(), "in.json", in, Options{})
	errs := schema.Errors(err, "")
	if len(errs) != 3 {
		t.Fatalf("got %d errors, want 3:\n%v", len(errs), err)
	}
	for i, p := range []jsonv.Pointer{"/properties/a/$ref", "/properties/b/$ref", "/properties/c/allOf/1"} {
		if errs[i].File != "in.json" || errs[i].Path != p {
			t.Errorf("error %d at %s: %s, want in.json: %s", i, errs[i].File, errs[i].Path, p)
		}
	}
}
