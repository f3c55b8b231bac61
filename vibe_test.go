package vibe

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/augceo/vibe/engine"
	"github.com/augceo/vibe/process"
)

// TestStart: the runtime loads its actions file into the clients and the
// worker, and a bad one is refused by file and path with nothing left
// running: the same data directory starts again at once.
func TestStart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	quiet := slog.New(slog.DiscardHandler)
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"Send": {"url": "ftp://x"}}`), 0o600)
	data := filepath.Join(dir, "data")
	_, err := Start(ctx, Options{Engine: engine.Options{DataDir: data}, ActionsFile: bad, Logger: quiet})
	if err == nil || !strings.Contains(err.Error(), bad+": /Send: action \"Send\" needs an http(s) URL") {
		t.Fatalf("a bad actions file: %v", err)
	}

	good := filepath.Join(dir, "actions.json")
	os.WriteFile(good, []byte(`{"SendInvitation": "http://127.0.0.1:9/send"}`), 0o600)
	rt, err := Start(ctx, Options{Engine: engine.Options{DataDir: data}, ActionsFile: good, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if got := rt.Actions.Names(); !slices.Equal(got, []string{"SendInvitation"}) {
		t.Errorf("actions %v", got)
	}
	if !slices.Equal(rt.Processes.Actions, []string{"SendInvitation"}) || rt.Processes.Registered != rt.Actions ||
		!slices.Equal(rt.Requests.Actions, rt.Processes.Actions) || rt.Batches.Processes != rt.Processes {
		t.Errorf("the clients do not share the worker's actions: %+v %+v", rt.Processes, rt.Requests)
	}
	if _, err := rt.Processes.List(ctx, process.ListOptions{}); err != nil {
		t.Errorf("list on the runtime's engine: %v", err)
	}
}
