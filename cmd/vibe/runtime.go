package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/worker"

	"github.com/augceo/vibe/api"
	"github.com/augceo/vibe/engine"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/schema"
	"github.com/augceo/vibe/server"
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

// runningServer returns a client for the vibe serve that has the data
// directory, if one does.
func (f *engineFlags) runningServer() (*api.Client, bool) {
	if f.temporal != "" {
		return nil, false
	}
	addr, ok := server.RunningAPI(f.data)
	if !ok {
		return nil, false
	}
	return &api.Client{BaseURL: "http://" + addr, Token: f.token}, true
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
	opts := server.WorkerOptions{Logger: logger, QueryOnly: wf == nil}
	if wf != nil {
		if opts.Actions, err = wf.actions(); err != nil {
			l.Close()
			return nil, err
		}
		if wf.llm.spec != "" {
			// Without a model a worker still runs actions and waits for
			// people; an LLM chunk fails saying so.
			if opts.Provider, err = wf.llm.provider(io); err != nil {
				l.Close()
				return nil, err
			}
		}
		opts.Loader = &vessel.Loader{Registry: reg, Allow: splitList(wf.delegateAllow)}
		l.client.Actions = opts.Actions.Names()
	}
	if l.worker, err = server.StartWorker(eng.Client(), opts); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
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
