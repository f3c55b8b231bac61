package durable

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
)

// queryAttempts bounds Query's tries of one query.
const queryAttempts = 5

// Query queries workflow id (its current run) as client.Client's
// QueryWorkflow does, and asks again, a few times within ctx, when the
// engine drops the query on its way — a stream cancelled or a frontend
// unavailable while a worker's sticky queue moves, as a cluster does when
// the worker that last ran the workflow stops. A query reads and changes
// nothing, so asking again is safe; the workflow's own answer (a failed
// query, an unknown workflow) is returned at once.
func Query(ctx context.Context, c client.Client, id, name string, args ...any) (converter.EncodedValue, error) {
	wait := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		v, err := c.QueryWorkflow(ctx, id, "", name, args...)
		if err == nil || attempt == queryAttempts || ctx.Err() != nil || !dropped(err) {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// dropped reports whether err is the engine's failure to carry a query
// rather than the workflow's answer to it.
func dropped(err error) bool {
	var (
		canceled    *serviceerror.Canceled
		unavailable *serviceerror.Unavailable
		deadline    *serviceerror.DeadlineExceeded
	)
	return errors.As(err, &canceled) || errors.As(err, &unavailable) || errors.As(err, &deadline)
}
