package watch

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"reflect"
	"time"
)

// DefaultInterval is the time between two reads when Options.Interval is
// 0: a person following a process sees a step finish within a tenth of a
// second.
const DefaultInterval = 100 * time.Millisecond

// Options says how Changes reads a value and when it stops. The zero
// value reads every DefaultInterval, compares with reflect.DeepEqual and
// goes on until ctx is done.
type Options[V any] struct {
	// Interval is the time between two reads; 0 means DefaultInterval.
	Interval time.Duration
	// MaxInterval, when above Interval, lets the time between reads grow
	// by half after each read, up to MaxInterval: what ends soon is seen
	// at once, what takes long is read less often.
	MaxInterval time.Duration
	// Equal reports whether a read shows nothing new since the last value
	// yielded; nil means reflect.DeepEqual.
	Equal func(a, b V) bool
	// Done reports whether a value yielded is the last there will be (a
	// process that completed): the sequence ends after it. Nil means no
	// value is.
	Done func(V) bool
	// Final reports whether an error ends the sequence (a value that is no
	// more). Any other error is yielded as transient: a consumer that goes
	// on gets the next read after the interval. An error of a read while
	// ctx is done always ends the sequence.
	Final func(error) bool
}

// Follow is Changes of what get reads of the workflow id, compared as the
// API shows it (SameJSON): it ends after a value done reports, and on an
// error that is notFound (errors.Is). Interval and MaxInterval are
// Options'. The clients' Watch methods are Follow of their Get.
func Follow[V any](ctx context.Context, get func(ctx context.Context, id string) (V, error), id string, interval, maxInterval time.Duration, done func(V) bool, notFound error) iter.Seq2[V, error] {
	read := func(ctx context.Context) (V, error) { return get(ctx, id) }
	return Changes(ctx, read, Options[V]{
		Interval:    interval,
		MaxInterval: maxInterval,
		Equal:       SameJSON[V],
		Done:        done,
		Final:       func(err error) bool { return errors.Is(err, notFound) },
	})
}

// Changes reads a value with read at once and then every interval, and
// yields it whenever it differs from the last value yielded — the first
// read always. The sequence ends after a value Done reports, after a final
// error, when the consumer stops, or when ctx is done; ctx's end while
// waiting for the next read is yielded as ctx.Err().
//
// The consumer runs between two reads: a slow consumer (one that asks a
// person) delays the next read, it does not queue reads up.
func Changes[V any](ctx context.Context, read func(context.Context) (V, error), opts Options[V]) iter.Seq2[V, error] {
	equal := opts.Equal
	if equal == nil {
		equal = func(a, b V) bool { return reflect.DeepEqual(a, b) }
	}
	interval := opts.Interval
	if interval <= 0 {
		interval = DefaultInterval
	}
	return func(yield func(V, error) bool) {
		var (
			last V
			seen bool
			zero V
		)
		wait := interval
		var timer *time.Timer
		for {
			v, err := read(ctx)
			switch {
			case err != nil:
				if !yield(zero, err) || ctx.Err() != nil || (opts.Final != nil && opts.Final(err)) {
					return
				}
			case !seen || !equal(last, v):
				last, seen = v, true
				if !yield(v, nil) || (opts.Done != nil && opts.Done(v)) {
					return
				}
			}
			if timer == nil {
				timer = time.NewTimer(wait)
				defer timer.Stop()
			} else {
				timer.Reset(wait)
			}
			select {
			case <-ctx.Done():
				yield(zero, ctx.Err())
				return
			case <-timer.C:
			}
			if opts.MaxInterval > wait {
				wait = min(wait*3/2, opts.MaxInterval)
			}
		}
	}
}

// SameJSON reports whether a and b encode to the same JSON: two reads of
// a view that show the same thing. A value that does not encode is never
// the same.
func SameJSON[V any](a, b V) bool {
	x, err := json.Marshal(a)
	if err != nil {
		return false
	}
	y, err := json.Marshal(b)
	return err == nil && string(x) == string(y)
}
