package process

import (
	"context"
	"iter"
	"time"

	"github.com/augceo/vibe/internal/watch"
)

// WatchOptions says how often Watch reads. The zero value reads every
// tenth of a second.
type WatchOptions struct {
	// Interval is the time between two reads; 0 means a tenth of a second.
	Interval time.Duration
	// MaxInterval, when above Interval, lets the time between reads grow
	// by half after each read, up to MaxInterval.
	MaxInterval time.Duration
	// Actions, when set, follows a completed process on until each of its
	// fire-and-forget actions has completed or failed (Info.ActionRuns):
	// they run in workflows of their own, and go on after the process.
	Actions bool
}

// Watch follows the process id as get reads it — Client.Get, or a
// server's (api.Client) — yielding its view each time it has changed (as
// the API shows it: status, finished chunks, what it waits for, state,
// actions …), the first read always. It ends once the process has
// completed or failed (that view is the last yielded), when the loop
// stops, or when ctx is done (yielded as ctx.Err()). An error of a read is
// yielded; ErrNotFound ends the watch, any other is taken as transient:
// a loop that goes on gets the next read.
//
// With opts.Actions, a completed process is followed on until its
// fire-and-forget actions have settled.
//
// The loop's body runs between two reads: one that answers the process
// sees its next view at the next read.
func Watch(ctx context.Context, get func(ctx context.Context, id string) (*Info, error), id string, opts WatchOptions) iter.Seq2[*Info, error] {
	done := func(info *Info) bool { return info.Status == Completed || info.Status == Failed }
	if opts.Actions {
		done = func(info *Info) bool {
			return info.Status == Failed || info.Status == Completed && info.ActionsSettled()
		}
	}
	return watch.Follow(ctx, get, id, opts.Interval, opts.MaxInterval, done, ErrNotFound)
}

// ActionsSettled reports whether each fire-and-forget action the view
// shows has completed or failed.
func (info *Info) ActionsSettled() bool {
	for _, r := range info.ActionRuns {
		if !r.Done {
			return false
		}
	}
	return true
}

// Watch follows a process, read with Get, until it has completed or
// failed: see [Watch].
func (c *Client) Watch(ctx context.Context, id string, opts WatchOptions) iter.Seq2[*Info, error] {
	return Watch(ctx, c.Get, id, opts)
}
