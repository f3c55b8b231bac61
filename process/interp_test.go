package process

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/jsonv"
)

// scriptHost is a Host that is no process's workflow: it fills each chunk
// from a script and answers each action itself, recording who asked.
type scriptHost struct {
	fills    map[string]string // chunk → the answer
	calls    *[]string         // "process step" of each action, in order
	statuses *[]string         // "process status" as told
	id       string
}

func (h *scriptHost) Fill(ctx workflow.Context, idx int, in durable.FillInput) (durable.FillOutput, error) {
	v, err := jsonv.Parse([]byte(h.fills[in.Chunk]))
	return durable.FillOutput{Value: v, Model: "script", Requests: 1}, err
}

func (h *scriptHost) Action(ctx workflow.Context, in durable.ActionInput) (jsonv.Value, error) {
	*h.calls = append(*h.calls, in.Process+" "+in.Step)
	return jsonv.Parse([]byte(`{"organizerSlots":["2024-03-20T10:00:00Z"],"attendeeSlots":["2024-03-20T10:00:00Z"],"status":"sent"}`))
}

func (h *scriptHost) Status(ctx workflow.Context, s Status) {
	*h.statuses = append(*h.statuses, h.id+" "+string(s))
}

// TestInterpretersSideBySide: one workflow runs two processes' programs
// as coroutines through a Host of its own — the shape of a batch's group:
// each keeps its own view, its actions carry its own id, a person's
// answer reaches the one it is for, and one waiting does not hold the
// other.
func TestInterpretersSideBySide(t *testing.T) {
	prog := meeting(t).Program()
	var calls, statuses []string
	sideBySide := func(ctx workflow.Context) ([]View, error) {
		ids := []string{"b-1", "b-2"}
		rs := make([]*Interpreter, len(ids))
		for i, id := range ids {
			rs[i] = NewInterpreter(id, durable.Start{Name: "schedule-meeting", Program: prog})
		}
		err := workflow.SetUpdateHandler(ctx, UpdateAnswer, func(ctx workflow.Context, item string, answer jsonv.Value) (View, error) {
			i := slices.Index(ids, item)
			if i < 0 {
				return View{}, fmt.Errorf("no item %s", item)
			}
			return rs[i].Accept(ctx, answer, "")
		})
		if err != nil {
			return nil, err
		}
		wg := workflow.NewWaitGroup(ctx)
		for i := range rs {
			wg.Add(1)
			workflow.Go(ctx, func(ctx workflow.Context) {
				defer wg.Done()
				rs[i].Run(ctx, &scriptHost{fills: meetingAnswers, calls: &calls, statuses: &statuses, id: ids[i]})
			})
		}
		wg.Wait(ctx)
		views := make([]View, len(rs))
		for i, r := range rs {
			views[i] = r.View()
		}
		return views, nil
	}
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := s.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute}) // a busy machine may hold the workflow goroutine past the 1 s default
	env.RegisterWorkflowWithOptions(sideBySide, workflow.RegisterOptions{Name: "sideBySide"})
	env.RegisterActivityWithOptions(durable.CheckValue, activity.RegisterOptions{Name: durable.CheckName})
	answer := func(item, decision string) {
		env.UpdateWorkflow(UpdateAnswer, item, &testsuite.TestUpdateCallback{OnReject: func(err error) { t.Error(err) }, OnAccept: func() {},
			OnComplete: func(_ any, err error) {
				if err != nil {
					t.Errorf("answer to %s: %v", item, err)
				}
			}}, item, mustParse(t, `{"confirmInvitation":{"decision":"`+decision+`"}}`))
	}
	// b-2 is answered first and finishes while b-1 still waits.
	env.RegisterDelayedCallback(func() { answer("b-2", "Approve") }, time.Minute)
	env.RegisterDelayedCallback(func() {
		if got := strings.Join(calls, ", "); got != "b-1 serverContext1.FetchAvailability_Activity, b-2 serverContext1.FetchAvailability_Activity, b-2 serverContext2.sendInvitation" {
			t.Errorf("actions before b-1's answer: %s", got)
		}
		answer("b-1", "Reject")
	}, 2*time.Minute)
	env.ExecuteWorkflow("sideBySide")
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var views []View
	if err := env.GetWorkflowResult(&views); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"Reject", "Approve"} {
		v := views[i]
		got := v.State.Lookup("userContext").Lookup("confirmInvitation").Lookup("decision").Str()
		if v.Status != Completed || got != want || len(v.Done) != len(prog.Chunks) {
			t.Errorf("item %d: status %s, decision %q, done %v", i+1, v.Status, got, v.Done)
		}
	}
	if got := strings.Join(statuses, ", "); !strings.Contains(got, "b-1 waiting") || !strings.HasSuffix(got, "b-1 completed") {
		t.Errorf("statuses %s", got)
	}
}
