package vibe

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/augceo/vibe/process"
)

// quietRuntime starts a runtime with opts on an embedded engine of its
// own — a data directory of the test's, no system workers, a logger that
// discards — unless opts says otherwise, and closes it when the test ends.
func quietRuntime(ctx context.Context, t *testing.T, opts Options) *Runtime {
	t.Helper()
	if opts.Engine.DataDir == "" {
		opts.Engine.DataDir = filepath.Join(t.TempDir(), "data")
		opts.Engine.NoSystemWorkers = true
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	rt, err := Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// untilWaiting watches process id through c until it waits for a person.
func untilWaiting(ctx context.Context, t *testing.T, c *process.Client, id string) {
	t.Helper()
	for info, err := range c.Watch(ctx, id, process.WatchOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		if info.Status == process.Waiting {
			return
		}
	}
	t.Fatalf("process %s ended without waiting for a person", id)
}

// finalInfo watches process id through c until it ends, and returns what
// it read last.
func finalInfo(ctx context.Context, t *testing.T, c *process.Client, id string) *process.Info {
	t.Helper()
	var last *process.Info
	for info, err := range c.Watch(ctx, id, process.WatchOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		last = info
	}
	return last
}
