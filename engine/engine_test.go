package engine

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/types/known/durationpb"
)

const taskQueue = "engine-test"

// startEngine starts an engine for a test and closes it when the test ends.
// An empty DataDir (in embedded mode) becomes a fresh temporary directory.
func startEngine(t testing.TB, opts Options) *Engine {
	t.Helper()
	if opts.DataDir == "" && opts.HostPort == "" {
		opts.DataDir = t.TempDir()
	}
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return e
}

// clientTLS returns a TLS configuration with the client certificate of the
// embedded engine e, as a worker on another machine would load it.
func clientTLS(t testing.TB, e *Engine) *tls.Config {
	t.Helper()
	cfg, err := LoadClientTLS(ClientCertFiles(e.dataDir))
	if err != nil {
		t.Fatalf("LoadClientTLS: %v", err)
	}
	return cfg
}

// testLogger shows warnings in the test's output (on failure or with -v).
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// startWorker runs a worker with the given workflows and activities on the
// engine's client until the test ends (before the engine closes).
func startWorker(t testing.TB, c client.Client, workflows []any, activities []any) {
	t.Helper()
	w := worker.New(c, taskQueue, worker.Options{})
	for _, wf := range workflows {
		w.RegisterWorkflow(wf)
	}
	for _, a := range activities {
		w.RegisterActivity(a)
	}
	if err := w.Start(); err != nil {
		t.Fatalf("start worker: %v", err)
	}
	t.Cleanup(w.Stop)
}

// Greet is a workflow that runs one activity.
func Greet(ctx workflow.Context, name string) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	var greeting string
	err := workflow.ExecuteActivity(ctx, Hello, name).Get(ctx, &greeting)
	return greeting, err
}

// Hello is Greet's activity.
func Hello(ctx context.Context, name string) (string, error) {
	return "hello " + name, nil
}

// runGreet runs Greet to completion through c.
func runGreet(t testing.TB, c client.Client, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: taskQueue}, Greet, name)
	if err != nil {
		t.Fatalf("ExecuteWorkflow: %v", err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil {
		t.Fatalf("workflow: %v", err)
	}
	if want := "hello " + name; got != want {
		t.Fatalf("workflow returned %q, want %q", got, want)
	}
}

func TestEmbeddedRunsWorkflow(t *testing.T) {
	t.Parallel()
	fixed, err := freePort(loopback)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name         string
		frontendPort int
	}{
		{"free port", 0},
		{"fixed port", fixed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := startEngine(t, Options{FrontendPort: tt.frontendPort})
			if !e.Embedded() {
				t.Error("Embedded() = false, want true")
			}
			if e.Namespace() != DefaultNamespace {
				t.Errorf("Namespace() = %q, want %q", e.Namespace(), DefaultNamespace)
			}
			if !strings.HasPrefix(e.HostPort(), "127.0.0.1:") {
				t.Errorf("HostPort() = %q, want 127.0.0.1:<port>", e.HostPort())
			}
			if tt.frontendPort != 0 && e.HostPort() != hostPort(tt.frontendPort) {
				t.Errorf("HostPort() = %q, want port %d", e.HostPort(), tt.frontendPort)
			}
			startWorker(t, e.Client(), []any{Greet}, []any{Hello})
			runGreet(t, e.Client(), "vibe")
		})
	}
}

// counter counts executions of its activity across engine restarts.
type counter struct{ n atomic.Int32 }

// Count is the activity.
func (c *counter) Count(ctx context.Context) error {
	c.n.Add(1)
	return nil
}

// CountThenWait runs the Count activity, then waits for the "go" signal.
// Its "stage" query tells the test when the activity is recorded.
func CountThenWait(ctx workflow.Context) (string, error) {
	stage := "counting"
	if err := workflow.SetQueryHandler(ctx, "stage", func() (string, error) { return stage, nil }); err != nil {
		return "", err
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	var c *counter
	if err := workflow.ExecuteActivity(ctx, c.Count).Get(ctx, nil); err != nil {
		return "", err
	}
	stage = "waiting"
	var msg string
	workflow.GetSignalChannel(ctx, "go").Receive(ctx, &msg)
	return "got " + msg, nil
}

func TestDurableAcrossRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var count counter
	const id = "durable-1"

	// First life: run up to the signal wait, then close everything.
	first, err := Start(ctx, Options{DataDir: dir, Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("first Start: %v", err)
	}
	w := worker.New(first.Client(), taskQueue, worker.Options{})
	w.RegisterWorkflow(CountThenWait)
	w.RegisterActivity(&count)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	opts := client.StartWorkflowOptions{ID: id, TaskQueue: taskQueue}
	if _, err := first.Client().ExecuteWorkflow(ctx, opts, CountThenWait); err != nil {
		t.Fatalf("ExecuteWorkflow: %v", err)
	}
	waitFor(t, 20*time.Second, func() error {
		v, err := first.Client().QueryWorkflow(ctx, id, "", "stage")
		if err != nil {
			return err
		}
		var stage string
		if err := v.Get(&stage); err != nil {
			return err
		}
		if stage != "waiting" {
			return fmt.Errorf("stage %q", stage)
		}
		return nil
	})
	w.Stop()
	if err := first.Close(); err != nil {
		t.Fatalf("first Close: %v", err)
	}

	// Second life on the same directory: the signal completes the workflow.
	second := startEngine(t, Options{DataDir: dir})
	startWorker(t, second.Client(), []any{CountThenWait}, []any{&count})
	if err := second.Client().SignalWorkflow(ctx, id, "", "go", "on"); err != nil {
		t.Fatalf("SignalWorkflow after restart: %v", err)
	}
	var got string
	if err := second.Client().GetWorkflow(ctx, id, "").Get(ctx, &got); err != nil {
		t.Fatalf("workflow after restart: %v", err)
	}
	if got != "got on" {
		t.Errorf("workflow returned %q, want %q", got, "got on")
	}
	if n := count.n.Load(); n != 1 {
		t.Errorf("activity ran %d times, want 1", n)
	}
}

// waitFor calls try until it returns nil, failing the test with the last
// error if that takes longer than timeout.
func waitFor(t testing.TB, timeout time.Duration, try func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := try()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not done within %v: %v", timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestDataDirLock(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	e, err := Start(ctx, Options{DataDir: dir, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()

	if addr, ok := RunningAddr(dir); !ok || addr != e.HostPort() {
		t.Errorf("RunningAddr while running = %q, %v; want %q, true", addr, ok, e.HostPort())
	}
	_, err = Start(ctx, Options{DataDir: dir, Logger: testLogger(t)})
	want := fmt.Sprintf("data dir %s is in use by another vibe process (pid %d)", dir, os.Getpid())
	if err == nil || err.Error() != want {
		t.Errorf("second Start error = %v; want %q", err, want)
	}

	if err := e.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if addr, ok := RunningAddr(dir); ok {
		t.Errorf("RunningAddr after Close = %q, true; want false", addr)
	}
	// The lock is free again.
	l, err := lockDir(dir)
	if err != nil {
		t.Fatalf("lock after Close: %v", err)
	}
	l.unlock()
}

func TestRunningAddrStale(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		files map[string]string // name in the data dir → content
	}{
		{"no data dir", nil},
		{"empty data dir", map[string]string{}},
		{"addr without lock file", map[string]string{addrFile: "127.0.0.1:1\n"}},
		// What a SIGKILLed engine leaves: both files, no flock.
		{"addr with unheld lock", map[string]string{addrFile: "127.0.0.1:1\n", lockFile: "12345\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "data")
			if tt.files != nil {
				if err := os.Mkdir(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for name, content := range tt.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if addr, ok := RunningAddr(dir); ok {
				t.Errorf("RunningAddr = %q, true; want false", addr)
			}
		})
	}
}

func TestExternal(t *testing.T) {
	t.Parallel()
	a := startEngine(t, Options{})
	startWorker(t, a.Client(), []any{Greet}, []any{Hello})

	unused := filepath.Join(t.TempDir(), "unused")
	b := startEngine(t, Options{HostPort: a.HostPort(), TLS: clientTLS(t, a), DataDir: unused})
	if b.Embedded() {
		t.Error("external engine: Embedded() = true")
	}
	if b.HostPort() != a.HostPort() {
		t.Errorf("HostPort() = %q, want %q", b.HostPort(), a.HostPort())
	}
	if _, err := os.Stat(unused); err == nil {
		t.Error("external engine created a data dir")
	}
	runGreet(t, b.Client(), "external")
	if err := b.Close(); err != nil {
		t.Fatalf("close external: %v", err)
	}
	// A keeps running.
	runGreet(t, a.Client(), "still here")
}

func TestExternalErrors(t *testing.T) {
	t.Parallel()
	a := startEngine(t, Options{})
	closed, err := freePort(loopback)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		opts    Options
		wantErr string
	}{
		{"unreachable", Options{HostPort: hostPort(closed)}, "connect to temporal at " + hostPort(closed)},
		{"unknown namespace", Options{HostPort: a.HostPort(), TLS: clientTLS(t, a), Namespace: "nope"}, `has no namespace "nope"`},
		// The embedded frontend refuses clients without its certificate.
		{"no client certificate", Options{HostPort: a.HostPort()}, "connect to temporal at " + a.HostPort()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			tt.opts.Logger = testLogger(t)
			e, err := Start(ctx, tt.opts)
			if err == nil {
				e.Close()
				t.Fatal("Start succeeded, want error")
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error = %q, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

// The search attributes the test registers, as Vibe's processes do.
var (
	ProcessAttribute = sdktemporal.NewSearchAttributeKeyKeyword("VibeProcess")
	StatusAttribute  = sdktemporal.NewSearchAttributeKeyKeyword("VibeStatus")
	testAttributes   = []sdktemporal.SearchAttributeKey{ProcessAttribute, StatusAttribute}
)

// Tag upserts the test's search attributes and returns.
func Tag(ctx workflow.Context, process, status string) error {
	return workflow.UpsertTypedSearchAttributes(ctx,
		ProcessAttribute.ValueSet(process),
		StatusAttribute.ValueSet(status),
	)
}

func TestSearchAttributes(t *testing.T) {
	t.Parallel()
	a := startEngine(t, Options{SearchAttributes: testAttributes})

	// A namespace created after the fact, without Vibe's attributes: an
	// engine on it must add them through the operator service.
	const late = "late"
	_, err := a.Client().WorkflowService().RegisterNamespace(context.Background(), &workflowservice.RegisterNamespaceRequest{
		Namespace:                        late,
		WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour),
	})
	if err != nil {
		t.Fatalf("RegisterNamespace: %v", err)
	}

	tests := []struct {
		name      string
		namespace string
	}{
		{"created with the namespace", DefaultNamespace},
		{"added to an existing namespace", late},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var c client.Client
			if tt.namespace == DefaultNamespace {
				c = a.Client()
			} else {
				// A new namespace reaches the frontend's cache after a
				// refresh; Start in external mode fails until then.
				var e *Engine
				waitFor(t, 30*time.Second, func() error {
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					var err error
					e, err = Start(ctx, Options{HostPort: a.HostPort(), TLS: clientTLS(t, a), Namespace: tt.namespace, Logger: testLogger(t), SearchAttributes: testAttributes})
					return err
				})
				t.Cleanup(func() { e.Close() })
				c = e.Client()
			}
			w := worker.New(c, taskQueue, worker.Options{})
			w.RegisterWorkflow(Tag)
			if err := w.Start(); err != nil {
				t.Fatal(err)
			}
			defer w.Stop()

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			process := "invoice-" + strconv.Itoa(os.Getpid())
			run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: taskQueue}, Tag, process, "done")
			if err != nil {
				t.Fatalf("ExecuteWorkflow: %v", err)
			}
			if err := run.Get(ctx, nil); err != nil {
				t.Fatalf("workflow: %v", err)
			}
			query := fmt.Sprintf("VibeProcess = %q AND VibeStatus = %q", process, "done")
			waitFor(t, 20*time.Second, func() error { // visibility may lag
				resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query})
				if err != nil {
					return err
				}
				for _, ex := range resp.GetExecutions() {
					if ex.GetExecution().GetWorkflowId() == run.GetID() {
						return nil
					}
				}
				return fmt.Errorf("%s: workflow %s not listed", query, run.GetID())
			})
		})
	}
}

func TestFixedPortTaken(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port

	dir := t.TempDir()
	_, err = Start(context.Background(), Options{DataDir: dir, FrontendPort: port, Logger: testLogger(t)})
	if err == nil {
		t.Fatal("Start succeeded on a taken port")
	}
	if want := fmt.Sprintf("frontend port %d is not available", port); !strings.Contains(err.Error(), want) {
		t.Errorf("error = %q, want it to contain %q", err, want)
	}
	// The failed Start released the data directory.
	lk, err := lockDir(dir)
	if err != nil {
		t.Fatalf("lock after failed Start: %v", err)
	}
	lk.unlock()
}

func TestServerLogInDataDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e := startEngine(t, Options{DataDir: dir, ServerLogLevel: "info"})
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, logFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "Starting server for services") {
		t.Errorf("%s lacks the server's start-up line; got %d bytes", logFile, len(b))
	}
}

func TestBadServerLogLevel(t *testing.T) {
	t.Parallel()
	_, err := Start(context.Background(), Options{DataDir: t.TempDir(), ServerLogLevel: "loud"})
	if err == nil || !strings.Contains(err.Error(), `server log level "loud"`) {
		t.Errorf("error = %v, want one naming the level", err)
	}
	if errors.Unwrap(err) == nil {
		t.Errorf("error %v wraps nothing", err)
	}
}
