package durable

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
)

// TestRunActions: each call's result is its own — a failure is a result,
// retryable or not — and an attempt after a crash takes up the calls its
// predecessor's last heartbeat had not finished, and only those.
func TestRunActions(t *testing.T) {
	var ran []string
	var acts action.Registry
	acts.Register(action.Action{Name: "note", Run: func(ctx context.Context, in jsonv.Value) (jsonv.Value, error) {
		key := action.IdempotencyKey(ctx)
		ran = append(ran, key)
		switch key {
		case "k-busy":
			return jsonv.Value{}, errors.New("busy")
		case "k-bad":
			return jsonv.Value{}, action.NonRetryable(errors.New("bad input"))
		case "k-huge":
			return jsonv.StringValue(strings.Repeat("x", MaxResultSize)), nil
		}
		return jsonv.StringValue("noted " + key), nil
	}})
	a := &Activities{Actions: &acts, Logger: quietLogger()}
	calls := []ActionInput{
		{Step: "s", Action: "note", Key: "k-done", Output: jsonv.NullValue()},
		{Step: "s", Action: "note", Key: "k-ok", Output: jsonv.NullValue()},
		{Step: "s", Action: "note", Key: "k-busy", Output: jsonv.NullValue()},
		{Step: "s", Action: "note", Key: "k-bad", Output: jsonv.NullValue()},
		{Step: "s", Action: "note", Key: "k-huge", Output: jsonv.NullValue()},
	}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivityWithOptions(a.RunActions, activity.RegisterOptions{Name: ActionsName})
	// The last attempt finished the first call before it died.
	env.SetHeartbeatDetails(actionsDone{Results: []ActionResult{{Output: jsonv.StringValue("from before")}, {}, {}, {}, {}}, Finished: []bool{true, false, false, false, false}})
	enc, err := env.ExecuteActivity(ActionsName, ActionsInput{Calls: calls, Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	var res []ActionResult
	if err := enc.Get(&res); err != nil {
		t.Fatal(err)
	}
	if len(ran) != 4 || ran[0] != "k-ok" {
		t.Errorf("ran %v, want the four calls not finished before", ran)
	}
	// A result past MaxResultSize fails its call at once, by name.
	want := []string{`"from before"`, `"noted k-ok"`, "busy retryable", "bad input NonRetryable",
		"step s: action note's result is 1048612 bytes, past the limit of 1 MiB on what one step brings into a process TooLarge"}
	for k, r := range res {
		got := string(jsonv.Marshal(r.Output))
		if r.Error != "" {
			got = r.Error + " retryable"
			if r.NonRetryable {
				got = r.Error + " " + r.Type
			}
		}
		if got != want[k] {
			t.Errorf("call %d: %s, want %s", k, got, want[k])
		}
	}
}

// TestFillTooLarge: a model's answer that, with its turns, is past
// MaxResultSize fails the fill at once, non-retryably, by name, instead
// of being refused by the engine and retried until the step times out.
func TestFillTooLarge(t *testing.T) {
	big := `{"note":{"text":"` + strings.Repeat("x", MaxResultSize/2) + `"}}`
	a := &Activities{Provider: answer(big), Logger: quietLogger()}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivityWithOptions(a.Fill, activity.RegisterOptions{Name: FillName})
	schema := jsonv.ObjectValue(jsonv.Member{Name: "type", Value: jsonv.StringValue("object")})
	_, err := env.ExecuteActivity(FillName, FillInput{Chunk: "LLM_c", Schema: schema, Context: jsonv.NewObject(0).Value()})
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != ErrTypeTooLarge || !app.NonRetryable() || !strings.Contains(err.Error(), "chunk LLM_c: the model's answer with its turns is") {
		t.Fatalf("a fill past the limit: %v", err)
	}
}

// answer is a model that answers every request with content.
type answer string

func (a answer) Complete(context.Context, *llm.Request) (*llm.Response, error) {
	return &llm.Response{Content: string(a), Model: "scripted"}, nil
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestFillErrorKinds: a model call's failure is typed by whose it is — the
// endpoint's (refused, down past the worker's patience) apart from the
// answer's (too large, malformed) — and none of these is retried; a
// transport failure is left to the engine's retries.
func TestFillErrorKinds(t *testing.T) {
	refused := &llm.APIError{Provider: "openai", StatusCode: 401, Message: "Incorrect API key provided"}
	tests := []struct {
		err  error
		want string // "" : retryable, as it is
	}{
		{refused, ErrTypeEndpointRefused},
		{&llm.EndpointError{Refused: true, Err: refused}, ErrTypeEndpointRefused},
		{&llm.EndpointError{Since: time.Now(), Err: &llm.APIError{StatusCode: 503, Retryable: true}}, ErrTypeEndpointDown},
		{&llm.APIError{StatusCode: 400, Message: "bad request"}, ErrTypeModelRefused},
		{fmt.Errorf("step x: %w", &llm.APIError{Err: &llm.AnswerTooLargeError{Size: 9 << 20, Limit: 8 << 20}}), ErrTypeTooLarge},
		{fmt.Errorf("step x: %w: negative token counts", llm.ErrMalformedAnswer), ErrTypeMalformedAnswer},
		{&llm.APIError{Message: "connection refused", Retryable: true}, ""},
	}
	for _, tt := range tests {
		err := FillError(tt.err)
		var ae *temporal.ApplicationError
		switch {
		case tt.want == "":
			if err != tt.err {
				t.Errorf("%v: %v, want it as it is", tt.err, err)
			}
		case !errors.As(err, &ae) || ae.Type() != tt.want || !ae.NonRetryable():
			t.Errorf("%v: %v, want non-retryable %s", tt.err, err, tt.want)
		}
	}
}
