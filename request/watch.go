package request

import (
	"context"
	"iter"
	"time"

	"github.com/augceo/vibe/durable"
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
}

// Watch follows the request id as get reads it — Client.Get, or a
// server's (api.RequestClient) — yielding its view each time it has
// changed (as the API shows it: the calls finished, the states …), the
// first read always. It ends once the request has completed or failed
// (that view is the last yielded), when the loop stops, or when ctx is
// done (yielded as ctx.Err()). An error of a read is yielded; ErrNotFound
// ends the watch, any other is taken as transient: a loop that goes on
// gets the next read.
func Watch(ctx context.Context, get func(ctx context.Context, id string) (*Info, error), id string, opts WatchOptions) iter.Seq2[*Info, error] {
	return watch.Follow(ctx, get, id, opts.Interval, opts.MaxInterval, func(info *Info) bool { return info.Status != durable.Running }, ErrNotFound)
}

// Watch follows a request, read with Get, until it has completed or
// failed: see [Watch].
func (c *Client) Watch(ctx context.Context, id string, opts WatchOptions) iter.Seq2[*Info, error] {
	return Watch(ctx, c.Get, id, opts)
}
