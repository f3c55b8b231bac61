package batch

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/temporal"
)

// TestUnreachable: an engine that is down or slow to answer is told from a
// call that failed, and untilReachable waits through the first, telling
// once, and returns the second at once.
func TestUnreachable(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{serviceerror.NewUnavailable("connection refused"), true},
		{fmt.Errorf("read: %w", serviceerror.NewDeadlineExceeded("slow")), true},
		{context.DeadlineExceeded, true},
		{serviceerror.NewFailedPrecondition("no space left on device on .vibe (1.2 MiB free): the engine cannot write temporal.db"), true},
		{serviceerror.NewFailedPrecondition("something else"), false},
		{serviceerror.NewInvalidArgument("bad"), false},
		{serviceerror.NewNotFound("no such workflow"), false},
		{temporal.NewApplicationError("the group failed", "x"), false},
		{errors.New("anything else"), false},
		{nil, false},
	} {
		if got := Unreachable(c.err); got != c.want {
			t.Errorf("Unreachable(%v) = %v, want %v", c.err, got, c.want)
		}
	}

	calls, told := 0, 0
	err := untilReachable(context.Background(), func(error) { told++ }, func() error {
		calls++
		if calls == 1 {
			return serviceerror.NewUnavailable("the engine restarts")
		}
		return nil
	})
	if err != nil || calls != 2 || told != 1 {
		t.Errorf("through an outage: %v after %d calls, told %d times", err, calls, told)
	}
	bad := serviceerror.NewInvalidArgument("bad")
	calls = 0
	if err := untilReachable(context.Background(), nil, func() error { calls++; return bad }); err != bad || calls != 1 {
		t.Errorf("a failed call: %v after %d calls", err, calls)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := untilReachable(ctx, nil, func() error { return serviceerror.NewUnavailable("down") }); !errors.Is(err, context.Canceled) && !Unreachable(err) {
		t.Errorf("a cancelled wait: %v", err)
	}
}
