package watch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

var (
	errBusy = errors.New("busy")
	errGone = errors.New("gone")
)

// step is one read of a fake value: a number, or an error.
type step struct {
	v   int
	err error
}

func TestChanges(t *testing.T) {
	done := func(v int) bool { return v == 9 }
	final := func(err error) bool { return errors.Is(err, errGone) }
	tests := []struct {
		name  string
		reads []step
		// stop stops consuming after this many yields; 0 never.
		stop int
		want []string
		// reads is how many reads the sequence made.
		nreads int
	}{
		{
			name:   "each change once",
			reads:  []step{{v: 1}, {v: 1}, {v: 2}, {v: 2}, {v: 2}, {v: 3}, {v: 9}},
			want:   []string{"1", "2", "3", "9"},
			nreads: 7,
		},
		{
			name:   "ends on the last value",
			reads:  []step{{v: 1}, {v: 9}, {v: 10}},
			want:   []string{"1", "9"},
			nreads: 2,
		},
		{
			name:   "the first value may be the last",
			reads:  []step{{v: 9}, {v: 10}},
			want:   []string{"9"},
			nreads: 1,
		},
		{
			name:   "a transient error is yielded, and reading goes on",
			reads:  []step{{v: 1}, {err: errBusy}, {v: 1}, {v: 9}},
			want:   []string{"1", "error: busy", "9"},
			nreads: 4,
		},
		{
			name:   "a final error ends",
			reads:  []step{{v: 1}, {err: errGone}, {v: 9}},
			want:   []string{"1", "error: gone"},
			nreads: 2,
		},
		{
			name:   "a wrapped final error ends",
			reads:  []step{{err: fmt.Errorf("read x: %w", errGone)}, {v: 9}},
			want:   []string{"error: read x: gone"},
			nreads: 1,
		},
		{
			name:   "the consumer stops",
			reads:  []step{{v: 1}, {v: 2}, {v: 9}},
			stop:   2,
			want:   []string{"1", "2"},
			nreads: 2,
		},
		{
			name:   "the consumer stops at an error",
			reads:  []step{{v: 1}, {err: errBusy}, {v: 9}},
			stop:   2,
			want:   []string{"1", "error: busy"},
			nreads: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := 0
			read := func(context.Context) (int, error) {
				if n >= len(tt.reads) {
					t.Fatalf("read %d: past the last", n+1)
				}
				s := tt.reads[n]
				n++
				return s.v, s.err
			}
			var got []string
			for v, err := range Changes(t.Context(), read, Options[int]{Interval: time.Millisecond, Done: done, Final: final}) {
				if err != nil {
					got = append(got, "error: "+err.Error())
				} else {
					got = append(got, fmt.Sprint(v))
				}
				if len(got) == tt.stop {
					break
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("yielded %q, want %q", got, tt.want)
			}
			if n != tt.nreads {
				t.Errorf("%d reads, want %d", n, tt.nreads)
			}
		})
	}
}

// TestChangesContext: the end of ctx ends the sequence, yielded as
// ctx.Err() when it comes between two reads; an error of a read while ctx
// is done ends it too.
func TestChangesContext(t *testing.T) {
	t.Run("between reads", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		n := 0
		read := func(context.Context) (int, error) {
			if n++; n == 3 {
				cancel()
			}
			return 1, nil
		}
		var errs []error
		vals := 0
		for _, err := range Changes(ctx, read, Options[int]{Interval: time.Millisecond}) {
			if err != nil {
				errs = append(errs, err)
			} else {
				vals++
			}
		}
		if vals != 1 || len(errs) != 1 || !errors.Is(errs[0], context.Canceled) || n != 3 {
			t.Errorf("%d values, errors %v after %d reads; want 1 value, context.Canceled after 3 reads", vals, errs, n)
		}
	})
	t.Run("during a read", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		n := 0
		read := func(ctx context.Context) (int, error) {
			n++
			cancel()
			return 0, fmt.Errorf("read: %w", ctx.Err())
		}
		var got []error
		for _, err := range Changes(ctx, read, Options[int]{Interval: time.Millisecond}) {
			got = append(got, err)
		}
		if len(got) != 1 || !errors.Is(got[0], context.Canceled) || n != 1 {
			t.Errorf("errors %v after %d reads; want the read's one after 1", got, n)
		}
	})
}

// TestChangesInterval: reads are an interval apart, growing up to
// MaxInterval.
func TestChangesInterval(t *testing.T) {
	var at []time.Time
	read := func(context.Context) (int, error) {
		at = append(at, time.Now())
		return len(at), nil
	}
	opts := Options[int]{Interval: 10 * time.Millisecond, MaxInterval: 40 * time.Millisecond, Done: func(n int) bool { return n == 6 }}
	for _, err := range Changes(t.Context(), read, opts) {
		if err != nil {
			t.Fatal(err)
		}
	}
	// 10, 15, 22.5, 33.75, then 40 ms apart.
	want := []time.Duration{10, 15, 22, 33, 40}
	for i, w := range want {
		if got := at[i+1].Sub(at[i]); got < w*time.Millisecond {
			t.Errorf("read %d came %v after the one before, want at least %v ms", i+2, got, w)
		}
	}
}

func TestSameJSON(t *testing.T) {
	type view struct {
		Status string         `json:"status"`
		Done   []string       `json:"done"`
		Steps  map[string]int `json:"steps"`
	}
	a := &view{Status: "running", Done: []string{"a"}, Steps: map[string]int{"a": 1, "b": 2}}
	tests := []struct {
		name string
		b    *view
		want bool
	}{
		{"same", &view{Status: "running", Done: []string{"a"}, Steps: map[string]int{"b": 2, "a": 1}}, true},
		{"status", &view{Status: "waiting", Done: []string{"a"}, Steps: map[string]int{"a": 1, "b": 2}}, false},
		{"done", &view{Status: "running", Done: []string{"a", "b"}, Steps: map[string]int{"a": 1, "b": 2}}, false},
		{"nil", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SameJSON(a, tt.b); got != tt.want {
				t.Errorf("SameJSON = %v, want %v", got, tt.want)
			}
		})
	}
	if SameJSON(func() {}, func() {}) {
		t.Error("values that do not encode are the same")
	}
}
