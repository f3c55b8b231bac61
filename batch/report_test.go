package batch_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/internal/llmtest"
	"github.com/augceo/vibe/llm/openai"
	"github.com/augceo/vibe/process"
	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"
)

// TestGroupReportsAlongItsFirstCalls: a group's first model call goes
// out with its report to the batch's record, not after the record's
// answer, while its items' actions wait for that answer: when it says the
// record is gone, the group ends cancelled and no action has run; when it
// comes, the actions run and the items complete.
func TestGroupReportsAlongItsFirstCalls(t *testing.T) {
	for _, gone := range []bool{false, true} {
		t.Run(map[bool]string{false: "record", true: "gone"}[gone], func(t *testing.T) {
			model := llmtest.NewServer(t, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{})
			rec := &recorder{}
			acts := rec.actions()
			start, _, err := (&process.Client{Actions: acts.Names()}).Prepare(context.Background(), moderate(t))
			if err != nil {
				t.Fatal(err)
			}
			var s testsuite.WorkflowTestSuite
			env := s.NewTestWorkflowEnvironment()
			batch.RegisterWorkflows(env, acts)
			batch.RegisterActivities(env, &batch.Activities{Provider: openai.New(openai.Options{Model: "m", BaseURL: model.URL, APIKey: "k", MaxRetries: -1}), Logger: quiet()})
			durable.Register(env, &durable.Activities{Actions: acts})
			// The record answers the group's first report a second after
			// it came; its other reports at once.
			var answer error
			if gone {
				answer = errors.New("unknown external workflow execution")
			}
			requestsAtAnswer := -1
			env.OnSignalExternalWorkflow(mock.Anything, "b", "", batch.SignalGroup, mock.MatchedBy(func(r batch.GroupReport) bool { return r.Last > 0 })).
				After(time.Second).Return(func(string, string, string, string, any) error {
				requestsAtAnswer = model.Requests()
				return answer
			})
			env.OnSignalExternalWorkflow(mock.Anything, "b", "", batch.SignalGroup, mock.Anything).Return(answer)
			env.ExecuteWorkflow(batch.GroupName, batch.GroupInput{Batch: "b", Name: start.Name, Program: start.Program,
				Items: []batch.Item{{Line: 1, Prompt: "a comment"}, {Line: 2, Prompt: "another"}}})
			if err := env.GetWorkflowError(); err != nil {
				t.Fatal(err)
			}
			var res batch.GroupResult
			if err := env.GetWorkflowResult(&res); err != nil {
				t.Fatal(err)
			}
			if requestsAtAnswer != 1 {
				t.Errorf("the model had %d requests when the record answered the group's report, want 1: the first call goes with the report", requestsAtAnswer)
			}
			if gone {
				if !res.Cancelled || rec.total != 0 {
					t.Errorf("cancelled %v, %d actions ran; want cancelled and none", res.Cancelled, rec.total)
				}
				for _, r := range res.Results {
					if r.Status != batch.StatusFailed {
						t.Errorf("line %d: %+v", r.Line, r)
					}
				}
				return
			}
			if res.Cancelled || rec.total != 2 {
				t.Errorf("cancelled %v, %d actions ran; want 2", res.Cancelled, rec.total)
			}
			for _, r := range res.Results {
				if r.Status != batch.StatusCompleted {
					t.Errorf("line %d: %+v", r.Line, r)
				}
			}
		})
	}
}
