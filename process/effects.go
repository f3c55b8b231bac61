package process

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"
)

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
