package durable

import (
	"errors"
	"fmt"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/proto"
)

// MaxPayloadSize is the engine's limit on one payload, in bytes: the start
// of a process (its program, prompt, input and first value, as one
// workflow input) or a person's answer. It is Temporal's default
// (limit.blobSize.error, 2 MiB); the engine refuses a larger payload with a
// gRPC error, and gRPC itself any message past 4 MiB. Client checks sizes
// against it before anything is started (CheckPayloadSize), so a request
// too large gets a *TooLargeError instead.
const MaxPayloadSize = 2 << 20

// MaxAnswerSize bounds a person's answer, encoded: 512 KiB. The workflow
// task that takes an answer carries it several times over — the update
// that brings it, the view the update returns (the answer is in its
// state), the next step's input — and gRPC refuses a task past 4 MiB,
// which the engine then settles by terminating the process: an answer of
// 1.6 MiB, under MaxPayloadSize, did. At a quarter of the payload limit an
// answer cannot fail the process it answers; a larger one is refused
// before it is sent (*TooLargeError) and the process keeps waiting.
const MaxAnswerSize = 512 << 10

// MaxResultSize bounds what one step brings into a process from outside,
// encoded: a chunk's filled value with the model's turns, an action's
// result. 1 MiB, half the payload limit, so that the workflow task that
// takes it stays within gRPC's 4 MiB with the step's next input beside it.
// A larger one fails its step at once, naming the limit (ErrTypeTooLarge),
// instead of being refused by the engine and retried until the step's
// timeout.
const MaxResultSize = 1 << 20

// tooLargeResult is the non-retryable error of a result past
// MaxResultSize, or nil.
func tooLargeResult(what string, v any) error {
	err := CheckSize(what, v, MaxResultSize)
	if tl, ok := errors.AsType[*TooLargeError](err); ok {
		return temporal.NewNonRetryableApplicationError(tl.Error(), ErrTypeTooLarge, tl)
	}
	return err
}

// TooLargeError is a start or an answer past its limit (MaxPayloadSize,
// MaxAnswerSize); nothing was started or sent.
type TooLargeError struct {
	What  string // "the start of schedule-meeting", "the answer"
	Size  int    // bytes, as measured (a lower bound when only the parts were summed)
	Limit int
}

func (e *TooLargeError) Error() string {
	size := mib(e.Size)
	if e.Size < e.Limit+e.Limit/10 {
		size = fmt.Sprintf("%d bytes", e.Size) // "1.0 MiB, past 1 MiB" says nothing
	}
	switch e.Limit {
	case MaxAnswerSize:
		return fmt.Sprintf("%s is %s, past the limit of %s on an answer", e.What, size, mib(e.Limit))
	case MaxResultSize:
		return fmt.Sprintf("%s is %s, past the limit of %s on what one step brings into a process", e.What, size, mib(e.Limit))
	}
	return fmt.Sprintf("%s is %s, past the engine's limit of %s on one payload", e.What, size, mib(e.Limit))
}

func mib(n int) string {
	switch {
	case n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n < 1<<20 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// CheckPayloadSize measures v as the engine will — encoded by the default
// data converter, as the Payloads of one workflow input or update — and
// returns a *TooLargeError naming it as what when it is past
// MaxPayloadSize, so that a start is refused before it is sent.
func CheckPayloadSize(what string, v any) error {
	return CheckSize(what, v, MaxPayloadSize)
}

// CheckSize is CheckPayloadSize against limit (MaxAnswerSize for a
// person's answer, MaxResultSize for what a step brings in).
func CheckSize(what string, v any, limit int) error {
	p, err := converter.GetDefaultDataConverter().ToPayloads(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", what, err)
	}
	if n := proto.Size(p); n > limit {
		return &TooLargeError{What: what, Size: n, Limit: limit}
	}
	return nil
}
