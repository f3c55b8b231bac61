package engine

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
)

// helperDirEnv tells the test binary, run as a child process, to act as
// the engine process that TestSurvivesKill kills.
const helperDirEnv = "VIBE_ENGINE_HELPER_DIR"

const killedID = "killed-1"

// TestSurvivesKill runs the first life of a workflow in a child process,
// SIGKILLs it while the workflow waits for a signal, and finishes the
// workflow on the same data dir in this process: the lock and the stale
// engine.addr must not get in the way, and the activity must not run again.
func TestSurvivesKill(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperEngineProcess$")
	cmd.Env = append(os.Environ(), helperDirEnv+"="+dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == "ENGINE-READY" {
				ready <- true
				break
			}
		}
		io.Copy(io.Discard, stdout)
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatalf("child process ended before its workflow was waiting; stderr:\n%s", stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("child process not ready within 60s; stderr:\n%s", stderr.String())
	}

	if _, ok := RunningAddr(dir); !ok {
		t.Error("RunningAddr while the child runs: not found")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, err = Start(ctx, Options{DataDir: dir, Logger: testLogger(t)})
	if want := fmt.Sprintf("in use by another vibe process (pid %d)", cmd.Process.Pid); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Start while the child runs: error %v, want one containing %q", err, want)
	}

	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if _, err := os.Stat(filepath.Join(dir, addrFile)); err != nil {
		t.Errorf("the killed child left no %s to ignore: %v", addrFile, err)
	}
	if addr, ok := RunningAddr(dir); ok {
		t.Errorf("RunningAddr after SIGKILL = %q, true; want false", addr)
	}

	e := startEngine(t, Options{DataDir: dir})
	var count counter
	startWorker(t, e.Client(), []any{CountThenWait}, []any{&count})
	if err := e.Client().SignalWorkflow(ctx, killedID, "", "go", "on"); err != nil {
		t.Fatalf("SignalWorkflow after SIGKILL: %v", err)
	}
	var got string
	if err := e.Client().GetWorkflow(ctx, killedID, "").Get(ctx, &got); err != nil {
		t.Fatalf("workflow after SIGKILL: %v", err)
	}
	if got != "got on" {
		t.Errorf("workflow returned %q, want %q", got, "got on")
	}
	if n := count.n.Load(); n != 0 {
		t.Errorf("activity ran %d more times after the restart, want 0", n)
	}
	completed := 0
	it := e.Client().GetWorkflowHistory(ctx, killedID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.GetEventType() == enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED {
			completed++
		}
	}
	if completed != 1 {
		t.Errorf("history has %d completed activities, want 1", completed)
	}
}

// TestHelperEngineProcess is the child process of TestSurvivesKill: it runs
// CountThenWait up to the signal wait, says so on stdout and waits to be
// killed. Run directly, it skips.
func TestHelperEngineProcess(t *testing.T) {
	dir := os.Getenv(helperDirEnv)
	if dir == "" {
		t.Skip("child process of TestSurvivesKill")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e, err := Start(ctx, Options{DataDir: dir, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	var count counter
	w := worker.New(e.Client(), taskQueue, worker.Options{})
	w.RegisterWorkflow(CountThenWait)
	w.RegisterActivity(&count)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	opts := client.StartWorkflowOptions{ID: killedID, TaskQueue: taskQueue}
	if _, err := e.Client().ExecuteWorkflow(ctx, opts, CountThenWait); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, func() error {
		v, err := e.Client().QueryWorkflow(ctx, killedID, "", "stage")
		if err != nil {
			return err
		}
		var stage string
		if err := v.Get(&stage); err != nil {
			return err
		}
		if stage != "waiting" || count.n.Load() != 1 {
			return fmt.Errorf("stage %q, activity ran %d times", stage, count.n.Load())
		}
		return nil
	})
	fmt.Println("ENGINE-READY")
	time.Sleep(time.Minute) // killed long before; exits if the parent died
	t.Error("not killed within a minute")
}
