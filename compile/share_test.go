package compile

import (
	"context"
	"strings"
	"testing"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/schema"
)

// field is a string field long enough to be worth sharing.
const field = `{"type": "string", "description": "What this step decided, in a few sentences."}`

func TestShare(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{{
		name: "the same fields under two steps",
		in: `{"type": "object", "properties": {
			"one": {"type": "object", "properties": {"result": ` + field + `}, "required": ["result"]},
			"two": {"type": "object", "properties": {"result": ` + field + `, "extra": {"type": "integer"}}}}}`,
		want: `{"type":"object","properties":{` +
			`"one":{"type":"object","properties":{"result":{"$ref":"#/$defs/result"}},"required":["result"]},` +
			`"two":{"type":"object","properties":{"result":{"$ref":"#/$defs/result"},"extra":{"type":"integer"}}}},` +
			`"$defs":{"result":{"type":"string","description":"What this step decided, in a few sentences."}}}`,
	}, {
		name: "steps alike but for their descriptions keep theirs beside the reference",
		in: `{"type": "object", "properties": {
			"one": {"description": "First.", "type": "object", "properties": {"result": ` + field + `}, "required": ["result"]},
			"two": {"description": "Second.", "type": "object", "properties": {"result": ` + field + `}, "required": ["result"]}}}`,
		want: `{"type":"object","properties":{` +
			`"one":{"description":"First.","$ref":"#/$defs/step"},` +
			`"two":{"description":"Second.","$ref":"#/$defs/step"}},` +
			`"$defs":{"step":{"type":"object","properties":{"result":{"type":"string","description":"What this step decided, in a few sentences."}},"required":["result"]}}}`,
	}, {
		name: "nothing repeats",
		in:   `{"type": "object", "properties": {"one": ` + field + `, "two": {"type": "integer"}}}`,
		want: `{"type":"object","properties":{"one":{"type":"string","description":"What this step decided, in a few sentences."},"two":{"type":"integer"}}}`,
	}, {
		name: "a repeat shorter than a reference to it",
		in:   `{"type": "object", "properties": {"one": {"type": "string"}, "two": {"type": "string"}}}`,
		want: `{"type":"object","properties":{"one":{"type":"string"},"two":{"type":"string"}}}`,
	}, {
		name: "definitions that are the same become one, their references rewritten",
		in: `{"type": "object", "properties": {"a1": {"$ref": "#/$defs/a"}, "b1": {"$ref": "#/$defs/b"}},
			"$defs": {"a": {"type": "object", "properties": {"result": ` + field + `}}, "b": {"type": "object", "properties": {"result": ` + field + `}}}}`,
		want: `{"type":"object","properties":{"a1":{"$ref":"#/$defs/a"},"b1":{"$ref":"#/$defs/a"}},` +
			`"$defs":{"a":{"type":"object","properties":{"result":{"type":"string","description":"What this step decided, in a few sentences."}}}}}`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			in := parse(t, tc.in)
			before := string(jsonv.Marshal(in))
			got := Share(in)
			if s := string(jsonv.Marshal(got)); s != tc.want {
				t.Errorf("Share\n got %s\nwant %s", s, tc.want)
			}
			if string(jsonv.Marshal(in)) != before {
				t.Error("Share changed its input")
			}
			if back := Inline(got); !jsonv.Equal(back, Inline(in)) {
				t.Errorf("Inline(Share(s)) is not s:\n got %s\nwant %s", jsonv.Marshal(back), jsonv.Marshal(Inline(in)))
			}
		})
	}
}

// longchain is the ten-step planning chain of the benchmarks: each step
// an instruction with the same two fields, its own description, and a
// title that repeats its name.
func longchain(t testing.TB) *Process {
	t.Helper()
	reg, err := registry.Open("testdata/longchain")
	if err != nil {
		t.Fatal(err)
	}
	p, err := CompilePipeline(context.Background(), `"Plan the launch of a note-taking app" | FrameProblem | GatherFacts | ListOptions | WeighOptions | ChooseApproach | PlanSteps | EstimateCost | IdentifyRisks | MitigateRisks | WriteSummary`, Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestForModelLongchain(t *testing.T) {
	p := longchain(t)
	loose := Project(p.Document.Lookup("$defs").Lookup(p.Chunks[0].Name), ProjectOptions{}).Schema
	sent := p.Program().Chunks[0].Schema
	if got, was := len(jsonv.Marshal(sent)), len(jsonv.Marshal(loose)); got*2 > was {
		t.Errorf("the shared chunk is %d bytes, the chunk as written %d: want at most half", got, was)
	}
	text := string(jsonv.Marshal(sent))
	for _, m := range schema.Properties(loose).Members() {
		if d := m.Value.Lookup("description").Str(); !strings.Contains(text, d) {
			t.Errorf("step %s's description %q is not sent", m.Name, d)
		}
		if title := m.Value.Lookup("title").Str(); strings.Contains(text, `"`+title+`"`) {
			t.Errorf("step %s's title %q, its instruction's name, is still sent", m.Name, title)
		}
	}
	if n := strings.Count(text, `"handoff"`); n != 2 { // its property and its "required"
		t.Errorf("the fields are written %d times, want once", n/2)
	}
	// The same answers pass and fail against both.
	for _, answer := range []string{
		`{"step1_frame_problem": {"result": "r", "handoff": "h"}}`,
		`{"step1_frame_problem": {"result": 1, "handoff": "h"}}`,
	} {
		a, b := check(t, loose, answer), check(t, sent, answer)
		if a != b {
			t.Errorf("%s: the chunk as written says %q, as sent %q", answer, a, b)
		}
	}
}

// check is what validating answer against s says.
func check(t *testing.T, s jsonv.Value, answer string) string {
	t.Helper()
	problems, err := schema.Check(s, parse(t, answer))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range problems {
		out = append(out, p.String())
	}
	return strings.Join(out, "; ")
}

func TestProjectStrictShared(t *testing.T) {
	t.Run("descriptions move into the prompt's text when that is shorter", func(t *testing.T) {
		p := longchain(t)
		sent := p.Program().Chunks[0].Schema
		strict := Project(sent, ProjectOptions{Strict: true})
		if hasSiblings(strict.Schema) {
			t.Fatalf("a $ref with keywords beside it: %s", jsonv.Marshal(strict.Schema))
		}
		if len(strict.Notes) != 10 {
			t.Fatalf("%d notes, want one per step: %v", len(strict.Notes), strict.Notes)
		}
		text := NotesText(strict.Notes)
		for _, m := range schema.Properties(sent).Members() {
			if !strings.Contains(text, "- "+m.Name+": "+m.Value.Lookup("description").Str()) {
				t.Errorf("the notes do not say step %s's description:\n%s", m.Name, text)
			}
		}
		inlined := strictify(inlineSiblings(sent))
		if moved := len(jsonv.Marshal(strict.Schema)) + len(text); moved >= len(jsonv.Marshal(inlined)) {
			t.Errorf("notes and schema are %d bytes, the inline form %d", moved, len(jsonv.Marshal(inlined)))
		}
	})
	t.Run("the step stays whole when that is shorter", func(t *testing.T) {
		// A definition shorter than the line its place's description
		// would take in the prompt.
		s := parse(t, `{"type": "object", "properties": {
			"one": {"description": "First.", "$ref": "#/$defs/n"},
			"two": {"description": "Second.", "$ref": "#/$defs/n"}},
			"$defs": {"n": {"type": "integer"}}}`)
		strict := Project(s, ProjectOptions{Strict: true})
		if len(strict.Notes) != 0 || hasSiblings(strict.Schema) || strict.Schema.Lookup("$defs").Kind() != jsonv.KindNull {
			t.Errorf("want the steps inline, without notes: %s %v", jsonv.Marshal(strict.Schema), strict.Notes)
		}
		for _, step := range []string{"one", "two"} {
			if d := strict.Schema.Lookup("properties").Lookup(step).Lookup("description"); d.Kind() != jsonv.KindString {
				t.Errorf("step %s lost its description: %s", step, jsonv.Marshal(strict.Schema))
			}
		}
	})
	t.Run("a strict answer is restored through references", func(t *testing.T) {
		s := Share(parse(t, `{"type": "object", "properties": {
			"one": {"type": "object", "properties": {"result": {"type": "string"}, "note": {"type": "string", "description": "Anything else worth saying."}}, "required": ["result"]},
			"two": {"type": "object", "properties": {"result": {"type": "string"}, "note": {"type": "string", "description": "Anything else worth saying."}}, "required": ["result"]}},
			"required": ["one", "two"]}`))
		strict := Project(s, ProjectOptions{Strict: true})
		got := jsonv.Marshal(strict.Restore(parse(t, `{"one": {"result": "a", "note": null}, "two": {"result": "b", "note": "c"}}`)))
		if want := `{"one":{"result":"a"},"two":{"result":"b","note":"c"}}`; string(got) != want {
			t.Errorf("restored %s, want %s", got, want)
		}
	})
}

func TestSameName(t *testing.T) {
	for _, tc := range []struct {
		title, key string
		want       bool
	}{
		{"FrameProblem", "step1_frame_problem", true},
		{"identifyParticipants", "identifyParticipants", true},
		{"FetchAvailability", "step3_fetch_availability_Activity", true},
		{"ConfirmInvitation_User", "step6_confirm_invitation_User", true},
		{"Frame the problem", "step1_frame_problem", false},
		{"Assess the comment's sentiment", "step1_assess_sentiment", false},
		{"", "step1_frame_problem", false},
		{"Step1", "step1", true},
	} {
		if got := sameName(tc.title, tc.key); got != tc.want {
			t.Errorf("sameName(%q, %q) = %v, want %v", tc.title, tc.key, got, tc.want)
		}
	}
}

func TestMultiplexSharedChunk(t *testing.T) {
	// A chunk whose shared definition has a step prefix's name; each step's
	// part carries its item's tag.
	chunk := parse(t, `{"type": "object", "properties": {
		"x": {"type": "object", "properties": {"v": {"$ref": "#/$defs/a"}}},
		"y": {"type": "object", "properties": {"w": {"$ref": "#/$defs/a"}}}},
		"$defs": {"a": `+field+`}}`)
	m, err := Multiplex(chunk, 2, MultiplexOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"object","properties":{"a1":{"$ref":"#/$defs/a"},"a2":{"$ref":"#/$defs/a"},"b1":{"$ref":"#/$defs/b"},"b2":{"$ref":"#/$defs/b"}},` +
		`"required":["a1","a2","b1","b2"],"additionalProperties":false,` +
		`"$defs":{"a":{"type":"object","properties":{"_item":{"type":"string"},"v":{"$ref":"#/$defs/a_2"}},"required":["_item"]},"b":{"type":"object","properties":{"w":{"$ref":"#/$defs/a_2"}}},` +
		`"a_2":{"type":"string","description":"What this step decided, in a few sentences."}}}`
	if got := string(jsonv.Marshal(m)); got != want {
		t.Errorf("Multiplex\n got %s\nwant %s", got, want)
	}
	// Two steps of one schema: one definition, which both refer to.
	same := parse(t, `{"type": "object", "properties": {"x": `+field+`, "y": `+field+`}}`)
	m, err = Multiplex(same, 1, MultiplexOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want = `{"type":"object","properties":{"a1":{"$ref":"#/$defs/a"},"b1":{"$ref":"#/$defs/a"}},"required":["a1","b1"],"additionalProperties":false,` +
		`"$defs":{"a":{"type":"string","description":"What this step decided, in a few sentences."}}}`
	if got := string(jsonv.Marshal(m)); got != want {
		t.Errorf("Multiplex of two steps alike\n got %s\nwant %s", got, want)
	}
	inline, err := Multiplex(chunk, 2, MultiplexOptions{Inline: true})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(jsonv.Marshal(inline)), "$ref") {
		t.Errorf("Inline left a reference: %s", jsonv.Marshal(inline))
	}
}

func TestMultiplexStrictNotes(t *testing.T) {
	p := longchain(t).Program()
	m, err := Multiplex(p.Chunks[0].Schema, 3, MultiplexOptions{})
	if err != nil {
		t.Fatal(err)
	}
	strict := Project(m, ProjectOptions{Strict: true})
	text := NotesText(strict.Notes)
	if !strings.Contains(text, "\n- a<i>: States the problem the launch must solve") || !strings.Contains(text, "\n- j<i>: Writes the plan") {
		t.Errorf("the notes do not name the items' properties as the legend does:\n%s", text)
	}
	if hasSiblings(strict.Schema) {
		t.Errorf("a $ref with keywords beside it: %s", jsonv.Marshal(strict.Schema))
	}
}
