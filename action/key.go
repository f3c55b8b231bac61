package action

import "context"

// Delivery of effects. Temporal delivers an activity at least once: after
// a crash, or when an attempt times out, it runs again. So every action
// call carries an idempotency key that stays the same across retries and
// restarts — derived from the workflow's id and the step (Key) — and an
// endpoint that honours it (an HTTP action gets it as the Idempotency-Key
// header, an MCP tool in _meta as MetaIdempotencyKey, a Go action from
// IdempotencyKey) applies the effect once.

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

// Key is the idempotency key of a step's action in a workflow: the
// workflow's id (not its run's, so that work started again under the same
// id, as a batch resumes, is recognised) and the step's qualified name.
func Key(workflowID, step string) string { return "vibe:" + workflowID + ":" + step }
