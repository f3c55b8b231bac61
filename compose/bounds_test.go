package compose

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/schema"
)

// TestBounds: each bound on a composition stops it with an error that
// names the place and the bound, and a bound raised in Options lets the
// same input through.
func TestBounds(t *testing.T) {
	reg := seedRegistry(t)
	chain := func(n int) string { return `"p"` + strings.Repeat(" | IdentifyParticipants", n) }
	bomb := func(levels int) jsonv.Value {
		defs := jsonv.NewObject(levels)
		defs.Set("l0", parse(t, `{"type": "string"}`))
		for i := 1; i < levels; i++ {
			defs.Set(fmt.Sprintf("l%d", i), parse(t, fmt.Sprintf(`{"type": "object", "properties": {"a": {"$ref": "#/$defs/l%d"}, "b": {"$ref": "#/$defs/l%d"}}}`, i-1, i-1)))
		}
		return jsonv.ObjectValue(
			jsonv.Member{Name: "properties", Value: parse(t, fmt.Sprintf(`{"root": {"$ref": "#/$defs/l%d"}}`, levels-1))},
			jsonv.Member{Name: "$defs", Value: defs.Value()})
	}
	tests := []struct {
		name string
		run  func(Options) error
		opts Options // raised bounds under which run succeeds
		want string
	}{
		{"steps", func(o Options) error { _, err := Pipeline(context.Background(), chain(MaxSteps+1), o); return err },
			Options{MaxSteps: MaxSteps + 1},
			fmt.Sprintf("<pipeline>:1:%d: the pipeline is too long: over the limit of 1000 instruction calls for one pipeline", len(chain(MaxSteps))+4)},
		{"steps, lowered", func(o Options) error { _, err := Pipeline(context.Background(), chain(3), o); return err },
			Options{MaxSteps: 3},
			"<pipeline>:1:53: the pipeline is too long: over the limit of 2 instruction calls for one pipeline"},
		{"values of a pipeline's steps", func(o Options) error { _, err := Pipeline(context.Background(), chain(3), o); return err },
			Options{MaxInlined: 30},
			"<pipeline>:1:53: the pipeline is too large: its steps' instructions hold more than 20 values together"},
		{"values inlined by $ref", func(o Options) error { _, err := Flatten(context.Background(), "bomb.json", bomb(12), o); return err },
			Options{MaxInlined: 1 << 16},
			`bomb.json: /$defs/l7/properties/b/$ref: $ref "#/$defs/l6" makes the composed schema too large: over 1000 values inlined (a schema that refers to the same part many times at every level?)`},
	}
	lowered := map[string]Options{"steps, lowered": {MaxSteps: 2}, "values of a pipeline's steps": {MaxInlined: 20}, "values inlined by $ref": {MaxInlined: 1000}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := lowered[tt.name]
			o.Registry = reg
			if err := tt.run(o); err == nil || err.Error() != tt.want {
				t.Errorf("err = %v\nwant %s", err, tt.want)
			}
			tt.opts.Registry = reg
			if err := tt.run(tt.opts); err != nil {
				t.Errorf("with the bound raised: %v", err)
			}
		})
	}
	// The exponential shape is stopped at the default bound too, at once.
	if _, err := Flatten(context.Background(), "bomb.json", bomb(40), Options{}); err == nil || !strings.Contains(err.Error(), "over 1048576 values inlined") {
		t.Errorf("a 40-level $ref bomb: %v", err)
	}
}

// TestCancelled: composing under a context that has ended stops, and the
// error wraps the context's cause.
func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("the client went away")
	cancel(cause)
	reg := seedRegistry(t)
	doc := parse(t, `{"type": "object", "properties": {"a": {"type": "string"}}}`)
	_, flatErr := Flatten(ctx, "in.json", doc, Options{})
	_, uriErr := FlattenURI(ctx, "aug:instructions/IdentifyParticipants", Options{Registry: reg})
	_, pipeErr := Pipeline(ctx, `"p" | IdentifyParticipants | DraftInvitation`, Options{Registry: reg})
	_, toolErr := Toolset(ctx, []string{"aug:instructions/IdentifyParticipants"}, Options{Registry: reg})
	for name, err := range map[string]error{"Flatten": flatErr, "FlattenURI": uriErr, "Pipeline": pipeErr, "Toolset": toolErr} {
		if !errors.Is(err, cause) || !strings.Contains(err.Error(), "stopped: the client went away") {
			t.Errorf("%s: err = %v, want the context's cause", name, err)
		}
	}
}

// TestNotASchema: a document, a registry document or a $ref target that is
// not a schema object is refused, naming where it is.
func TestNotASchema(t *testing.T) {
	reg := &registry.Registry{}
	for uri, doc := range map[string]string{"aug:instructions/List": `[{"type": "string"}]`, "aug:instructions/Text": `"just text"`} {
		if err := reg.Add(uri, parse(t, doc)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		run  func() error
		want string
	}{
		{"top-level array", func() error {
			_, err := Flatten(context.Background(), "in.json", parse(t, `[{"type": "object"}]`), Options{})
			return err
		}, `in.json: /: the document must be a schema: a JSON object {"type": …, "properties": …}, not an array`},
		{"top-level string", func() error {
			_, err := Flatten(context.Background(), "in.json", parse(t, `"x"`), Options{})
			return err
		}, `in.json: /: the document must be a schema: a JSON object {"type": …, "properties": …}, not a string`},
		{"registry document", func() error {
			_, err := FlattenURI(context.Background(), "aug:instructions/List", Options{Registry: reg})
			return err
		}, `aug:instructions/List: /: aug:instructions/List names an array, not a schema object`},
		{"pipeline instruction", func() error {
			_, err := Pipeline(context.Background(), `"p" | Text`, Options{Registry: reg})
			return err
		}, `aug:instructions/Text: /: aug:instructions/Text names a string, not a schema object`},
		{"$ref target", func() error {
			_, err := Flatten(context.Background(), "in.json", parse(t, `{"properties": {"a": {"$ref": "aug:instructions/List#/0/type"}, "b": {"$ref": "#/$defs/n"}}, "$defs": {"n": 3}}`), Options{Registry: reg})
			return err
		}, `in.json: /properties/a/$ref: $ref "aug:instructions/List#/0/type" names a string, not a schema` + "\n" +
			`in.json: /properties/b/$ref: $ref "#/$defs/n" names a number, not a schema`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.run(); err == nil || err.Error() != tt.want {
				t.Errorf("err = %v\nwant %s", err, tt.want)
			}
		})
	}
}

// TestUnreadableNames: a pipeline or a toolset whose names hold control,
// bidirectional or invisible characters is refused where they stand.
func TestUnreadableNames(t *testing.T) {
	reg := seedRegistry(t)
	for _, name := range []string{"Bad\u202eName", "Bad\u200bName"} {
		if err := reg.Add("aug:instructions/"+name, parse(t, `{"type": "object"}`)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		run  func() error
		want string
	}{
		{"bidi in a pipeline", func() error {
			_, err := Pipeline(context.Background(), "\"p\" | Identify\u202eParticipants", Options{Registry: reg})
			return err
		}, "<pipeline>:1:15: the pipeline holds U+202E, a bidirectional text control: its names must read as they are written"},
		{"NUL in a pipeline", func() error {
			_, err := Pipeline(context.Background(), "\"p\" | Identify\x00Participants", Options{Registry: reg})
			return err
		}, "<pipeline>:1:15: the pipeline holds U+0000, a control character: its names must read as they are written"},
		{"tool names", func() error {
			_, err := Toolset(context.Background(), []string{"aug:instructions/Bad\u202eName", "aug:instructions/Bad\u200bName"}, Options{Registry: reg})
			return err
		}, `aug:instructions/Bad\u202eName: /: tool name "Bad\u202eName" holds U+202E, a bidirectional text control: a tool's name must read as it is written` + "\n" +
			`aug:instructions/Bad\u200bName: /: tool name "Bad\u200bName" holds U+200B, an invisible character: a tool's name must read as it is written`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.run(); err == nil || err.Error() != tt.want {
				t.Errorf("err = %v\nwant %s", err, tt.want)
			}
		})
	}
}

// TestRepeatedCalls: a call written twice with the same arguments is one
// step however long the chain before it, and calls that differ in their
// arguments are not.
func TestRepeatedCalls(t *testing.T) {
	reg := seedRegistry(t)
	long := `"p"` + strings.Repeat(" | IdentifyParticipants", 50)
	out, err := Pipeline(context.Background(), `DraftInvitation(a: `+long+`, b: `+long+`, c: FindCommonSlot(prompt), d: FindCommonSlot("p"))`, Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	names := stepNames(t, out)
	if len(names) != 53 || names[50] != "step51_find_common_slot" || names[51] != "step52_find_common_slot" || names[52] != "step53_draft_invitation" {
		t.Errorf("%d steps: %q", len(names), names[48:])
	}
	refs := schema.Strings(out.Lookup("properties").Lookup("step53_draft_invitation").Lookup("references"))
	if strings.Join(refs, ",") != "step50_identify_participants,step51_find_common_slot,step52_find_common_slot" {
		t.Errorf("references %q", refs)
	}
}

// TestSuggestBounded: skipping names too far by length and stopping a
// distance early change nothing about what is suggested: Suggest agrees
// with the plain algorithm on every pair of a set of names and typos.
func TestSuggestBounded(t *testing.T) {
	known := []string{"identifyParticipants", "fetchAvailability", "findCommonSlot", "draftInvitation", "x", "identify",
		"step12_identify_participants", "llmContext1", "Определить", "sendInvitation_Activity", "ab", "abc"}
	names := append([]string{"identifyParticipant", "fetchAvailabilty", "FINDCOMMONSLOT", "identfy", "y", "a", "abd",
		"somethingElseEntirely", "Определит", "sendInvitation", "llmcontext2", "step13_identify_participants"}, known...)
	for _, name := range names {
		if got, want := Suggest(name, known, 3), plainSuggest(name, known, 3); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("Suggest(%q) = %q, want %q", name, got, want)
		}
	}
}

// plainSuggest is Suggest as first written: every distance in full.
func plainSuggest(name string, known []string, n int) []string {
	type cand struct {
		s string
		d int
	}
	var cs []cand
	lname := strings.ToLower(name)
	limit := max(2, len([]rune(name))/3)
	if len([]rune(name)) <= 3 {
		limit = 1
	}
	for _, k := range known {
		d := distance([]rune(lname), []rune(strings.ToLower(k)), math.MaxInt)
		if d <= limit || strings.Contains(strings.ToLower(k), lname) {
			cs = append(cs, cand{k, d})
		}
	}
	slices.SortStableFunc(cs, func(a, b cand) int { return a.d - b.d })
	var out []string
	for _, c := range cs[:min(n, len(cs))] {
		out = append(out, c.s)
	}
	return out
}
