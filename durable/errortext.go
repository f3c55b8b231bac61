package durable

import (
	"errors"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
)

// ErrorText is an error as a person reads it: each cause said once, after
// the wrappers that say where it happened, without Temporal's envelopes.
//
// An error that crossed Temporal comes back as a chain in which every
// layer repeats the ones below it: a Go error returned by an activity is
// sent as one failure per wrapper, each failure's message the whole text
// of its wrapper (so "a: b: c", then "b: c", then "c"), and Error() of the
// ApplicationError rebuilt from it prints each message again with its Go
// type ("(type: wrapError, retryable: true)"); an ActivityError or a
// ChildWorkflowExecutionError adds its event ids and the worker's
// identity; a workflow error wrapping one with %w carries all of that in
// its own message too. A missing recording came out three times, a failed
// Vessel request six.
//
// ErrorText keeps what each layer adds: a wrapper's prefix (the step, the
// chunk, the item), the message of an ApplicationError whose cause it does
// not already hold, the activity or child workflow a timeout, a
// cancellation or a termination happened to. Types, retryability, event
// ids and identities are left out: they are Temporal's bookkeeping, in the
// workflow's history for whoever needs them.
func ErrorText(err error) string {
	if err == nil {
		return ""
	}
	switch e := err.(type) {
	case *temporal.ApplicationError:
		return withCause(e.Message(), errors.Unwrap(e))
	case *temporal.ActivityError:
		return envelope("activity "+e.ActivityType().GetName(), e.Unwrap(), e.RetryState())
	case *temporal.ChildWorkflowExecutionError:
		return envelope("workflow "+e.WorkflowID(), e.Unwrap(), e.RetryState())
	case *temporal.WorkflowExecutionError:
		return envelope("", e.Unwrap(), enumspb.RETRY_STATE_UNSPECIFIED)
	case *temporal.TimeoutError:
		return withCause(e.Message(), e.Unwrap())
	case *temporal.ServerError:
		return withCause(e.Message(), e.Unwrap())
	case *temporal.CanceledError, *temporal.TerminatedError, *temporal.PanicError:
		return e.Error()
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		// A Go wrapper (fmt.Errorf("chunk %s: %w", …)): its own prefix,
		// then its cause as ErrorText says it.
		if inner := u.Unwrap(); inner != nil {
			if prefix, ok := strings.CutSuffix(err.Error(), inner.Error()); ok {
				return wrap(prefix, ErrorText(inner))
			}
		}
	case interface{ Unwrap() []error }:
		// errors.Join: each error on its line.
		errs := u.Unwrap()
		texts := make([]string, 0, len(errs))
		raw := make([]string, 0, len(errs))
		for _, e := range errs {
			if e != nil {
				texts = append(texts, ErrorText(e))
				raw = append(raw, e.Error())
			}
		}
		if err.Error() == strings.Join(raw, "\n") {
			return strings.Join(texts, "\n")
		}
	}
	return err.Error()
}

// wrap is a wrapper's prefix ("chunk a: ") before the text of what it
// wraps, unless that text starts by saying the same ("chunk a, 2 items:
// …"): then the prefix adds no fact.
func wrap(prefix, text string) string {
	said := strings.TrimSuffix(prefix, ": ")
	if rest, ok := strings.CutPrefix(text, said); ok && said != prefix && (rest == "" || strings.IndexByte(" ,:;(", rest[0]) >= 0) {
		return text
	}
	return prefix + text
}

// withCause is a message followed by its cause, unless the message already
// ends with it: an ApplicationError made of a Go error
// (temporal.NewApplicationError(err.Error(), …, err)) or sent for one
// (each wrapper a failure whose message holds the text of all below it).
func withCause(msg string, cause error) string {
	if cause == nil {
		return msg
	}
	text := ErrorText(cause)
	for _, said := range causeTexts(cause, text) {
		if said == "" {
			continue
		}
		if prefix, ok := strings.CutSuffix(msg, said); ok {
			return wrap(prefix, text)
		}
	}
	if msg == "" {
		return text
	}
	return msg + ": " + text
}

// causeTexts are the ways a message may already hold cause: its whole
// Error() (a Go wrapper of a Temporal error), its own message (a failure
// sent for a Go wrapper), and its text, ErrorText's rendering of it.
func causeTexts(cause error, text string) []string {
	texts := []string{cause.Error()}
	if m, ok := cause.(interface{ Message() string }); ok {
		texts = append(texts, m.Message())
	}
	return append(texts, text)
}

// envelope is the text of the error a Temporal envelope (an activity's, a
// child workflow's, a workflow's) carries, with what it was (named by
// what) when that is the fact: it timed out, was cancelled or terminated,
// or ran out of attempts.
func envelope(what string, cause error, retry enumspb.RetryState) string {
	if cause == nil {
		if what == "" {
			return "failed"
		}
		return what + " failed"
	}
	text := ErrorText(cause)
	var (
		timeout    *temporal.TimeoutError
		canceled   *temporal.CanceledError
		terminated *temporal.TerminatedError
	)
	switch {
	case what == "":
	case errors.As(cause, &timeout) && timeout == cause,
		errors.As(cause, &canceled) && canceled == cause,
		errors.As(cause, &terminated) && terminated == cause:
		return what + ": " + text
	case retry == enumspb.RETRY_STATE_MAXIMUM_ATTEMPTS_REACHED:
		return text + " (" + what + ": no attempts left)"
	case retry == enumspb.RETRY_STATE_TIMEOUT:
		return text + " (" + what + ": out of time for another attempt)"
	}
	return text
}
