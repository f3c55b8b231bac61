package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/interceptor"

	"github.com/augceo/vibe"
	"github.com/augceo/vibe/api"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/engine"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/request"
	"github.com/augceo/vibe/schema"
	"github.com/augceo/vibe/telemetry"
	"github.com/augceo/vibe/vessel"
)

// processes is what the run, answer, show and ps commands need: the local
// engine (process.Client) or a running server (api.Client).
type processes interface {
	api.Processes
	Watch(ctx context.Context, id string, opts process.WatchOptions) iter.Seq2[*process.Info, error]
}

// requests is what the vessel command needs of Vessel requests: the local
// engine (request.Client) or a running server (api.RequestClient).
type requests interface {
	api.Requests
	Watch(ctx context.Context, id string, opts request.WatchOptions) iter.Seq2[*request.Info, error]
}

// engineFlags choose the engine: the embedded one on --data, or a cluster.
type engineFlags struct {
	data, temporal, namespace string
	token                     string
	// TLS of a cluster: a client certificate, its key, the CA (files), or a
	// directory holding all three as an embedded engine writes them.
	tlsCert, tlsKey, tlsCA, tlsDir, tlsServerName string
	// listen is serve's --temporal-listen: where the embedded engine's
	// frontend listens, for workers on other machines.
	listen string
	// serve is set by vibe serve, whose embedded engine outlives one
	// command and so runs Temporal's system workers too.
	serve bool
}

func (f *engineFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.data, "data", cmp.Or(os.Getenv("VIBE_DATA"), engine.DefaultDataDir), "data directory of the embedded engine (SQLite file, logs, certificates); $VIBE_DATA gives the default")
	cmd.Flags().StringVar(&f.temporal, "temporal", "", "use the Temporal cluster at `HOST:PORT` instead of the embedded engine")
	cmd.Flags().StringVar(&f.namespace, "namespace", engine.DefaultNamespace, "Temporal namespace")
	cmd.Flags().StringVar(&f.token, "token", os.Getenv("VIBE_TOKEN"), "API token (default $VIBE_TOKEN)")
	cmd.Flags().StringVar(&f.tlsDir, "tls-dir", os.Getenv("VIBE_TLS_DIR"), "with --temporal: a copy of a vibe serve's DATA/tls directory (client.pem, client-key.pem, ca.pem) to present (default $VIBE_TLS_DIR)")
	cmd.Flags().StringVar(&f.tlsCert, "tls-cert", os.Getenv("VIBE_TLS_CERT"), "with --temporal: the client certificate (PEM) for mutual TLS (default $VIBE_TLS_CERT)")
	cmd.Flags().StringVar(&f.tlsKey, "tls-key", os.Getenv("VIBE_TLS_KEY"), "with --temporal: the client certificate's private key (default $VIBE_TLS_KEY)")
	cmd.Flags().StringVar(&f.tlsCA, "tls-ca", os.Getenv("VIBE_TLS_CA"), "with --temporal: the CA the server's certificate chains to; empty: the system's (default $VIBE_TLS_CA)")
	cmd.Flags().StringVar(&f.tlsServerName, "tls-server-name", "", "with --temporal: the name to check the server's certificate against, when it is not the dialled host")
	beforeRun(cmd, func() error {
		if strings.TrimSpace(f.namespace) == "" {
			return usageError{errors.New("--namespace is empty: give a Temporal namespace (without the flag: " + engine.DefaultNamespace + ")")}
		}
		return nil
	})
}

// options are the engine options the flags give.
func (f *engineFlags) options(logger *slog.Logger) (engine.Options, error) {
	opts := engine.Options{DataDir: f.data, Namespace: f.namespace, Logger: logger, SearchAttributes: durable.SearchAttributes}
	// Temporal's tracing interceptor, always: it records to the global
	// tracer provider, a no-op until telemetry.Setup installs one.
	tracing, err := telemetry.Interceptor()
	if err != nil {
		return opts, err
	}
	opts.ClientOptions.Interceptors = []interceptor.ClientInterceptor{tracing}
	if f.temporal == "" {
		if f.listen != "" {
			host, port, err := net.SplitHostPort(f.listen)
			n, perr := strconv.Atoi(port)
			if err != nil || perr != nil || n < 0 || n > 65535 {
				return opts, usageError{fmt.Errorf("--temporal-listen %q: want HOST:PORT, such as 0.0.0.0:7233", f.listen)}
			}
			opts.ListenHost, opts.FrontendPort = host, n
		}
		return opts, nil
	}
	opts.DataDir, opts.HostPort = "", f.temporal
	cert, key, ca := f.tlsFiles()
	if cert != "" || key != "" || ca != "" || f.tlsServerName != "" {
		cfg, err := engine.LoadClientTLS(cert, key, ca)
		if err != nil {
			return opts, usageError{err}
		}
		if f.tlsServerName != "" {
			cfg.ServerName = f.tlsServerName
		}
		opts.TLS = cfg
	}
	return opts, nil
}

// tlsFiles are the client certificate, its key and the CA that reach the
// engine: the embedded engine's own in the data directory, or a cluster's
// from --tls-cert, --tls-key, --tls-ca and --tls-dir (a copy of a data
// directory's tls directory: the same file names).
func (f *engineFlags) tlsFiles() (cert, key, ca string) {
	if f.temporal == "" {
		return engine.ClientCertFiles(f.data)
	}
	cert, key, ca = f.tlsCert, f.tlsKey, f.tlsCA
	if f.tlsDir != "" {
		c, k, a := engine.ClientCertFiles(f.data)
		in := func(p string) string { return filepath.Join(f.tlsDir, filepath.Base(p)) }
		cert, key, ca = cmp.Or(cert, in(c)), cmp.Or(key, in(k)), cmp.Or(ca, in(a))
	}
	return cert, key, ca
}

// attach connects to the engine the flags name without starting one: the
// cluster of --temporal, or the embedded engine that another vibe process
// runs on --data (engine.ErrNotRunning when none does).
func (f *engineFlags) attach(ctx context.Context, logger *slog.Logger) (*engine.Engine, error) {
	opts, err := f.options(logger)
	if err != nil {
		return nil, err
	}
	if f.temporal != "" {
		return engine.Start(ctx, opts)
	}
	return engine.Attach(ctx, engine.Options{DataDir: opts.DataDir, Namespace: opts.Namespace, Logger: logger, ClientOptions: opts.ClientOptions})
}

// workerFlags are what a worker needs: the model, the actions.
type workerFlags struct {
	actionsFile   string
	delegateAllow string
	otlp          string
	llm           llmFlags
	// delegateRoots are the directories delegate files are read from
	// besides the registry's: the Vessel's, for the commands that read one.
	delegateRoots []string
	// drain is how long the worker's actions and model calls in flight
	// may finish once the command stops (vibe serve's and vibe worker's
	// --drain); 0 cancels them at once.
	drain time.Duration
	// drainActions says drain bounds the action calls alone: a command
	// that ends once its work is done (addExitDrain) cancels its model
	// calls at once.
	drainActions bool
}

// addDrain adds --drain, for a command that runs until it is stopped.
func (f *workerFlags) addDrain(cmd *cobra.Command) {
	cmd.Flags().DurationVar(&f.drain, "drain", defaultDrain, "on SIGTERM or Ctrl-C, take no more work and let the actions and model calls in flight finish for up to `D` before cancelling them (0: cancel them at once)")
}

// addExitDrain adds --drain, for a command that ends once its work is
// done (vibe run, answer, batch): when it exits, with its fire-and-forget
// actions still pending past --wait-actions or stopped by Ctrl-C, the
// action calls in flight finish first, within the bound, so that no
// endpoint sees a call cut and made again.
func (f *workerFlags) addExitDrain(cmd *cobra.Command) {
	f.drainActions = true
	cmd.Flags().DurationVar(&f.drain, "drain", defaultDrain, "when it exits, let the action calls in flight finish for up to `D` before cancelling them; a cancelled call is made again, under the same idempotency key, by the next command that runs a worker (0: cancel them at once)")
}

// closeDraining closes l, the runtime of a command that ends (see
// addExitDrain): its worker takes no more work and the action calls in
// flight have bound to finish. It says on stderr when it waited for them
// (a second or more), or cancelled them.
func closeDraining(io stdio, l *vibe.Runtime, bound time.Duration) {
	switch took := l.StopWorker(); {
	case bound > 0 && took >= bound:
		fmt.Fprintf(io.err, "vibe: the action calls still in flight after %s (--drain) were cancelled: each is made again, under the same idempotency key, when a command next runs a worker on this engine\n", bound)
	case took >= time.Second:
		fmt.Fprintf(io.err, "vibe: waited %s for the action calls in flight to finish before exiting (--drain)\n", took.Round(100*time.Millisecond))
	}
	l.Close()
}

// defaultDrain is how long a stopped vibe serve or vibe worker lets the
// work in flight finish: an action's call, most model calls.
const defaultDrain = 30 * time.Second

// drainedError is the error of a vibe serve or vibe worker that a signal
// stopped and whose work in flight all finished within --drain: stopped
// by SIGTERM, it exits 0, as a service manager expects of a clean stop.
type drainedError struct{ msg string }

func (e *drainedError) Error() string { return e.msg }

// drainWorker stops l's worker once ctx has ended (err is what the command
// ended with): it takes no more work, and the actions and model calls in
// flight have bound to finish while the engine is told how they end. Work
// still in flight past it is cancelled, and runs again, under the same
// idempotency key, on the next worker.
func drainWorker(ctx context.Context, io stdio, l *vibe.Runtime, bound time.Duration, err error) error {
	if ctx.Err() == nil || err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	fmt.Fprintf(io.err, "vibe: stopping: no more work is taken; the actions and model calls in flight have up to %s (--drain) to finish\n", bound)
	if took := l.StopWorker(); bound == 0 || took >= bound {
		return fmt.Errorf("stopped after %s (--drain): the actions and model calls still in flight were cancelled; they run again, under the same idempotency keys, when a worker next runs", took.Round(time.Millisecond))
	}
	return &drainedError{"stopped: no work was in flight, or it finished"}
}

// loader loads delegates from reg, the delegate roots and the allowed hosts.
func (f *workerFlags) loader(reg *registry.Registry) *vessel.Loader {
	return &vessel.Loader{Registry: reg, Allow: splitList(f.delegateAllow), Roots: f.delegateRoots}
}

func (f *workerFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.actionsFile, "actions-file", "", "server actions: a JSON object from action names to HTTP endpoints")
	cmd.Flags().StringVar(&f.delegateAllow, "delegate-allow", os.Getenv("VIBE_DELEGATE_ALLOW"), "hosts delegates may be fetched from over http(s), comma-separated (default $VIBE_DELEGATE_ALLOW)")
	cmd.Flags().StringVar(&f.otlp, "otlp", "", "export traces and metrics over OTLP to the OpenTelemetry collector at `URL`: gRPC (http://localhost:4317, or https://…), or HTTP with OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf (http://localhost:4318); default: the OTEL_EXPORTER_OTLP_* variables")
	f.llm.add(cmd)
}

// modelUnused is the error of --llm given while another vibe process (a
// vibe serve, named by where) has the data directory: its worker runs the
// work with its own model, and --llm would go unused without a word.
func (f *workerFlags) modelUnused(ef *engineFlags, where string) error {
	if f == nil || !f.llm.given() {
		return nil
	}
	return usageError{fmt.Errorf("--llm %s: %s has the data directory %s and runs the work with its own model; drop --llm to use that, or give --data another directory for an engine of this command's own", f.llm.spec, where, ef.data)}
}

// noData reports whether the flags name an embedded engine on a data
// directory that does not exist: nothing has run there, so a command that
// only reads finds nothing, and must not create the directory to say so.
func (f *engineFlags) noData() bool {
	if f.temporal != "" {
		return false
	}
	_, err := os.Stat(f.data)
	return errors.Is(err, fs.ErrNotExist)
}

// runningServer returns a client for the vibe serve that has the data
// directory, if one does.
func (f *engineFlags) runningServer() (*api.Client, bool) {
	if f.temporal != "" {
		return nil, false
	}
	e, ok := vibe.RunningEndpoint(f.data)
	if !ok {
		return nil, false
	}
	// Over HTTPS, the client trusts the certificate the server wrote the
	// pin of, whatever names it holds.
	return &api.Client{BaseURL: e.URL, Token: f.token, HTTP: e.HTTPClient(60 * time.Second)}, true
}

// startLocal starts the engine and a worker on it: with wf set, a full
// worker (model calls, actions); without, one that only replays workflows
// to answer queries and runs nothing.
func startLocal(ctx context.Context, io stdio, ef *engineFlags, wf *workerFlags, reg *registry.Registry, logger *slog.Logger) (*vibe.Runtime, error) {
	eopts, err := ef.options(logger)
	if err != nil {
		return nil, err
	}
	opts, err := wf.options(io, reg, logger)
	if err != nil {
		return nil, err
	}
	// An engine that lives as long as one command needs no scanners or
	// schedules, and stops at once without them (engine.Options).
	eopts.NoSystemWorkers = !ef.serve
	opts.Engine = eopts
	rt, err := vibe.Start(ctx, opts)
	if err == nil && wf != nil {
		pruneReports(rt, logger)
	}
	if err == nil && wf != nil && opts.Provider == nil && !ef.serve {
		// This command's worker is the only one: what needs a model is
		// refused before it starts (a serve's API may be joined by
		// workers that have one).
		rt.Processes.NoModel = true
	}
	if err != nil {
		if addr, ok := engine.RunningAddr(ef.data); ok && ef.temporal == "" {
			return nil, fmt.Errorf("%w\n(another vibe process has the data directory; its engine is at %s: run `vibe serve` once and the other commands use it, or give --data another directory)", err, addr)
		}
		return nil, err
	}
	return rt, nil
}

// startWorker starts a worker on eng: with wf set, a full worker (model
// calls, actions); without, one that only replays workflows to answer
// queries and runs nothing. Its Close closes eng too.
func startWorker(ctx context.Context, io stdio, eng *engine.Engine, wf *workerFlags, reg *registry.Registry, logger *slog.Logger) (*vibe.Runtime, error) {
	opts, err := wf.options(io, reg, logger)
	if err != nil {
		return nil, err
	}
	rt, err := vibe.StartOn(ctx, eng, opts)
	if err == nil && wf != nil {
		pruneReports(rt, logger)
	}
	return rt, err
}

// options are the runtime's options the worker flags give; nil flags give
// a worker that only answers queries.
func (f *workerFlags) options(io stdio, reg *registry.Registry, logger *slog.Logger) (vibe.Options, error) {
	opts := vibe.Options{Registry: reg, Logger: logger, QueryOnly: f == nil}
	if f == nil {
		return opts, nil
	}
	opts.ActionsFile, opts.Loader = f.actionsFile, f.loader(reg)
	if f.drainActions {
		opts.ActionStopTimeout = f.drain
	} else {
		opts.StopTimeout = f.drain
	}
	opts.Telemetry = &telemetry.Options{Endpoint: f.otlp}
	if f.llm.spec != "" {
		// Without a model a worker still runs actions and waits for
		// people; an LLM chunk fails saying so.
		p, err := f.llm.provider(io)
		if err != nil {
			return opts, err
		}
		// With a prices file ($VIBE_PRICES or the default one), each
		// model call's span carries its cost.
		if prices, err := (&pricesFlag{file: os.Getenv("VIBE_PRICES")}).load(); err != nil {
			return opts, err
		} else if prices != nil {
			p = llm.Priced{Provider: p, Prices: prices}
		}
		opts.Provider, opts.Model = p, f.llm.modelID()
	}
	return opts, nil
}

// parseJSONArg reads a JSON argument: inline JSON, or @FILE.
func parseJSONArg(what, s string) (jsonv.Value, error) {
	file := what
	data := []byte(s)
	if strings.HasPrefix(s, "@") {
		file = s[1:]
		return schema.ReadFile(file)
	}
	return schema.Parse(file, data)
}

func jsonMarshalIndent(v any) ([]byte, error) { return json.MarshalIndent(v, "", "  ") }
