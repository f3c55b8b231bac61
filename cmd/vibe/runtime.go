package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/worker"

	"github.com/augceo/vibe/api"
	"github.com/augceo/vibe/engine"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/schema"
	"github.com/augceo/vibe/vessel"
)

// processes is what the run, answer, show and ps commands need: the local
// engine (process.Client) or a running server (api.Client).
type processes = api.Processes

// engineFlags choose the engine: the embedded one on --data, or a cluster.
type engineFlags struct {
	data, temporal, namespace string
	token                     string
}

func (f *engineFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.data, "data", engine.DefaultDataDir, "data directory of the embedded engine (SQLite file, logs)")
	cmd.Flags().StringVar(&f.temporal, "temporal", "", "use the Temporal cluster at `HOST:PORT` instead of the embedded engine")
	cmd.Flags().StringVar(&f.namespace, "namespace", engine.DefaultNamespace, "Temporal namespace")
	cmd.Flags().StringVar(&f.token, "token", os.Getenv("VIBE_TOKEN"), "API token (default $VIBE_TOKEN)")
}

// workerFlags are what a worker needs: the model, the actions.
type workerFlags struct {
	actionsFile   string
	delegateAllow string
	llm           llmFlags
}

func (f *workerFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.actionsFile, "actions-file", "", "server actions: a JSON object from action names to HTTP endpoints")
	cmd.Flags().StringVar(&f.delegateAllow, "delegate-allow", os.Getenv("VIBE_DELEGATE_ALLOW"), "hosts delegates may be fetched from over http(s), comma-separated (default $VIBE_DELEGATE_ALLOW)")
	f.llm.add(cmd)
}

func (f *workerFlags) actions() (*process.Actions, error) {
	acts := &process.Actions{}
	if f.actionsFile == "" {
		return acts, nil
	}
	list, err := process.LoadActions(f.actionsFile)
	if err != nil {
		return nil, err
	}
	for _, a := range list {
		if err := acts.Register(a); err != nil {
			return nil, err
		}
	}
	return acts, nil
}

// apiAddrFile, in the data directory, holds the address of the `vibe serve`
// that has it, so that other commands talk to that server.
const apiAddrFile = "api.addr"

// runningServer returns a client for the vibe serve that has the data
// directory, if one does.
func (f *engineFlags) runningServer() (*api.Client, bool) {
	if f.temporal != "" {
		return nil, false
	}
	b, err := os.ReadFile(filepath.Join(f.data, apiAddrFile))
	if err != nil {
		return nil, false
	}
	if _, ok := engine.RunningAddr(f.data); !ok {
		return nil, false // left by a server that died
	}
	return &api.Client{BaseURL: "http://" + strings.TrimSpace(string(b)), Token: f.token}, true
}

// local is an engine and a worker started by this command.
type local struct {
	eng    *engine.Engine
	worker worker.Worker
	client *process.Client
}

func (l *local) Close() {
	if l.worker != nil {
		l.worker.Stop()
	}
	if l.eng != nil {
		l.eng.Close()
	}
}

// startLocal starts the engine and a worker on it: with wf set, a full
// worker (model calls, actions); without, one that only replays workflows
// to answer queries and runs nothing.
func startLocal(ctx context.Context, io stdio, ef *engineFlags, wf *workerFlags, reg *registry.Registry, logger *slog.Logger) (*local, error) {
	eng, err := engine.Start(ctx, engine.Options{DataDir: ef.data, HostPort: ef.temporal, Namespace: ef.namespace, Logger: logger})
	if err != nil {
		if addr, ok := engine.RunningAddr(ef.data); ok && ef.temporal == "" {
			return nil, fmt.Errorf("%w\n(another vibe process has the data directory; its engine is at %s: run `vibe serve` once and the other commands use it, or give --data another directory)", err, addr)
		}
		return nil, err
	}
	l := &local{eng: eng, client: &process.Client{Temporal: eng.Client(), Registry: reg}}
	if wf == nil {
		w := worker.New(eng.Client(), process.TaskQueue, worker.Options{})
		process.RegisterWorkflows(w, nil)
		if err := w.Start(); err != nil {
			l.Close()
			return nil, fmt.Errorf("start the worker: %w", err)
		}
		l.worker = w
		return l, nil
	}
	acts, err := wf.actions()
	if err != nil {
		l.Close()
		return nil, err
	}
	acti := &process.Activities{Actions: acts, Logger: logger}
	if wf.llm.spec != "" {
		// Without a model a worker still runs actions and waits for people;
		// an LLM chunk fails with a message that says to give --llm.
		p, err := wf.llm.provider(io)
		if err != nil {
			l.Close()
			return nil, err
		}
		acti.Provider = p
	}
	l.client.Actions = acts.Names()
	w := worker.New(eng.Client(), process.TaskQueue, worker.Options{})
	process.Register(w, acti)
	vessel.Register(w, acts, &vessel.Activities{Actions: acts.Names(),
		Loader: &vessel.Loader{Registry: reg, Allow: splitList(wf.delegateAllow)}})
	if err := w.Start(); err != nil {
		l.Close()
		return nil, fmt.Errorf("start the worker: %w", err)
	}
	l.worker = w
	return l, nil
}

// serveAPI serves the API on addr until ctx ends.
func serveAPI(ctx context.Context, addr string, h http.Handler, ready func(net.Addr)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	ready(ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		return nil
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	}
}

// loopback reports whether addr listens on loopback only.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// parseJSONArg reads a JSON argument: inline JSON, or @FILE.
func parseJSONArg(what, s string) (jsonv.Value, error) {
	file := what
	data := []byte(s)
	if strings.HasPrefix(s, "@") {
		file = s[1:]
		b, err := os.ReadFile(file)
		if err != nil {
			return jsonv.Value{}, fmt.Errorf("%s: %w", what, err)
		}
		data = b
	}
	return schema.Parse(file, data)
}

func jsonMarshalIndent(v any) ([]byte, error) { return json.MarshalIndent(v, "", "  ") }
