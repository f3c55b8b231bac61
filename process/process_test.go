package process

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/schema"
)

// scripted answers each chunk with a fixed JSON text and counts requests.
type scripted struct {
	mu      sync.Mutex
	answers map[string]string
	asked   map[string]int
	prompts map[string][]string
}

func (s *scripted) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.asked == nil {
		s.asked, s.prompts = map[string]int{}, map[string][]string{}
	}
	s.asked[req.Name]++
	s.prompts[req.Name] = append(s.prompts[req.Name], req.Messages[len(req.Messages)-1].Content)
	a, ok := s.answers[req.Name]
	if !ok {
		return nil, fmt.Errorf("no scripted answer for %s", req.Name)
	}
	return &llm.Response{Content: a, Model: "scripted", Usage: llm.Usage{PromptTokens: 100, CompletionTokens: 20}}, nil
}

func mustParse(t testing.TB, s string) jsonv.Value {
	t.Helper()
	v, err := jsonv.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

var meetingAnswers = map[string]string{
	"LLM_llmContext1": `{"identifyParticipants":{"organizer":"alice@example.com","attendee":"bob@example.com"},` +
		`"fetchAvailability":{"organizerEmail":"alice@example.com","attendeeEmail":"bob@example.com","timeRange":{"start":"2024-03-20T09:00:00Z","end":"2024-03-20T17:00:00Z"}}}`,
	"LLM_llmContext2": `{"findCommonSlot":{"selectedSlot":"2024-03-20T10:00:00Z","reasoning":"both are free at ten"},` +
		`"draftInvitation":{"subject":"Meeting on March 20","body":"Hi Bob, shall we meet at 10:00?"}}`,
}

// meeting compiles the example's corrected schedule-meeting process.
func meeting(t testing.TB) *compile.Process {
	t.Helper()
	reg, err := registry.Open("../examples/schedule-meeting/registry")
	if err != nil {
		t.Fatal(err)
	}
	d, err := reg.Document("aug:processes/schedule-meeting")
	if err != nil {
		t.Fatal(err)
	}
	p, err := compile.Compile(context.Background(), d.File, d.Value, compile.Options{Actions: []string{"FetchAvailability_Activity", "sendInvitation"}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

type meetingActions struct {
	fetchCalls, sendCalls atomic.Int32
	failFetch             int32 // fail this many attempts first
	fetchInput            jsonv.Value
	fetchKeys, sendKeys   []string // each attempt's idempotency key
}

func (m *meetingActions) register(t testing.TB, acts *action.Registry) {
	acts.Register(action.Action{Name: "FetchAvailability_Activity", Retry: &temporal.RetryPolicy{InitialInterval: time.Millisecond, MaximumAttempts: 5},
		Run: func(ctx context.Context, in jsonv.Value) (jsonv.Value, error) {
			n := m.fetchCalls.Add(1)
			m.fetchInput = in
			m.fetchKeys = append(m.fetchKeys, action.IdempotencyKey(ctx))
			if n <= m.failFetch {
				return jsonv.Value{}, fmt.Errorf("calendar unavailable (attempt %d)", n)
			}
			return jsonv.Parse([]byte(`{"organizerSlots":["2024-03-20T10:00:00Z","2024-03-20T14:00:00Z"],"attendeeSlots":["2024-03-20T10:00:00Z"]}`))
		}})
	action.RegisterFunc(acts, "sendInvitation", func(ctx context.Context, in struct {
		LLMContext2 struct {
			DraftInvitation struct{ Subject string } `json:"draftInvitation"`
		} `json:"llmContext2"`
	}) (map[string]string, error) {
		m.sendCalls.Add(1)
		m.sendKeys = append(m.sendKeys, action.IdempotencyKey(ctx))
		return map[string]string{"messageId": "msg-1", "status": "sent: " + in.LLMContext2.DraftInvitation.Subject}, nil
	}, action.Options{})
}

func newEnv(t *testing.T, p llm.Provider, acts *action.Registry) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := s.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute}) // a busy machine may hold the workflow goroutine past the 1 s default
	registerIn(env, &durable.Activities{Provider: p, Actions: acts, Logger: quietLogger()})
	return env
}

func TestScheduleMeetingEndToEnd(t *testing.T) {
	model := &scripted{answers: meetingAnswers}
	var acts action.Registry
	m := &meetingActions{failFetch: 2} // failing twice, then succeeding
	m.register(t, &acts)
	env := newEnv(t, model, &acts)
	p := meeting(t)

	var rejected, accepted bool
	env.RegisterDelayedCallback(func() {
		var v View
		enc, _ := env.QueryWorkflow(QueryView)
		enc.Get(&v)
		if v.Status != Waiting || v.Waiting == nil || v.Waiting.Chunk != "USER_userContext" {
			t.Errorf("not waiting for the person: %+v", v)
		}
		// The person sees the draft they are asked about, and nothing else.
		if got := string(jsonv.Marshal(v.Waiting.Context)); !strings.Contains(got, `"draftInvitation"`) || strings.Contains(got, "findCommonSlot") {
			t.Errorf("waiting context %s", got)
		}
		// A bad answer is checked by a local activity after the update is
		// accepted, and refused: the update completes with the problems.
		// The right answer follows once the refusal is in.
		good := func() {
			env.UpdateWorkflow(UpdateAnswer, "good", &testsuite.TestUpdateCallback{
				OnReject:   func(err error) { t.Errorf("good answer rejected: %v", err) },
				OnAccept:   func() { accepted = true },
				OnComplete: func(any, error) {},
			}, mustParse(t, `{"confirmInvitation":{"decision":"Approve"}}`), "Ada (console session 5eed1234)")
		}
		env.UpdateWorkflow(UpdateAnswer, "bad", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { t.Errorf("the bad answer was rejected before it was checked: %v", err) },
			OnAccept: func() {},
			OnComplete: func(_ any, err error) {
				rejected = err != nil && strings.Contains(err.Error(), "/confirmInvitation/decision") && strings.Contains(err.Error(), "'Approve', 'Reject'")
				if !rejected {
					t.Errorf("refusal %v", err)
				}
				good()
			},
		}, mustParse(t, `{"confirmInvitation":{"decision":"Maybe"}}`))
	}, time.Hour)

	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "schedule-meeting-test"})
	env.ExecuteWorkflow(durable.ProcessWorkflow, durable.Start{Name: "schedule-meeting", Program: p.Program(), Prompt: "Schedule a meeting between Alice and Bob"})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if !rejected || !accepted {
		t.Errorf("rejected %v accepted %v", rejected, accepted)
	}
	var v View
	if err := env.GetWorkflowResult(&v); err != nil {
		t.Fatal(err)
	}
	if v.Status != Completed || strings.Join(v.Done, ",") != "LLM_llmContext1,SERVER_serverContext1,LLM_llmContext2,USER_userContext,SERVER_serverContext2" {
		t.Errorf("status %s, done %v", v.Status, v.Done)
	}
	if m.fetchCalls.Load() != 3 || m.sendCalls.Load() != 1 {
		t.Errorf("fetch ran %d times (2 failures, then success), send %d", m.fetchCalls.Load(), m.sendCalls.Load())
	}
	// Every attempt of a call carries the same key; the two calls differ.
	const wf = "schedule-meeting-test"
	if want := "vibe:" + wf + ":serverContext1.FetchAvailability_Activity"; strings.Join(m.fetchKeys, ",") != strings.Join([]string{want, want, want}, ",") {
		t.Errorf("fetch keys %q, want %q three times", m.fetchKeys, want)
	}
	if want := "vibe:" + wf + ":serverContext2.sendInvitation"; len(m.sendKeys) != 1 || m.sendKeys[0] != want {
		t.Errorf("send keys %q, want %q", m.sendKeys, want)
	}
	// The server step got exactly its reference.
	if got := string(jsonv.Marshal(m.fetchInput)); got != `{"llmContext1":{"fetchAvailability":{"organizerEmail":"alice@example.com","attendeeEmail":"bob@example.com","timeRange":{"start":"2024-03-20T09:00:00Z","end":"2024-03-20T17:00:00Z"}}}}` {
		t.Errorf("fetch input %s", got)
	}
	if got := v.State.Lookup("serverContext2").Lookup("sendInvitation").Lookup("status").Str(); got != "sent: Meeting on March 20" {
		t.Errorf("send result %q in state %s", got, jsonv.Marshal(v.State))
	}
	if v.Usage != (llm.Usage{PromptTokens: 200, CompletionTokens: 40}) || model.asked["LLM_llmContext1"] != 1 || model.asked["LLM_llmContext2"] != 1 {
		t.Errorf("usage %+v asked %v", v.Usage, model.asked)
	}
	// Usage per call, chunk and step: each step's share of its call; the
	// shares add up to the call's.
	if len(v.Calls) != 2 || v.Calls[0].Chunk != "LLM_llmContext1" || v.Calls[1].Chunk != "LLM_llmContext2" || len(v.Calls[1].Turns) != 1 ||
		v.Calls[1].Turns[0].Answer != meetingAnswers["LLM_llmContext2"] || !strings.Contains(string(jsonv.Marshal(v.Calls[1].Context)), "FetchAvailability_Activity") {
		t.Errorf("calls %+v", v.Calls)
	}
	if len(v.StepUsage) != 4 || v.StepUsage[0].Step != "llmContext1.identifyParticipants" || v.StepUsage[1].Step != "llmContext1.fetchAvailability" {
		t.Fatalf("step usage %+v: the four LLM steps in order", v.StepUsage)
	}
	steps := v.StepUsage[0].Usage.Add(v.StepUsage[1].Usage)
	if steps != v.Steps["LLM_llmContext1"] || v.StepUsage[1].CompletionTokens <= v.StepUsage[0].CompletionTokens {
		t.Errorf("step usage %+v, chunk usage %+v: the larger part of the answer takes the larger share", v.StepUsage, v.Steps)
	}
	// The second LLM chunk was sent only what its steps reference.
	prompt := model.prompts["LLM_llmContext2"][0]
	for _, want := range []string{"Schedule a meeting between Alice and Bob", `"identifyParticipants"`, `"FetchAvailability_Activity"`, "Generate the JSON for step LLM_llmContext2"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("second chunk's prompt lacks %q:\n%s", want, prompt)
		}
	}
	if strings.Contains(prompt, `"fetchAvailability"`) {
		t.Errorf("second chunk's prompt carries a step it does not reference:\n%s", prompt)
	}
	// Each chunk's span by the workflow's clock, and each blocking
	// action's inside its chunk's; the USER chunk's is the wait for the
	// answer (an hour of the test's clock), which is kept with who sent it.
	var spans []string
	for _, tm := range v.Timings {
		if tm.End == nil || tm.End.Before(tm.Start) {
			t.Errorf("timing %+v has no end, or ends before it starts", tm)
			continue
		}
		spans = append(spans, strings.TrimSuffix(tm.Chunk+" "+tm.Step, " "))
	}
	if got := strings.Join(spans, ", "); got != "LLM_llmContext1, SERVER_serverContext1, SERVER_serverContext1 serverContext1.FetchAvailability_Activity, LLM_llmContext2, USER_userContext, SERVER_serverContext2, SERVER_serverContext2 serverContext2.sendInvitation" {
		t.Errorf("timings: %s", got)
	}
	if len(v.Timings) == 7 {
		if wait := v.Timings[4].End.Sub(v.Timings[4].Start); wait < 59*time.Minute {
			t.Errorf("the USER chunk waited %s, not about the hour before the answer", wait)
		}
		if fetch, chunk := v.Timings[2], v.Timings[1]; fetch.Start.Before(chunk.Start) || fetch.End.After(*chunk.End) {
			t.Errorf("the action's span %+v is not inside its chunk's %+v", fetch, chunk)
		}
	}
	if len(v.Answers) != 1 || v.Answers[0].Chunk != "USER_userContext" || v.Answers[0].By != "Ada (console session 5eed1234)" || v.Answers[0].At.Before(v.Timings[4].Start) {
		t.Errorf("answers %+v", v.Answers)
	}
}

func TestActionFailsForGood(t *testing.T) {
	var acts action.Registry
	acts.Register(action.Action{Name: "FetchAvailability_Activity", Run: func(ctx context.Context, in jsonv.Value) (jsonv.Value, error) {
		return jsonv.Value{}, action.NonRetryable(errors.New("calendar says: no such user"))
	}})
	acts.Register(action.Action{Name: "sendInvitation", Run: func(ctx context.Context, in jsonv.Value) (jsonv.Value, error) { return in, nil }})
	env := newEnv(t, &scripted{answers: meetingAnswers}, &acts)
	env.ExecuteWorkflow(durable.ProcessWorkflow, durable.Start{Name: "schedule-meeting", Program: meeting(t).Program()})
	err := env.GetWorkflowError()
	if err == nil || !strings.Contains(err.Error(), "step serverContext1.FetchAvailability_Activity") || !strings.Contains(err.Error(), "calendar says: no such user") {
		t.Fatalf("err = %v", err)
	}
}

func TestBadActionOutput(t *testing.T) {
	var acts action.Registry
	acts.Register(action.Action{Name: "FetchAvailability_Activity", Run: func(ctx context.Context, in jsonv.Value) (jsonv.Value, error) {
		return jsonv.Parse([]byte(`{"organizerSlots":"tomorrow"}`))
	}})
	acts.Register(action.Action{Name: "sendInvitation", Run: func(ctx context.Context, in jsonv.Value) (jsonv.Value, error) { return in, nil }})
	env := newEnv(t, &scripted{answers: meetingAnswers}, &acts)
	env.ExecuteWorkflow(durable.ProcessWorkflow, durable.Start{Name: "schedule-meeting", Program: meeting(t).Program()})
	err := env.GetWorkflowError()
	if err == nil || !strings.Contains(err.Error(), "breaks the step's output schema") || !strings.Contains(err.Error(), "/organizerSlots") {
		t.Fatalf("err = %v", err)
	}
}

func TestFirstChunkGiven(t *testing.T) {
	// LaunchProcess: the Vessel's model filled the first chunk already.
	model := &scripted{answers: meetingAnswers}
	var acts action.Registry
	(&meetingActions{}).register(t, &acts)
	env := newEnv(t, model, &acts)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(UpdateAnswer, "a", &testsuite.TestUpdateCallback{OnReject: func(err error) { t.Error(err) }, OnAccept: func() {}, OnComplete: func(any, error) {}},
			mustParse(t, `{"confirmInvitation":{"decision":"Reject"}}`))
	}, time.Minute)
	first := mustParse(t, `{"_considerations":"both work 9-17","identifyParticipants":{"organizer":"a@x.org","attendee":"b@x.org"},`+
		`"fetchAvailability":{"organizerEmail":"a@example.com","attendeeEmail":"b@example.com","timeRange":{"start":"2024-03-20T09:00:00Z","end":"2024-03-20T17:00:00Z"}},"_feedback":"ok"}`)
	env.ExecuteWorkflow(durable.ProcessWorkflow, durable.Start{Name: "schedule-meeting", Program: meeting(t).Program(), First: first})
	var v View
	if err := env.GetWorkflowResult(&v); err != nil {
		t.Fatal(err)
	}
	if model.asked["LLM_llmContext1"] != 0 || model.asked["LLM_llmContext2"] != 1 {
		t.Errorf("asked %v: the first chunk was given", model.asked)
	}
	if got := string(jsonv.Marshal(v.Thinking.Lookup("LLM_llmContext1"))); got != `{"_considerations":"both work 9-17","_feedback":"ok"}` {
		t.Errorf("chunk thinking %s", got)
	}
	if got := v.State.Lookup("userContext").Lookup("confirmInvitation").Lookup("decision").Str(); got != "Reject" {
		t.Errorf("decision %q", got)
	}
}

// likeRegistry is the seed's likes: ComposeLike, the action SendLike
// (which fails its first call, and counts them in sent) and Thank.
func likeRegistry(t testing.TB) (*registry.Registry, *action.Registry, *atomic.Int32) {
	reg := &registry.Registry{}
	reg.Add("aug:instructions/ComposeLike", mustParse(t, `{"type":"object","properties":{"_why":{"type":"string"},"postId":{"type":"string"}},"required":["_why","postId"]}`))
	reg.Add("aug:instructions/SendLike", mustParse(t, `{"type":"object","properties":{"postId":{"type":"string"}},"required":["postId"]}`))
	reg.Add("aug:instructions/Thank", mustParse(t, `{"type":"object","properties":{"note":{"type":"string"}},"required":["note"]}`))
	sent := &atomic.Int32{}
	acts := &action.Registry{}
	acts.Register(action.Action{Name: "SendLike", Retry: &temporal.RetryPolicy{InitialInterval: time.Millisecond, MaximumAttempts: 3},
		Run: func(ctx context.Context, in jsonv.Value) (jsonv.Value, error) {
			if sent.Add(1) == 1 {
				return jsonv.Value{}, errors.New("flaky")
			}
			return jsonv.Parse([]byte(`{"liked":` + string(jsonv.Marshal(in.Lookup("postId"))) + `}`))
		}})
	return reg, acts, sent
}

func TestFireAndForgetAndDirectCall(t *testing.T) {
	reg, acts, sent := likeRegistry(t)
	model := &scripted{answers: map[string]string{
		"LLM_step1_compose_like": `{"step1_compose_like":{"_why":"nice","postId":"p42"},"step2_send_like":{"postId":"p42"}}`,
	}}

	// A direct server call: one model call, then the action with retries.
	direct, err := compile.CompilePipeline(context.Background(), `"Like post 42" | ComposeLike | SendLike`, compile.Options{Registry: reg, Actions: acts.Names()})
	if err != nil || direct.Direct == nil {
		t.Fatalf("%v %v", err, direct)
	}
	env := newEnv(t, model, acts)
	env.ExecuteWorkflow(durable.DirectCallWorkflow, durable.Start{Name: "pipeline", Program: direct.Program()})
	var res DirectResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if string(jsonv.Marshal(res.Result)) != `{"liked":"p42"}` || sent.Load() != 2 {
		t.Errorf("direct result %s after %d attempts", jsonv.Marshal(res.Result), sent.Load())
	}

	// A fire-and-forget step inside a process: started, not awaited.
	ff, err := compile.CompilePipeline(context.Background(), `"Like post 42" | ComposeLike | SendLike | Thank`, compile.Options{Registry: reg, Actions: acts.Names()})
	if err != nil {
		t.Fatal(err)
	}
	model.answers["LLM_step1_compose_like"] = `{"step1_compose_like":{"_why":"nice","postId":"p42"},"step2_send_like":{"postId":"p42"},"step3_thank":{"note":"thanks"}}`
	env = newEnv(t, model, acts)
	env.ExecuteWorkflow(durable.ProcessWorkflow, durable.Start{Name: "pipeline", Program: ff.Program()})
	var v View
	if err := env.GetWorkflowResult(&v); err != nil {
		t.Fatal(err)
	}
	if v.Status != Completed || v.Actions["step2_send_like"] == "" || sent.Load() < 3 {
		t.Errorf("status %s actions %v", v.Status, v.Actions)
	}
}

func TestAnswerWhenNotWaiting(t *testing.T) {
	model := &scripted{answers: meetingAnswers}
	var acts action.Registry
	(&meetingActions{}).register(t, &acts)
	env := newEnv(t, model, &acts)
	var refused error
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(UpdateAnswer, "early", &testsuite.TestUpdateCallback{OnReject: func(err error) { refused = err }, OnAccept: func() {}, OnComplete: func(any, error) {}},
			mustParse(t, `{"confirmInvitation":{"decision":"Approve"}}`))
	}, 0)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(UpdateAnswer, "a", &testsuite.TestUpdateCallback{OnReject: func(err error) { t.Error(err) }, OnAccept: func() {}, OnComplete: func(any, error) {}},
			mustParse(t, `{"confirmInvitation":{"decision":"Approve"}}`))
	}, time.Hour)
	env.ExecuteWorkflow(durable.ProcessWorkflow, durable.Start{Name: "schedule-meeting", Program: meeting(t).Program()})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if refused == nil || !strings.Contains(refused.Error(), "not waiting for an answer") {
		t.Errorf("an early answer: %v", refused)
	}
}

// TestInvalidAnswerKept: a chunk whose answers keep breaking the schema
// fails the process, and the process keeps the failed call — each answer
// and its problems by path — for whoever reads why it failed.
func TestInvalidAnswerKept(t *testing.T) {
	var acts action.Registry
	(&meetingActions{}).register(t, &acts)
	answers := map[string]string{}
	for k, v := range meetingAnswers {
		answers[k] = v
	}
	answers["LLM_llmContext1"] = `{"identifyParticipants": {"organizer": 7}}`
	env := newEnv(t, &scripted{answers: answers}, &acts)
	env.ExecuteWorkflow(durable.ProcessWorkflow, durable.Start{Name: "schedule-meeting", Program: meeting(t).Program()})
	if err := env.GetWorkflowError(); err == nil || !strings.Contains(err.Error(), "breaks the schema after 3 requests") {
		t.Fatalf("err = %v", err)
	}
	var v View
	if err := env.GetWorkflowResult(&v); err != nil {
		enc, qerr := env.QueryWorkflow(QueryView)
		if qerr != nil {
			t.Fatal(qerr)
		}
		enc.Get(&v)
	}
	if len(v.Calls) != 1 || v.Calls[0].Chunk != "LLM_llmContext1" || len(v.Calls[0].Turns) != 3 {
		t.Fatalf("calls %+v", v.Calls)
	}
	last := v.Calls[0].Turns[2]
	if !slices.ContainsFunc(last.Problems, func(p schema.Invalid) bool { return p.Path == "/identifyParticipants/organizer" }) {
		t.Errorf("the last answer's problems: %+v", last.Problems)
	}
	if v.Usage.PromptTokens != 300 {
		t.Errorf("usage %+v: the three requests' 300 prompt tokens", v.Usage)
	}
}
