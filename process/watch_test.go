package process

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/augceo/vibe/jsonv"
)

// TestWatch: Watch yields each change of a process's view once, ends
// with the process or when it is not found, and yields other errors and
// reads on.
func TestWatch(t *testing.T) {
	view := func(status Status, done ...string) *Info {
		return &Info{ID: "p-1", Process: "p", View: View{Status: status, Done: append([]string{}, done...), State: jsonv.NewObject(0).Value()}}
	}
	withState := func(info *Info, state string) *Info {
		info.State, _ = jsonv.Parse([]byte(state))
		return info
	}
	withRuns := func(info *Info, done ...bool) *Info {
		for i, d := range done {
			info.ActionRuns = append(info.ActionRuns, ActionRun{Step: fmt.Sprint("notify", i), Done: d})
		}
		return info
	}
	errBusy := errors.New("the engine is busy")
	tests := []struct {
		name  string
		opts  WatchOptions
		reads []any // *Info or error
		want  []string
	}{
		{
			name:  "changes once each, until completed",
			reads: []any{view(Running), view(Running), view(Running, "a"), view(Running, "a"), view(Completed, "a", "b")},
			want:  []string{"running []", "running [a]", "completed [a b]"},
		},
		{
			name:  "waiting goes on; failed ends",
			reads: []any{view(Waiting, "a"), view(Waiting, "a"), view(Running, "a", "b"), view(Failed, "a", "b")},
			want:  []string{"waiting [a]", "running [a b]", "failed [a b]"},
		},
		{
			name:  "a change of state alone is a change",
			reads: []any{view(Running, "a"), withState(view(Running, "a"), `{"a": 1}`), view(Completed, "a")},
			want:  []string{"running [a]", "running [a]", "completed [a]"},
		},
		{
			name:  "not found ends",
			reads: []any{view(Running), fmt.Errorf("%w: p-1", ErrNotFound)},
			want:  []string{"running []", "error: no such process: p-1"},
		},
		{
			name:  "another error is yielded, and the watch reads on",
			reads: []any{view(Running), errBusy, view(Running), view(Completed, "a")},
			want:  []string{"running []", "error: the engine is busy", "completed [a]"},
		},
		{
			name:  "without Actions, a completed process ends the watch with its actions pending",
			reads: []any{view(Running), withRuns(view(Completed, "a"), false)},
			want:  []string{"running []", "completed [a] pending"},
		},
		{
			name:  "with Actions, a completed process is followed until its actions settle",
			opts:  WatchOptions{Actions: true},
			reads: []any{view(Running), withRuns(view(Completed, "a"), false, true), withRuns(view(Completed, "a"), false, true), withRuns(view(Completed, "a"), true, true)},
			want:  []string{"running []", "completed [a] pending", "completed [a] settled"},
		},
		{
			name:  "with Actions, a failed process ends the watch",
			opts:  WatchOptions{Actions: true},
			reads: []any{withRuns(view(Failed, "a"), false)},
			want:  []string{"failed [a] pending"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := 0
			get := func(ctx context.Context, id string) (*Info, error) {
				if id != "p-1" {
					t.Errorf("read %q", id)
				}
				if n >= len(tt.reads) {
					t.Fatalf("read %d: past the last", n+1)
				}
				r := tt.reads[n]
				n++
				if err, ok := r.(error); ok {
					return nil, err
				}
				return r.(*Info), nil
			}
			var got []string
			opts := tt.opts
			opts.Interval = time.Millisecond
			for info, err := range Watch(t.Context(), get, "p-1", opts) {
				if err != nil {
					got = append(got, "error: "+err.Error())
					continue
				}
				line := fmt.Sprint(info.Status, " ", info.Done)
				switch {
				case len(info.ActionRuns) > 0 && info.ActionsSettled():
					line += " settled"
				case len(info.ActionRuns) > 0:
					line += " pending"
				}
				got = append(got, line)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("yielded %q, want %q", got, tt.want)
			}
			if n != len(tt.reads) {
				t.Errorf("%d reads, want %d", n, len(tt.reads))
			}
		})
	}
}
