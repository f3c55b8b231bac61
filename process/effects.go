package process

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"
)

// Delivery of effects. Temporal delivers an activity at least once: after
// a crash, or when an attempt times out, it runs again. So every action
// call carries an idempotency key that stays the same across retries and
// restarts — derived from the workflow's id and the step — and an endpoint
// that honours it (an HTTP action gets it as the Idempotency-Key header, a
// Go action from IdempotencyKey) applies the effect once.
//
// Every activity that waits on the outside (a model, an action, a
// delegate) heartbeats, so that when its worker dies the engine gives it to
// another within HeartbeatTimeout instead of waiting out the attempt's
// whole timeout.

// HeartbeatTimeout is how long the engine waits for a running activity's
// heartbeat before it retries the activity elsewhere: after a crash, the
// work resumes within about this long of the restart.
const HeartbeatTimeout = 10 * time.Second

// heartbeatEvery is how often a running activity heartbeats; the SDK
// throttles what it sends to the engine, so this only bounds the delay.
const heartbeatEvery = HeartbeatTimeout / 4

// KeepAlive heartbeats for the activity of ctx until the returned stop is
// called. A heartbeat also tells the activity when it was cancelled, which
// then ends ctx.
func KeepAlive(ctx context.Context) (stop func()) {
	if !activity.IsActivity(ctx) {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(heartbeatEvery)
		defer t.Stop()
		for {
			activity.RecordHeartbeat(ctx)
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done) }
}

type keyContext struct{}

// WithIdempotencyKey returns ctx carrying an action call's idempotency key.
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, keyContext{}, key)
}

// IdempotencyKey is the idempotency key of the action call ctx belongs to:
// the same for every attempt of that call, across retries and restarts,
// and different for every other call. A Go action that applies an effect
// (sends a mail, books a room) records the keys it has applied and does
// nothing for a key it has seen. "" outside an action.
func IdempotencyKey(ctx context.Context) string {
	k, _ := ctx.Value(keyContext{}).(string)
	return k
}

// actionKey is the idempotency key of a step's action in a workflow: the
// workflow's id (not its run's, so that work started again under the same
// id, as a batch resumes, is recognised) and the step.
func actionKey(workflowID, step string) string { return "vibe:" + workflowID + ":" + step }
