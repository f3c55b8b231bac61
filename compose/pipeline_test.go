package compose

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/schema"
)

// seedRegistry holds the instructions of seed 001's pipeline, filled from Go.
func seedRegistry(t testing.TB) *registry.Registry {
	t.Helper()
	r := &registry.Registry{}
	obj := func(title string, props ...string) string {
		var b strings.Builder
		b.WriteString(`{"title":"` + title + `","type":"object","properties":{`)
		for i, p := range props {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`"` + p + `":{"type":"string"}`)
		}
		b.WriteString(`}}`)
		return b.String()
	}
	docs := map[string]string{
		"IdentifyParticipants":       obj("Identify participants", "organizer", "attendee"),
		"FetchAvailability":          obj("Availability parameters", "organizerId", "attendeeId"),
		"FetchAvailability_Activity": `{"title":"Availability","type":"object","properties":{"output":{"type":["object","null"],"properties":{"slots":{"type":"array"}}}}}`,
		"FindCommonSlot":             obj("Find a common slot", "selectedSlot", "reasoning"),
		"DraftInvitation":            obj("Draft the invitation", "subject", "body"),
		"ConfirmInvitation_User":     `{"title":"Confirm","type":"object","properties":{"decision":{"enum":["Approve","Reject"]}}}`,
		"SendInvitation_Activity":    `{"title":"Send","type":"object","references":["step4_draft_invitation","step5_confirm_invitation_User"],"properties":{"output":{"type":["object","null"]}}}`,
	}
	for name, doc := range docs {
		if err := r.Add("aug:instructions/"+name, parse(t, doc)); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func stepNames(t *testing.T, v jsonv.Value) []string {
	t.Helper()
	return schema.Properties(v).Names()
}

func TestPipelineForms(t *testing.T) {
	reg := seedRegistry(t)
	chain, err := Pipeline(context.Background(), `"Schedule a meeting" | IdentifyParticipants | FetchAvailability | FindCommonSlot | DraftInvitation`, Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	nested, err := Pipeline(context.Background(), `DraftInvitation(FindCommonSlot(FetchAvailability(IdentifyParticipants("Schedule a meeting"))))`, Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if a, b := string(jsonv.Marshal(chain)), string(jsonv.Marshal(nested)); a != b {
		t.Errorf("the two forms differ:\n%s\n%s", a, b)
	}
	want := []string{"step1_identify_participants", "step2_fetch_availability", "step3_find_common_slot", "step4_draft_invitation"}
	if got := stepNames(t, chain); !slices.Equal(got, want) {
		t.Errorf("steps %q, want %q", got, want)
	}
	if got := schema.Required(chain); !slices.Equal(got, want) {
		t.Errorf("required %q", got)
	}
	if got := chain.Lookup("prompt").Str(); got != "Schedule a meeting" {
		t.Errorf("prompt %q", got)
	}
	props := chain.Lookup("properties")
	if _, ok := props.Lookup(want[0]).Get("references"); ok {
		t.Error("the first step references the prompt only: it has no references")
	}
	for i := 1; i < len(want); i++ {
		refs := schema.Strings(props.Lookup(want[i]).Lookup("references"))
		if !slices.Equal(refs, []string{want[i-1]}) {
			t.Errorf("%s references %q, want the step before", want[i], refs)
		}
	}
	checkGolden(t, "pipeline-schedule-meeting.json", append(jsonv.MarshalIndent(chain, "  "), '\n'))
}

// TestPipelineSeedNested is seed 001's nested expression: named arguments,
// a call written twice (one step), and the class suffixes kept.
func TestPipelineSeedNested(t *testing.T) {
	const expr = `
// Send the approved invitation
SendInvitation_Activity(
  // Get user approval for the drafted invitation
  ConfirmInvitation_User(
    // Create invitation with participants and selected time slot
    DraftInvitation(
      // Extract participant info from user's request
      participants: IdentifyParticipants(prompt),
      // Find a time that works for both participants
      slot: FindCommonSlot(
        // Get calendar data for identified participants
        FetchAvailability_Activity(IdentifyParticipants(prompt)))
    )
  )
)`
	out, err := Pipeline(context.Background(), expr, Options{Registry: seedRegistry(t)})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"step1_identify_participants",
		"step2_fetch_availability_Activity",
		"step3_find_common_slot",
		"step4_draft_invitation",
		"step5_confirm_invitation_User",
		"step6_send_invitation_Activity",
	}
	if got := stepNames(t, out); !slices.Equal(got, want) {
		t.Fatalf("steps %q, want %q", got, want)
	}
	refs := func(step string) []string {
		return schema.Strings(out.Lookup("properties").Lookup(step).Lookup("references"))
	}
	if got := refs("step4_draft_invitation"); !slices.Equal(got, []string{"step1_identify_participants", "step3_find_common_slot"}) {
		t.Errorf("draft references %q: both arguments' steps", got)
	}
	if got := refs("step6_send_invitation_Activity"); !slices.Equal(got, []string{"step4_draft_invitation", "step5_confirm_invitation_User"}) {
		t.Errorf("declared references must be kept, got %q", got)
	}
	if _, ok := out.Get("prompt"); ok {
		t.Error("a bare prompt is given at run time: no prompt keyword")
	}
	// references sit after the title, as in seed 001's process.
	if names := out.Lookup("properties").Lookup("step3_find_common_slot").Object().Names(); names[0] != "title" || names[1] != "references" {
		t.Errorf("step keywords %q", names)
	}
}

func TestPipelineChainWithArguments(t *testing.T) {
	// X | F(a) is F(X, a).
	out, err := Pipeline(context.Background(), `"p" | IdentifyParticipants | DraftInvitation(FindCommonSlot(prompt))`, Options{Registry: seedRegistry(t)})
	if err != nil {
		t.Fatal(err)
	}
	refs := schema.Strings(out.Lookup("properties").Lookup("step3_draft_invitation").Lookup("references"))
	if !slices.Equal(refs, []string{"step1_identify_participants", "step2_find_common_slot"}) {
		t.Errorf("references %q", refs)
	}
}

func TestPipelineNameResolution(t *testing.T) {
	reg := seedRegistry(t)
	// A name that differs only in case resolves.
	if _, err := Pipeline(context.Background(), `"p" | identifyParticipants`, Options{Registry: reg}); err != nil {
		t.Errorf("case-insensitive name: %v", err)
	}
	_, err := Pipeline(context.Background(), `"p" | IdentifyParticipant | FindComonSlot`, Options{Registry: reg})
	var list schema.ErrorList
	if !errors.As(err, &list) || len(list) != 2 {
		t.Fatalf("want two errors, got %v", err)
	}
	if !strings.Contains(list[0].Message, "did you mean IdentifyParticipants?") || list[0].Column != 7 {
		t.Errorf("first error: %v", list[0])
	}
	if !strings.Contains(list[1].Message, "did you mean FindCommonSlot?") {
		t.Errorf("second error: %v", list[1])
	}
	if _, err := Pipeline(context.Background(), `"p" | X`, Options{}); err == nil || !strings.Contains(err.Error(), "no registry given") {
		t.Errorf("without a registry: %v", err)
	}
}

func TestSnakeName(t *testing.T) {
	tests := map[string]string{
		"IdentifyParticipants":       "identify_participants",
		"identifyParticipants":       "identify_participants",
		"FetchAvailability_Activity": "fetch_availability_Activity",
		"ConfirmInvitation_User":     "confirm_invitation_User",
		"NotifyUser":                 "notify_user",
		"HTTPRequest":                "http_request",
		"getV2Data":                  "get_v2_data",
		"Fetch_Data":                 "fetch_data",
		"billing/MakeReport":         "make_report",
		"НайтиУчастников":            "найти_участников",
		"_Activity":                  "activity",
	}
	for in, want := range tests {
		if got := SnakeName(in); got != want {
			t.Errorf("SnakeName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParsePipeline(t *testing.T) {
	tests := []struct{ in, want string }{
		{`"p" | A | B`, `B(A("p"))`},
		{`B(A("p"))`, `B(A("p"))`},
		{`'it\'s' | A`, `A("it's")`},
		{`"Привет" | Найти`, `Найти(A)`[:0] + `Найти("Привет")`},
		{`A(prompt) | B(x: C(prompt), y: "q")`, `B(A(prompt), x: C(prompt), y: "q")`},
		{`F(a: "x" | G)`, `F(a: G("x"))`},
		{`A // comment
		| B`, `B(A)`},
		{`A()`, `A`},
		{`prompt | A`, `A(prompt)`},
		{`"tab\tand \u00e9"|A`, `A("tab\tand é")`},
	}
	for _, tt := range tests {
		e, err := ParsePipeline(tt.in)
		if err != nil {
			t.Errorf("ParsePipeline(%q): %v", tt.in, err)
			continue
		}
		if got := e.String(); got != tt.want {
			t.Errorf("ParsePipeline(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestParsePipelineErrors(t *testing.T) {
	tests := []struct {
		in        string
		line, col int
		msg       string
	}{
		{``, 1, 1, "empty pipeline"},
		{`A |`, 1, 4, `expected an instruction name after "|"`},
		{`A | | B`, 1, 5, `expected a quoted prompt or an instruction name, found "|"`},
		{"A(\n  B", 1, 2, `unclosed "(" of A`},
		{`A) `, 1, 2, `unexpected ")" after the end`},
		{"A |\n  \"x\"", 2, 3, "a quoted prompt can only start a pipeline"},
		{`A | prompt`, 1, 5, "the prompt can only start a pipeline"},
		{`"x`, 1, 1, "unterminated string"},
		{"\"x\n\" | A", 1, 1, "must end on its line"},
		{`A(x: B, x: C)`, 1, 12, `argument "x" of A is given twice`},
		{`A(B C)`, 1, 5, `expected "," or ")"`},
		{`"" | A`, 1, 1, "empty prompt"},
		{`A $ B`, 1, 3, `unexpected "$"`},
		{`A(,)`, 1, 3, `expected a quoted prompt or an instruction name, found ","`},
	}
	for _, tt := range tests {
		_, err := ParsePipeline(tt.in)
		var e *schema.Error
		if !errors.As(err, &e) {
			t.Errorf("ParsePipeline(%q) = %v, want a *schema.Error", tt.in, err)
			continue
		}
		if e.Line != tt.line || e.Column != tt.col || !strings.Contains(e.Message, tt.msg) || e.File != PipelineFile {
			t.Errorf("ParsePipeline(%q): %v, want %d:%d %q", tt.in, e, tt.line, tt.col, tt.msg)
		}
	}
}

// FuzzParsePipeline checks that the parser never panics, and that what it
// accepts prints back to an expression that parses to the same thing.
// Run: go test -fuzz=FuzzParsePipeline ./compose
func FuzzParsePipeline(f *testing.F) {
	for _, s := range []string{
		`"Schedule a meeting" | IdentifyParticipants | FetchAvailability`,
		`C(B(A(prompt)))`, `D(p: A(prompt), s: F(G_Activity(A(prompt))))`, `'x' | A(b: "c" | D)`,
		"// c\nA", `"\u00e9" | Б`, `A(`, `"x`, `A | | B`, `A(x: B, x: C)`,
		seedConstProgram, `const a = A(prompt); B(a)`, `const a = A(b); const b = B;`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParsePipeline(s)
		if err != nil {
			var se *schema.Error
			if !errors.As(err, &se) || se.Line < 1 || se.Column < 1 {
				t.Fatalf("error without a position: %v", err)
			}
			return
		}
		printed := e.String()
		again, err := ParsePipeline(printed)
		if err != nil {
			t.Fatalf("%q printed as %q, which does not parse: %v", s, printed, err)
		}
		if again.String() != printed {
			t.Fatalf("%q printed as %q, then as %q", s, printed, again.String())
		}
		_ = SnakeName(printed)
	})
}

// seedConstProgram is seed 001's sequential form of the schedule-meeting
// pipeline, as the seed writes it.
const seedConstProgram = `// Extract participant info from user's request
const participants = IdentifyParticipants(prompt);
// Get calendar data for identified participants
const availabilityParams = FetchAvailability(participants);
const availabilityData = FetchAvailability_Activity(availabilityParams);
// Find a time that works for both participants
const commonSlot = FindCommonSlot(availabilityData);
// Create invitation with participants and selected time slot
const invitation = DraftInvitation(participants, commonSlot);
// Get user approval for the drafted invitation
const approval = ConfirmInvitation_User(invitation);
// Send the approved invitation
const result = SendInvitation_Activity(approval);
`

// seedConstNested is seedConstProgram with each name replaced by its stage.
const seedConstNested = `SendInvitation_Activity(ConfirmInvitation_User(DraftInvitation(
  IdentifyParticipants(prompt),
  FindCommonSlot(FetchAvailability_Activity(FetchAvailability(IdentifyParticipants(prompt)))))))`

// TestPipelineSeedConst: seed 001's const program is the same pipeline as
// its nested form, step for step.
func TestPipelineSeedConst(t *testing.T) {
	reg := seedRegistry(t)
	prog, err := Pipeline(context.Background(), seedConstProgram, Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	nested, err := Pipeline(context.Background(), seedConstNested, Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if a, b := string(jsonv.Marshal(prog)), string(jsonv.Marshal(nested)); a != b {
		t.Errorf("the const program and the nested form differ:\n%s\n%s", a, b)
	}
	want := []string{
		"step1_identify_participants",
		"step2_fetch_availability",
		"step3_fetch_availability_Activity",
		"step4_find_common_slot",
		"step5_draft_invitation",
		"step6_confirm_invitation_User",
		"step7_send_invitation_Activity",
	}
	if got := stepNames(t, prog); !slices.Equal(got, want) {
		t.Fatalf("steps %q, want %q", got, want)
	}
	if got := schema.Strings(prog.Lookup("properties").Lookup("step5_draft_invitation").Lookup("references")); !slices.Equal(got, []string{"step1_identify_participants", "step4_find_common_slot"}) {
		t.Errorf("draft references %q", got)
	}
}

// TestPipelineProgram: the sequential form, its order of steps and its
// printing.
func TestPipelineProgram(t *testing.T) {
	tests := []struct{ in, want string }{
		{`const a = A(prompt); B(a)`, `const a = A(prompt); B(a)`},
		{"const a = \"p\" | A\nconst b = B(x: a, y: C)", `const a = A("p"); const b = B(x: a, y: C);`},
		{`const p = "text"; const a = A(p);`, `const p = "text"; const a = A(p);`},
		{`const(x)`, `const(x)`},
		{`const a = A(prompt); a | B`, `const a = A(prompt); B(a)`},
	}
	for _, tt := range tests {
		e, err := ParsePipeline(tt.in)
		if err != nil {
			t.Errorf("ParsePipeline(%q): %v", tt.in, err)
			continue
		}
		if got := e.String(); got != tt.want {
			t.Errorf("ParsePipeline(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
	// Bindings are steps in the order written, even where the nested form
	// would evaluate another argument first.
	reg := seedRegistry(t)
	out, err := Pipeline(context.Background(), `const slot = FindCommonSlot(prompt); const who = IdentifyParticipants(prompt); DraftInvitation(who, slot)`, Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := stepNames(t, out), []string{"step1_find_common_slot", "step2_identify_participants", "step3_draft_invitation"}; !slices.Equal(got, want) {
		t.Errorf("steps %q, want %q", got, want)
	}
}

// TestPipelineProgramErrors: a name used before it is bound, bound twice,
// or never used is reported at the name, all of them at once.
func TestPipelineProgramErrors(t *testing.T) {
	type at struct {
		line, col int
		msg       string
	}
	tests := []struct {
		in   string
		want []at
	}{
		{"const a = A(b);\nconst b = B(prompt);\nC(a)", []at{{1, 13, "b is used before it is bound at 2:7"}}},
		{"const a = A(a);", []at{{1, 13, "a is used before it is bound at 1:7"}}},
		{"const a = A(prompt);\nconst a = B(prompt);\nC(a)", []at{{2, 7, "a is bound twice: first at 1:7"}}},
		{"const a = A(prompt);\nconst b = B(prompt);\nconst c = C(b);", []at{{1, 7, "a is bound and never used"}}},
		{"const a = A(prompt); const b = B(prompt); C(prompt)", []at{{1, 7, "a is bound and never used"}, {1, 28, "b is bound and never used"}}},
		{"const prompt = A(\"x\"); B(prompt)", []at{{1, 7, "prompt is the pipeline's input"}}},
		{"const a = A(prompt); prompt | a", []at{{1, 31, "a is a bound name, not an instruction"}}},
		{"const a A(prompt)", []at{{1, 9, `expected "=" after const a`}}},
		{"const a = ;", []at{{1, 11, "expected a quoted prompt or an instruction name"}}},
		{"const a = A(prompt); B(a); C(a)", []at{{1, 28, "unexpected name \"C\" after the pipeline's result"}}},
	}
	for _, tt := range tests {
		_, err := ParsePipeline(tt.in)
		errs := schema.Errors(err, "")
		if len(errs) != len(tt.want) {
			t.Errorf("ParsePipeline(%q) = %v, want %d errors", tt.in, err, len(tt.want))
			continue
		}
		for i, w := range tt.want {
			e := errs[i]
			if e.Line != w.line || e.Column != w.col || !strings.Contains(e.Message, w.msg) || e.File != PipelineFile {
				t.Errorf("ParsePipeline(%q): %v, want %d:%d %q", tt.in, e, w.line, w.col, w.msg)
			}
		}
	}
}

// TestPipelinePrompt: a pipeline takes the person's request at run time
// where it names the bare prompt, in any of its forms, or holds it quoted.
func TestPipelinePrompt(t *testing.T) {
	for _, tt := range []struct {
		expr              string
		atRunTime, quoted bool
	}{
		{"prompt | A | B", true, false},
		{`"Meet Bob" | A`, false, true},
		{"A | B", false, false},
		{"B(A(prompt))", true, false},
		{"B(x: A(prompt), y: C)", true, false},
		{"const a = A(prompt); B(a)", true, false},
		{`const a = A("Meet"); B(a)`, false, true},
		{"A |", false, false}, // does not parse
	} {
		if r, q := PipelinePrompt(tt.expr); r != tt.atRunTime || q != tt.quoted {
			t.Errorf("%s: at run time %v, quoted %v", tt.expr, r, q)
		}
	}
}
