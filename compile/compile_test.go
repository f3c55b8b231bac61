package compile

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/augceo/vibe/internal/golden"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/schema"
)

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Check(t, "testdata/"+name, got)
}

func indent(v jsonv.Value) []byte { return append(jsonv.MarshalIndent(v, "  "), '\n') }

func parse(t testing.TB, s string) jsonv.Value {
	t.Helper()
	v, err := jsonv.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func openRegistry(t testing.TB, dir string) *registry.Registry {
	t.Helper()
	r, err := registry.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func testRegistry(t testing.TB) *registry.Registry { return openRegistry(t, "testdata/registry") }

const example = "../examples/schedule-meeting/registry"

func kinds(p *Process) []string {
	var ks []string
	for _, c := range p.Chunks {
		ks = append(ks, c.Name+":"+string(c.Kind))
	}
	return ks
}

// TestScheduleMeeting compiles the example's corrected process: LLM, SERVER,
// LLM, USER, SERVER.
func TestScheduleMeeting(t *testing.T) {
	reg := openRegistry(t, example)
	d, err := reg.Document("aug:processes/schedule-meeting")
	if err != nil {
		t.Fatal(err)
	}
	if d.URI.Version != 2 {
		t.Fatalf("the latest schedule-meeting is version %d, want the corrected 2", d.URI.Version)
	}
	p, err := Compile(context.Background(), d.File, d.Value, Options{Registry: reg, Actions: []string{"FetchAvailability_Activity", "sendInvitation"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"LLM_llmContext1:LLM", "SERVER_serverContext1:SERVER", "LLM_llmContext2:LLM", "USER_userContext:USER", "SERVER_serverContext2:SERVER"}
	if got := kinds(p); !slices.Equal(got, want) {
		t.Errorf("chunks %q, want %q", got, want)
	}
	if got := p.Document.Lookup(EntryPointKey).Lookup("$ref").Str(); got != "#/$defs/LLM_llmContext1" {
		t.Errorf("entry point %q", got)
	}
	if got := p.Document.Lookup("$defs").Object().Names(); !slices.Equal(got, []string{"LLM_llmContext1", "SERVER_serverContext1", "LLM_llmContext2", "USER_userContext", "SERVER_serverContext2"}) {
		t.Errorf("$defs not in execution order: %q", got)
	}
	send := p.Step("serverContext2.sendInvitation")
	var refs []string
	for _, r := range send.References {
		refs = append(refs, r.String())
	}
	if !slices.Equal(refs, []string{"llmContext1.identifyParticipants", "llmContext2.draftInvitation", "userContext.confirmInvitation"}) || send.Action != "sendInvitation" {
		t.Errorf("sendInvitation: references %q, action %q", refs, send.Action)
	}
	// A bare sibling reference is resolved to its canonical form.
	fetch := p.Document.Lookup("$defs").Lookup("LLM_llmContext1").Lookup("properties").Lookup("fetchAvailability")
	if got := schema.Strings(fetch.Lookup("references")); !slices.Equal(got, []string{"llmContext1.identifyParticipants"}) {
		t.Errorf("fetchAvailability references in $defs: %q", got)
	}
	checkGolden(t, "schedule-meeting.compiled.json", indent(p.Document))
}

// TestSeedProcessErrors compiles seed 001's process as printed: its
// identifyParticipants / identifyParticipants1 mismatch gives exactly these
// errors, all in one run.
func TestSeedProcessErrors(t *testing.T) {
	doc, err := schema.ReadFile("testdata/schedule-meeting-seed.json")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Compile(context.Background(), "testdata/schedule-meeting-seed.json", doc, Options{})
	var list schema.ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("err = %v, want an ErrorList", err)
	}
	if len(list) != 5 {
		t.Errorf("%d errors, want 5 (one required entry, four references)", len(list))
	}
	checkGolden(t, "schedule-meeting-seed.errors", []byte(err.Error()+"\n"))
}

func TestFireAndForgetInsideLLMChunk(t *testing.T) {
	p, err := CompilePipeline(context.Background(), `"Schedule a meeting with Bob" | IdentifyParticipants | LogEvent | DraftInvitation`,
		Options{Registry: testRegistry(t), Actions: []string{"LogEvent"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(p); !slices.Equal(got, []string{"LLM_step1_identify_participants:LLM"}) {
		t.Fatalf("chunks %q: the fire-and-forget step stays in its LLM chunk", got)
	}
	log := p.Step("step2_log_event")
	if !log.FireAndForget || log.Action != "LogEvent" || log.Kind != LLM {
		t.Errorf("step2_log_event: %+v", log)
	}
	if p.Direct != nil {
		t.Error("a process whose fire-and-forget step is not last is not a direct call")
	}
	checkGolden(t, "pipeline-fire-and-forget.compiled.json", indent(p.Document))
}

func TestDirectServerCall(t *testing.T) {
	p, err := CompilePipeline(context.Background(), `"Like Alice's post 42" | ComposeLike | SendLike`,
		Options{Registry: testRegistry(t), Actions: []string{"SendLike"}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Direct == nil || p.Direct.Action != "SendLike" || p.Direct.Step.Name != "step2_send_like" {
		t.Fatalf("direct call %+v", p.Direct)
	}
	if _, ok := p.Document.Get(EntryPointKey); ok {
		t.Error("a direct call has no process entry point")
	}
	checkGolden(t, "pipeline-direct-call.compiled.json", indent(p.Document))
	// Without the action registered, the same pipeline is a one-chunk process.
	q, err := CompilePipeline(context.Background(), `"Like Alice's post 42" | ComposeLike | SendLike`, Options{Registry: testRegistry(t)})
	if err != nil || q.Direct != nil {
		t.Errorf("without actions: %v, direct %v", err, q.Direct)
	}
}

func TestBlockingStepPipeline(t *testing.T) {
	p, err := CompilePipeline(context.Background(), `"Write to jane@example.com" | FindUser_Activity | DraftEmail`,
		Options{Registry: testRegistry(t), Actions: []string{"FindUser_Activity"}})
	if err != nil {
		t.Fatal(err)
	}
	// The blocking step declares an input (email): a model fills it before
	// the step runs, in a chunk of its own since none comes before.
	if got := kinds(p); !slices.Equal(got, []string{"LLM_step1_find_user_Activity_input:LLM", "SERVER_step1_find_user_Activity:SERVER", "LLM_step2_draft_email:LLM"}) {
		t.Fatalf("chunks %q", got)
	}
	input := p.Chunks[0].Steps[0]
	if input.Fills != p.Chunks[1].Steps[0] || input.QualifiedName() != "step1_find_user_Activity.input" ||
		strings.Join(schema.Properties(input.Schema).Names(), ",") != "email,output" || input.Schema.Lookup("properties").Lookup("output").Lookup("type").Str() != "null" {
		t.Errorf("input step %s: %s", input.QualifiedName(), jsonv.Marshal(input.Schema))
	}
	if ref := p.Document.Lookup(EntryPointKey).Lookup("$ref").Str(); ref != "#/$defs/LLM_step1_find_user_Activity_input" {
		t.Errorf("entry point %q: the chunk that asks for the inputs", ref)
	}
	// Seed 000's example: the step references one field of the blocking step.
	draft := p.Step("step2_draft_email")
	if len(draft.References) != 1 || draft.References[0].String() != "step1_find_user_Activity.output" {
		t.Fatalf("references %v", draft.References)
	}
	state := parse(t, `{"step1_find_user_Activity": {"email": "jane@example.com", "output": {"userId": "u-12345", "userName": "Jane Doe"}}, "unrelated": {"secret": 1}}`)
	ctx, err := MinimalContext(state, draft.References)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(jsonv.Marshal(ctx)); got != `{"step1_find_user_Activity":{"output":{"userId":"u-12345","userName":"Jane Doe"}}}` {
		t.Errorf("minimal context %s", got)
	}
}

func TestMinimalContext(t *testing.T) {
	reg := openRegistry(t, example)
	d, _ := reg.Document("aug:processes/schedule-meeting")
	p, err := Compile(context.Background(), d.File, d.Value, Options{})
	if err != nil {
		t.Fatal(err)
	}
	state := parse(t, `{
		"llmContext1": {"identifyParticipants": {"organizer": "alice@example.com", "attendee": "bob@example.com"}, "fetchAvailability": {"organizerId": "u1"}},
		"serverContext1": {"FetchAvailability_Activity": {"organizerSlots": ["2024-03-20T10:00:00Z"], "attendeeSlots": []}},
		"llmContext2": {"findCommonSlot": {"selectedSlot": "2024-03-20T10:00:00Z", "reasoning": "both free"}}}`)
	before := string(jsonv.Marshal(state))
	ctx, err := MinimalContext(state, p.Step("llmContext2.draftInvitation").References)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"llmContext1":{"identifyParticipants":{"organizer":"alice@example.com","attendee":"bob@example.com"}},"llmContext2":{"findCommonSlot":{"selectedSlot":"2024-03-20T10:00:00Z","reasoning":"both free"}}}`
	if got := string(jsonv.Marshal(ctx)); got != want {
		t.Errorf("minimal context\n got %s\nwant %s", got, want)
	}
	if string(jsonv.Marshal(state)) != before {
		t.Error("MinimalContext changed the state")
	}
	_, err = MinimalContext(state, p.Step("serverContext2.sendInvitation").References)
	if err == nil || !strings.Contains(err.Error(), "llmContext2.draftInvitation") {
		t.Errorf("a missing value must be an error naming it: %v", err)
	}
}

func TestReferences(t *testing.T) {
	doc := func(refs string) string {
		return `{"properties": {
			"llmContext1": {"properties": {
				"a": {"type": "object", "properties": {"x": {"type": "object", "properties": {"y": {"type": "string"}}}}},
				"shared": {"type": "string"}}},
			"llmContext2": {"properties": {
				"shared": {"type": "string"},
				"b": {"type": "object", "references": ` + refs + `},
				"c": {"type": "object", "references": ["b"]}}}}}`
	}
	tests := []struct {
		refs string
		want string // canonical references, or the error's message
	}{
		{`["llmContext1.a"]`, "llmContext1.a"},
		{`["llmContext1.a.x.y"]`, "llmContext1.a.x.y"},
		{`["a.x"]`, "llmContext1.a.x"},
		{`["shared"]`, "llmContext2.shared"}, // the sibling wins
		{`["llmContext1.shared", "a"]`, "llmContext1.shared llmContext1.a"},
		{`["nope"]`, `step "b" references "nope", which names no step`},
		{`["sharde"]`, `which names no step; did you mean "shared"?`},
		{`["llmContext1.b"]`, `but context llmContext1 has no step "b"`},
		{`["a.z"]`, `but step llmContext1.a has no field "z"`},
		{`["llmContext1.a.x.q"]`, `but step llmContext1.a.x has no field "q"; did you mean "y"?`},
		{`["c"]`, `which runs later (step 5 of the process, after this step 4); and llmContext2.c references back: a reference cycle`},
		{`["b"]`, `which is the step itself`},
		{`[42]`, `a reference must be a step path`},
		{`"a"`, `references must be an array of step paths`},
	}
	for _, tt := range tests {
		t.Run(tt.refs, func(t *testing.T) {
			p, err := Compile(context.Background(), "p.json", parse(t, doc(tt.refs)), Options{})
			if err != nil {
				if !strings.Contains(err.Error(), tt.want) {
					t.Errorf("error %v\nwant %q", err, tt.want)
				}
				if !strings.Contains(err.Error(), "p.json: /properties/llmContext2/properties/b/references") {
					t.Errorf("error does not name the reference's path: %v", err)
				}
				return
			}
			var got []string
			for _, r := range p.Step("llmContext2.b").References {
				got = append(got, r.String())
			}
			if strings.Join(got, " ") != tt.want {
				t.Errorf("references %q, want %q", got, tt.want)
			}
		})
	}
	// A bare name two contexts share, referenced from a third place, is ambiguous.
	_, err := Compile(context.Background(), "p.json", parse(t, `{"properties": {
		"llmContext1": {"properties": {"s": {}}}, "llmContext2": {"properties": {"s": {}}},
		"llmContext3": {"properties": {"t": {"references": ["s"]}}}}}`), Options{})
	if err == nil || !strings.Contains(err.Error(), "ambiguous: it names llmContext1.s and llmContext2.s") {
		t.Errorf("ambiguous: %v", err)
	}
}

func TestClassification(t *testing.T) {
	p, err := Compile(context.Background(), "p.json", parse(t, `{"properties": {
		"think": {"type": "object"},
		"Fetch_Activity": {"type": "object"},
		"lookup": {"type": "object", "properties": {"output": {"type": ["object", "null"]}}},
		"notify": {"type": "object"},
		"Approve_User": {"type": "object"},
		"NotifyUser": {"type": "object"},
		"serverContext": {"properties": {"store": {}}},
		"userContext": {"properties": {"confirm": {}, "Save_Activity": {}}},
		"llmContext": {"properties": {"a": {}, "Check_User": {}, "b": {}}}}}`),
		Options{Actions: []string{"notify", "Fetch_Activity", "lookup", "store", "Save_Activity"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"LLM_think:LLM", "SERVER_Fetch_Activity:SERVER", "LLM_notify:LLM", "USER_Approve_User:USER", "LLM_NotifyUser:LLM",
		"SERVER_serverContext:SERVER", "USER_userContext_1:USER", "SERVER_userContext_2:SERVER",
		"LLM_llmContext_1:LLM", "USER_llmContext_2:USER", "LLM_llmContext_3:LLM",
	}
	if got := kinds(p); !slices.Equal(got, want) {
		t.Errorf("chunks\n got %q\nwant %q", got, want)
	}
	if s := p.Step("notify"); !s.FireAndForget || s.Action != "notify" {
		t.Errorf("notify: %+v", s)
	}
	if s := p.Step("lookup"); s.Kind != Server {
		t.Errorf("a step with output is a SERVER step: %+v", s)
	}
}

func TestProcessErrors(t *testing.T) {
	tests := []struct{ doc, want string }{
		{`{"type": "object"}`, `p.json: /: a process needs properties`},
		{`{"properties": {"llmContext1": {"type": "object"}}}`, `p.json: /properties/llmContext1: context "llmContext1" has no steps`},
		{`{"properties": {"a": 42}}`, `p.json: /properties/a: step "a" must be an object schema, not 42`},
		{`{"properties": {"a_Activity": {"properties": {"output": {"type": "object"}}}}}`, `p.json: /properties/a_Activity/properties/output: blocking step "a_Activity": its output must be nullable`},
		{`{"properties": {"a_Activity": {}}}`, ``},
		{`{"properties": {"x": {"type": "object", "properties": {"p": {}}, "required": ["zzz"]}}}`, `p.json: /properties/x/required/0: required names "zzz", which is not a property here (properties: p)`},
		{`{"properties": {"x": {"properties": {}, "required": "p"}}}`, `p.json: /properties/x/required: required must be an array`},
	}
	for _, tt := range tests {
		_, err := Compile(context.Background(), "p.json", parse(t, tt.doc), Options{Actions: []string{}})
		if tt.want == "" {
			if err == nil || !strings.Contains(err.Error(), "no registered action matches it (registered: none)") {
				t.Errorf("%s: %v", tt.doc, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s:\n got %v\nwant %s", tt.doc, err, tt.want)
		}
	}
	for _, ok := range []string{`{"type": ["object", "null"]}`, `{"anyOf": [{"type": "object"}, {"type": "null"}]}`, `{}`, `{"enum": [null, 1]}`, `true`} {
		doc := `{"properties": {"s": {"properties": {"output": ` + ok + `}}}}`
		if _, err := Compile(context.Background(), "p.json", parse(t, doc), Options{}); err != nil {
			t.Errorf("output %s is nullable: %v", ok, err)
		}
	}
}

// TestProgram: a compiled process prepared for the runtime comes back
// from JSON (as a workflow's input does) with its chunks, steps, actions,
// references as state paths and direct call.
func TestProgram(t *testing.T) {
	for _, expr := range []string{
		`"x" | IdentifyParticipants | LogEvent | DraftInvitation`,
		`"x" | ComposeLike | SendLike`,
		`"x" | FindUser_Activity | DraftEmail`,
	} {
		p, err := CompilePipeline(context.Background(), expr, Options{Registry: testRegistry(t), Actions: []string{"LogEvent", "SendLike", "FindUser_Activity"}})
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(p.Program())
		if err != nil {
			t.Fatal(err)
		}
		var back Program
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		if len(back.Chunks) != len(p.Chunks) || back.Prompt != p.Prompt || (back.Direct == nil) != (p.Direct == nil) {
			t.Fatalf("%s: program %s", expr, b)
		}
		for i, ch := range p.Chunks {
			bc := back.Chunks[i]
			if bc.Name != ch.Name || bc.Kind != ch.Kind || len(bc.Steps) != len(ch.Steps) || len(bc.References) != len(ch.References) {
				t.Errorf("%s: chunk %d is %+v", expr, i, bc)
				continue
			}
			for j, s := range ch.Steps {
				bs := bc.Steps[j]
				if bs.Name != s.Name || bs.Qualified() != s.QualifiedName() || bs.Action != s.Action || bs.FireAndForget != s.FireAndForget || len(bs.References) != len(s.References) {
					t.Errorf("%s: step %s is %+v", expr, s.Name, bs)
				}
			}
			if ch.Kind != Server && bc.Schema.Lookup("properties").Len() == 0 {
				t.Errorf("%s: chunk %s has no schema for the model", expr, ch.Name)
			}
		}
	}
}

func TestMatchAction(t *testing.T) {
	actions := []string{"SendLike", "FetchAvailability_Activity", "log"}
	for step, want := range map[string]string{
		"SendLike":                           "SendLike",
		"step2_send_like":                    "SendLike",
		"step12_fetch_availability_Activity": "FetchAvailability_Activity",
		"step1_log":                          "log",
		"send_like":                          "",
		"stepx_send_like":                    "",
	} {
		got, ok := MatchAction(step, actions)
		if got != want || ok != (want != "") {
			t.Errorf("MatchAction(%q) = %q, %v", step, got, ok)
		}
	}
}

func TestContextKind(t *testing.T) {
	for name, want := range map[string]Kind{"llmContext1": LLM, "serverContext2": Server, "userContext": User, "LLM_Context": LLM, "User_Context7": User, "userProfile": "", "llm": "", "contextual": ""} {
		got, ok := ContextKind(name)
		if got != want || ok != (want != "") {
			t.Errorf("ContextKind(%q) = %q, %v", name, got, ok)
		}
	}
}

// TestSeedConstProgram: seed 001's sequential form (const bindings) compiles
// to the same chunks as its nested form.
func TestSeedConstProgram(t *testing.T) {
	reg := &registry.Registry{}
	for name, doc := range map[string]string{
		"IdentifyParticipants":       `{"title":"Identify participants","type":"object","properties":{"organizerEmail":{"type":"string"},"attendeeEmail":{"type":"string"}}}`,
		"FetchAvailability":          `{"title":"Availability parameters","type":"object","properties":{"organizerId":{"type":"string"},"attendeeId":{"type":"string"}}}`,
		"FetchAvailability_Activity": `{"title":"Availability","type":"object","properties":{"output":{"type":["object","null"],"properties":{"slots":{"type":"array","items":{"type":"string"}}}}}}`,
		"FindCommonSlot":             `{"title":"Find a common slot","type":"object","properties":{"selectedSlot":{"type":"string"}}}`,
		"DraftInvitation":            `{"title":"Draft the invitation","type":"object","properties":{"subject":{"type":"string"},"body":{"type":"string"}}}`,
		"ConfirmInvitation_User":     `{"title":"Confirm","type":"object","properties":{"decision":{"enum":["Approve","Reject"]}}}`,
		"SendInvitation_Activity":    `{"title":"Send","type":"object","properties":{"output":{"type":["object","null"]}}}`,
	} {
		if err := reg.Add("aug:instructions/"+name, parse(t, doc)); err != nil {
			t.Fatal(err)
		}
	}
	const program = `// Extract participant info from user's request
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
const result = SendInvitation_Activity(approval);`
	const nested = `SendInvitation_Activity(ConfirmInvitation_User(DraftInvitation(
  IdentifyParticipants(prompt),
  FindCommonSlot(FetchAvailability_Activity(FetchAvailability(IdentifyParticipants(prompt)))))))`
	opts := Options{Registry: reg, Actions: []string{"FetchAvailability_Activity", "SendInvitation_Activity"}}
	var programs [2][]byte
	var chunks []string
	for i, expr := range []string{program, nested} {
		p, err := CompilePipeline(context.Background(), expr, opts)
		if err != nil {
			t.Fatalf("form %d: %v", i, err)
		}
		if programs[i], err = json.Marshal(p.Program()); err != nil {
			t.Fatal(err)
		}
		chunks = kinds(p)
	}
	if string(programs[0]) != string(programs[1]) {
		t.Errorf("the const program compiles to\n%s\nthe nested form to\n%s", programs[0], programs[1])
	}
	if want := []string{"LLM_step1_identify_participants:LLM", "SERVER_step3_fetch_availability_Activity:SERVER", "LLM_step4_find_common_slot:LLM", "USER_step6_confirm_invitation_User:USER", "SERVER_step7_send_invitation_Activity:SERVER"}; !slices.Equal(chunks, want) {
		t.Errorf("chunks %q, want %q", chunks, want)
	}
}

// TestPipelineName: a pipeline is named by its steps, the first and the
// last of a long one; a process of its own is not a pipeline.
func TestPipelineName(t *testing.T) {
	tests := []struct {
		expr    string
		actions []string
		want    string
	}{
		{`"Moderate" | Classify`, nil, "classify"},
		{`prompt | Classify | Explain`, nil, "classify+explain"},
		{`"Moderate" | Classify | Explain | Score`, nil, "classify+explain+score"},
		{`"Moderate" | Classify | Explain | Score | Decide`, nil, "classify+…+decide"},
		{`"Like Alice's post 42" | ComposeLike | SendLike`, []string{"SendLike"}, "compose-like+send-like"}, // a direct call
		{`"Write to jane@example.com" | FindUser_Activity | DraftEmail`, []string{"FindUser_Activity"}, "find-user-activity+draft-email"},
	}
	for _, tt := range tests {
		p, err := CompilePipeline(context.Background(), tt.expr, Options{Registry: testRegistry(t), Actions: tt.actions})
		if err != nil {
			t.Fatalf("%s: %v", tt.expr, err)
		}
		if got := p.PipelineName(); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.expr, got, tt.want)
		}
	}
	reg := openRegistry(t, example)
	d, err := reg.Document("aug:processes/schedule-meeting")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Compile(context.Background(), d.File, d.Value, Options{Registry: reg, Actions: []string{"FetchAvailability_Activity", "sendInvitation"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.PipelineName(); got != "" {
		t.Errorf("a process's own steps named it %q", got)
	}
}
