package durable

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	"go.temporal.io/sdk/temporal"
)

// missing stands for a provider's own error type (replay.MissingError).
type missing struct{}

func (missing) Error() string { return `no recorded answer for step "s" in rec.jsonl` }

// sent is err as a workflow receives it from an activity named activity:
// the failure Temporal stores, read back.
func sent(activity string, err error) error {
	conv := temporal.GetDefaultFailureConverter()
	f := &failurepb.Failure{
		Message: "activity error",
		FailureInfo: &failurepb.Failure_ActivityFailureInfo{ActivityFailureInfo: &failurepb.ActivityFailureInfo{
			ActivityType: &commonpb.ActivityType{Name: activity}, ScheduledEventId: 5, StartedEventId: 6, Identity: "1@host@",
			RetryState: enumspb.RETRY_STATE_NON_RETRYABLE_FAILURE,
		}},
		Cause: conv.ErrorToFailure(err),
	}
	return conv.FailureToError(f)
}

// failed is err as a client reads it from a workflow that returned it.
func failed(err error) error {
	conv := temporal.GetDefaultFailureConverter()
	return conv.FailureToError(conv.ErrorToFailure(err))
}

// startToClose is the timeout the engine records for an activity that ran
// out of time.
func startToClose() error {
	conv := temporal.GetDefaultFailureConverter()
	return conv.FailureToError(&failurepb.Failure{
		Message: "activity StartToClose timeout",
		FailureInfo: &failurepb.Failure_TimeoutFailureInfo{TimeoutFailureInfo: &failurepb.TimeoutFailureInfo{
			TimeoutType: enumspb.TIMEOUT_TYPE_START_TO_CLOSE,
		}},
	})
}

// TestErrorText: a cause that crossed Temporal once or twice is said once,
// after the wrappers that say where it happened (issue 27, 1).
func TestErrorText(t *testing.T) {
	notRecorded := func() error {
		err := fmt.Errorf("step s: %w", missing{})
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeNotRecorded, err)
	}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"go error", fmt.Errorf("chunk a: %w", errors.New("boom")), "chunk a: boom"},
		{"activity error", fmt.Errorf("chunk s: %w", sent("vibe.Fill", notRecorded())),
			`chunk s: step s: no recorded answer for step "s" in rec.jsonl`},
		{"activity error, retryable", sent("vibe.Fill", fmt.Errorf("step s: %w", missing{})),
			`step s: no recorded answer for step "s" in rec.jsonl`},
		{"through a workflow", failed(fmt.Errorf("decision: %w", sent("vibe.Decide", notRecorded()))),
			`decision: step s: no recorded answer for step "s" in rec.jsonl`},
		{"twice through workflows", failed(fmt.Errorf("item 3: %w", failed(fmt.Errorf("decision: %w", sent("vibe.Decide", notRecorded()))))),
			`item 3: decision: step s: no recorded answer for step "s" in rec.jsonl`},
		{"application error with its own cause", failed(temporal.NewApplicationErrorWithCause("the batch could not be read", "Read", errors.New("EOF"))),
			"the batch could not be read: EOF"},
		{"timeout", sent("vibe.Action", startToClose()),
			"activity vibe.Action: activity StartToClose timeout"},
		{"joined", errors.Join(fmt.Errorf("a: %w", sent("vibe.Fill", errors.New("x"))), errors.New("b")), "a: x\nb"},
		{"a wrapper that adds nothing", fmt.Errorf("chunk a: %w", sent("vibe.Fill", fmt.Errorf("chunk a, 2 items: %w", missing{}))),
			`chunk a, 2 items: no recorded answer for step "s" in rec.jsonl`},
		{"a wrapper of a longer name", fmt.Errorf("chunk a: %w", errors.New("chunk ab failed")), "chunk a: chunk ab failed"},
		{"canceled", temporal.NewCanceledError(), "canceled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ErrorText(tt.err)
			if got != tt.want {
				t.Errorf("ErrorText:\n got %s\nwant %s\n(Error(): %s)", got, tt.want, tt.err)
			}
			for _, noise := range []string{"(type:", "retryable", "scheduledEventID", "activity error"} {
				if strings.Contains(got, noise) {
					t.Errorf("ErrorText says %q: %s", noise, got)
				}
			}
		})
	}
}
