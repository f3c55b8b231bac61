package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/augceo/vibe"
	"github.com/augceo/vibe/api"
	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/console"
	"github.com/augceo/vibe/engine"
	"github.com/augceo/vibe/internal/temporalui"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/replay"
	"github.com/augceo/vibe/replay/record"
)

func newServeCmd(io stdio) *cobra.Command {
	var (
		ef        engineFlags
		wf        workerFlags
		bounds    delegateBounds
		regDir    string
		addr      string
		uiListen  string
		processes []string
		// The HTTP server's own certificate and key: not --tls-cert and
		// --tls-key, which are the client certificate that reaches a
		// Temporal cluster.
		httpsCert, httpsKey string
		pf                  pricesFlag
	)
	cmd := &cobra.Command{
		Use:   "serve --registry DIR [--addr 127.0.0.1:8080] [--token T] [--https-cert F --https-key F] [--data DIR] [--actions-file F] [--llm …]",
		Short: "Run the engine, a worker and the HTTP API",
		Long: `Serve runs everything a process needs in one program: the embedded Temporal
engine persisted to --data (or a client to --temporal HOST:PORT), a worker with
the model and the server actions, and the HTTP API on --addr:

  POST /v1/processes                 start a process: {"process": URI or schema, or
                                     "pipeline"; "name", "prompt", "input", "first"}; 201 {"id"}
  GET  /v1/processes?limit=N&cursor=C  a page of processes, newest first (limit 1-1000,
                                     default 100): {"processes": [...], "next": C or null}
  GET  /v1/processes/{id}            a process: status, what it waits for, state, usage
  POST /v1/processes/{id}/answer     a person's answer (422 with the errors when it does
                                     not fit, 409 when the process waits for none)
  POST /v1/processes/{id}/cancel     cancel a process: its workflow stops, and it ends failed
  POST /v1/requests                  a Vessel request: {"vessel": URI or Vessel, "prompt",
                                     "context": [messages], "decision"}; 201 {"id"}
  GET  /v1/requests?limit=N&cursor=C  a page of requests, newest first: {"requests": [...],
                                     "next": C or null}
  GET  /v1/requests/{id}             a request: status, decision, the calls finished so far
                                     (results, errors, runs), each instance's state, usage
  POST /v1/plans                     a plan: {"vessel", "context"} whose context holds a
                                     plan message; 422 with every problem before it runs
  POST /v1/batches?process=URI&size=K&concurrency=C&id=ID
                                     a batch: JSONL lines (application/x-ndjson), each
                                     {"prompt", "input"} or a string; or JSON {"process",
                                     "pipeline", "size", "concurrency", "id", "items": [...]};
                                     spooled to DATA/batches, then 202 {"id"} (200 when the
                                     id, given or derived from the input, is known)
  GET  /v1/batches?limit=N&cursor=C  a page of batches, newest first
  GET  /v1/batches/{id}              a batch: items, done, failed, waiting, usage, requests
  GET  /v1/batches/{id}/results?after=N  its result lines in input order, as they come
                                     (application/x-ndjson): {"line", "id", "status",
                                     "output" or "error"}
  /mcp                               the processes as MCP tools, over streamable HTTP (see
                                     vibe mcp); its streams outlive the timeouts below
  /                                  the console, for a browser: the processes (live), each
                                     process's picture, model calls, state and error, the
                                     inbox of approvals, the batches, the Vessel requests

With the embedded engine, Temporal's own Web UI (event histories, stack traces,
retries) is served on --ui-listen (127.0.0.1:8233; "" for none), a loopback
address only. With --token it takes the same sign-in as the console: the bearer
token, or the console's session cookie (sign in at the console first, on the
same host name); anything else is refused with 401. The console links every
process to it.

A Vessel request's toolset is built with this server's registry, actions
(--actions-file) and delegate allow-list (--delegate-allow); --delegate-depth
and --delegate-fanout bound its delegation (a request may ask for less).

Every error is JSON: {"error", "path", "details": [{"file", "path", "message"}]}.
POST bodies are JSON (Content-Type: application/json, else 415) of at most
2 MiB, the engine's limit (else 413); a "first" value that breaks the first
chunk's schema gets 422 with each path, and nothing starts; so do a Vessel,
context, plan or decision with problems, each named by the member it came in
("vessel", "context", "decision") and its path there. A request must arrive
within a minute (its header within 10 s); an idle connection closes after two
minutes.

While it runs, vibe run, answer, show, ps, vessel and plan given the same
--data use it.

SIGTERM (or Ctrl-C) stops it: it takes no more requests or work, and the
actions and model calls in flight finish, for up to --drain (30s), before it
exits; stopped by SIGTERM with nothing cut short, it exits 0. What was still
in flight at the bound is cancelled and runs again, under the same
idempotency key, when it next starts.
Off loopback every request needs a token (--token or $VIBE_TOKEN) of at least
32 visible ASCII characters (no space), at least 8 of them different, and not
one shorter string repeated: make one with openssl rand -hex 32. Without one
serve refuses to listen off loopback, and answers only requests addressed to
localhost or a loopback IP that come from no other web page's origin (403), so
a web page cannot reach it through your browser. In a browser, the console's
sign-in page takes the token once and keeps a session cookie (HttpOnly,
SameSite=Strict; Secure over HTTPS) that opens the console, not the API;
signing out ends it on the server, and so does a restart. A client (an IP
address, an IPv6 /64) that gives five wrong tokens, at sign-in or in the
bearer header, is refused (429, Retry-After) until it has a try again, one
every two seconds.

--https-cert and --https-key serve the API and the console over HTTPS (TLS
1.2 at least) with that certificate (PEM, the chain from the server's own)
and key; off loopback without them serve warns that the token and the
session cookie cross the network in cleartext. (--tls-cert and --tls-key are
another matter: the client certificate that reaches a --temporal cluster.)`,
		Example: `  vibe serve --registry examples/schedule-meeting/registry --llm openai:gpt-4o-mini
  vibe serve --registry DIR --addr 0.0.0.0:8080 --token "$(openssl rand -hex 32)" --https-cert cert.pem --https-key key.pem`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			offLoopback := !vibe.IsLoopback(addr)
			if offLoopback && ef.token == "" {
				return usageError{fmt.Errorf("--addr %s is not on loopback: give a --token (or set VIBE_TOKEN) so that every request must carry it; make one with: openssl rand -hex 32", addr)}
			}
			if why := weakToken(ef.token); offLoopback && why != "" {
				return usageError{fmt.Errorf("--addr %s is not on loopback, and the token (--token or $VIBE_TOKEN) is too weak to guard it: %s; a token must be at least %d visible ASCII characters (no space), at least %d of them different, and not one shorter string repeated: make one with: openssl rand -hex 32", addr, why, minTokenLen, minTokenChars)}
			}
			tlsConfig, err := httpsFlags(httpsCert, httpsKey)
			if err != nil {
				return err
			}
			prices, err := pf.load()
			if err != nil {
				return err
			}
			if err := checkWait("drain", wf.drain); err != nil {
				return err
			}
			if uiListen != "" && !vibe.IsLoopback(uiListen) {
				return usageError{fmt.Errorf("--ui-listen %s is not on loopback: Temporal's UI answers only on this machine: it lists every workflow and can cancel and terminate them", uiListen)}
			}
			reg, err := openRegistry(regDir)
			if err != nil {
				return err
			}
			// The addresses are taken before the engine starts: one in use
			// is told at once, with the flag that picks another.
			ln, err := listen("--addr", addr)
			if err != nil {
				return err
			}
			defer ln.Close() // vibe.Serve closes it too; this when it is not reached
			var uiLn net.Listener
			uiExplicit := cmd.Flags().Changed("ui-listen")
			if uiListen != "" && (ef.temporal == "" || uiExplicit) {
				if uiLn, err = listen("--ui-listen", uiListen); err != nil {
					if uiExplicit {
						return err
					}
					fmt.Fprintf(io.err, "vibe: Temporal's UI is not served: %v\n", err)
				} else {
					defer uiLn.Close()
				}
			}
			logger := serverLogger()
			ctx := cmd.Context()
			ef.serve = true
			l, err := startLocal(ctx, io, &ef, &wf, reg, logger)
			if err != nil {
				return err
			}
			defer l.Close()
			dataDir := ef.data
			if ef.temporal != "" {
				dataDir = "" // other commands find a cluster by its flag
			}
			l.Requests.MaxDepth, l.Requests.MaxFanOut = bounds.depth, bounds.fanOut
			mcpSrv, err := newMCPServer(ctx, l.Processes, reg, processes, logger)
			if err != nil {
				return err
			}
			context.AfterFunc(ctx, mcpSrv.Close) // calls that follow processes stop; the processes go on
			// Batches given over the API are spooled in the data directory
			// and resumed at the next start.
			if wf.llm.spec != "" {
				l.Batches.Calibrations = calibrationStore(ef.data, &wf.llm) // vibe calibrate's choices
			}
			batches := &batch.Runner{Client: l.Batches, Dir: filepath.Join(ef.data, "batches"), Logger: logger}
			if err := batches.Resume(ctx); err != nil {
				logger.Error("resume batches", "err", err)
			}
			var ui string
			if uiLn != nil {
				ui = "http://" + uiLn.Addr().String()
			}
			web := console.Handler(console.Options{Token: ef.token, Processes: l.Processes, Registry: reg, Requests: l.Requests, Batches: consoleBatches{batches.Client}, Replays: consoleReplays(filepath.Join(ef.data, "replays")), TemporalUI: ui,
				Namespace: l.Engine.Namespace(), Logger: logger, Stop: ctx.Done(), Prices: prices})
			if uiLn != nil {
				// The UI takes the server's sign-in: the token, or the
				// console's session.
				session := web.(interface{ Session(*http.Request) bool }).Session
				scheme := "http"
				if tlsConfig != nil {
					scheme = "https"
				}
				signIn := fmt.Sprintf("%s://%s/signin", scheme, ln.Addr())
				if err := serveTemporalUI(ctx, &ef, l.Engine, uiLn, temporalui.Options{Token: ef.token, Session: session, SignIn: signIn}, logger); err != nil {
					return err
				}
			}
			replays := &replay.Service{Records: &record.Store{Dir: filepath.Join(ef.data, "replay")}, Processes: l.Processes, Batches: l.Batches,
				Reports: filepath.Join(ef.data, "replays")}
			if wf.llm.spec != "" {
				if replays.Provider, err = wf.llm.provider(io); err != nil {
					return err
				}
			}
			h := api.Handler(l.Processes, api.Options{Token: ef.token, Logger: logger, Requests: l.Requests, Batches: batches, Replays: replays,
				Mounts: map[string]http.Handler{"/mcp": mcpSrv.Handler(), "/": web}})
			err = vibe.Serve(ctx, h, vibe.ServeOptions{Listener: ln, DataDir: dataDir, TLS: tlsConfig, ModelQueue: l.Processes.ModelQueue, Actions: l.Processes.Actions, Ready: func(a net.Addr) {
				mode := "embedded engine in " + ef.data
				if ef.temporal != "" {
					mode = "Temporal at " + ef.temporal
				}
				scheme := "http"
				if tlsConfig != nil {
					scheme = "https"
				}
				fmt.Fprintf(io.err, "vibe: serving %s://%s (%s, namespace %s, temporal frontend %s)\n", scheme, a, mode, l.Engine.Namespace(), l.Engine.HostPort())
				fmt.Fprintf(io.err, "vibe: the console is at %s://%s/\n", scheme, a)
				if offLoopback && tlsConfig == nil {
					fmt.Fprintf(io.err, "vibe: warning: serving off loopback without TLS: the token and the console's session cookie cross the network in cleartext; give --https-cert and --https-key (or put a TLS proxy in front)\n")
				}
				if ui != "" {
					fmt.Fprintf(io.err, "vibe: Temporal's UI is at %s\n", ui)
				}
				if l.Engine.Embedded() {
					cert, _, _ := engine.ClientCertFiles(ef.data)
					fmt.Fprintf(io.err, "vibe: the frontend takes mutual TLS only; a client presents the certificates in %s (vibe worker --temporal %s --tls-dir %s)\n", filepath.Dir(cert), l.Engine.HostPort(), filepath.Dir(cert))
				}
			}})
			return drainWorker(ctx, io, l, wf.drain, err)
		},
	}
	ef.add(cmd)
	pf.add(cmd)
	wf.add(cmd)
	wf.addDrain(cmd)
	bounds.add(cmd)
	registryFlag(cmd, &regDir)
	processesFlag(cmd, &processes, &regDir)
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8080", "address of the HTTP API and the console")
	cmd.Flags().StringVar(&httpsCert, "https-cert", os.Getenv("VIBE_HTTPS_CERT"), "serve the API and the console over HTTPS with this certificate (`FILE`, PEM: the server's, then any intermediate ones), with --https-key (default $VIBE_HTTPS_CERT)")
	cmd.Flags().StringVar(&httpsKey, "https-key", os.Getenv("VIBE_HTTPS_KEY"), "the private key (`FILE`, PEM) of --https-cert (default $VIBE_HTTPS_KEY)")
	cmd.Flags().StringVar(&uiListen, "ui-listen", "127.0.0.1:8233", "serve Temporal's Web UI on `HOST:PORT`, a loopback address; \"\" for none (with --temporal only when given)")
	cmd.Flags().StringVar(&ef.listen, "temporal-listen", "", "let the embedded engine's Temporal frontend listen on `HOST:PORT` (an IP; 0.0.0.0 for every interface), so that vibe worker --temporal HOST:PORT --tls-dir … on other machines share the work; clients need the certificates in DATA/tls")
	return cmd
}

// A token that guards a server off loopback is at least minTokenLen
// visible ASCII characters, at least minTokenChars of them different.
const (
	minTokenLen   = 32
	minTokenChars = 8
)

// weakToken says why token is too weak to guard a server off loopback, or
// "" when it is not. It cannot measure randomness, only refuse what a
// person types or a placeholder holds: a token shorter than minTokenLen
// bytes, with a space, a control character or a byte past ASCII, of fewer
// than minTokenChars different characters, or one shorter string
// repeated (a part of it too: abcdefghabcdefgha…). 32 random hex digits
// (128 bits) pass; openssl rand -hex 32 gives 64.
func weakToken(token string) string {
	if len(token) < minTokenLen {
		return fmt.Sprintf("its length is %d", len(token))
	}
	seen := map[byte]bool{}
	for i := range len(token) {
		c := token[i]
		if c >= 0x80 {
			return fmt.Sprintf("it holds a character past ASCII at byte %d", i)
		}
		if c <= ' ' || c == 0x7f {
			return fmt.Sprintf("it holds %q at byte %d", c, i)
		}
		seen[c] = true
	}
	if len(seen) < minTokenChars {
		return fmt.Sprintf("it has only %d different characters", len(seen))
	}
	for p := 1; p <= len(token)/2; p++ {
		if token[p:] == token[:len(token)-p] { // a period of p
			return fmt.Sprintf("it is %q repeated", token[:p])
		}
	}
	return ""
}

// httpsFlags is the TLS configuration --https-cert and --https-key give,
// nil for none.
func httpsFlags(cert, key string) (*tls.Config, error) {
	switch {
	case cert == "" && key == "":
		return nil, nil
	case key == "":
		return nil, usageError{errors.New("--https-cert needs --https-key, the certificate's private key")}
	case cert == "":
		return nil, usageError{errors.New("--https-key needs --https-cert, the certificate it is the key of")}
	}
	cfg, err := vibe.ServerTLS(cert, key)
	if err != nil {
		return nil, usageError{fmt.Errorf("--https-cert/--https-key: %w", err)}
	}
	return cfg, nil
}

func newWorkerCmd(io stdio) *cobra.Command {
	var (
		ef     engineFlags
		wf     workerFlags
		regDir string
	)
	cmd := &cobra.Command{
		Use:   "worker --temporal HOST:PORT [--namespace NS] [--registry DIR] [--actions-file F] [--llm …]",
		Short: "Run only a worker, against a Temporal cluster",
		Long: `Worker runs Vibe's workflows and activities (model calls, server actions) against
a Temporal cluster, and nothing else: start as many as the work needs, on as
many machines. Without --temporal it joins the embedded engine of the vibe serve
that has --data. Give it the registry the other workers have (--registry): a
Vessel's delegate named by a registry URI (aug:requests/…) is loaded by
whichever worker runs the call. SIGTERM (or Ctrl-C) stops it as it stops vibe
serve: no more work is taken, and what is in flight finishes within --drain.`,
		Example: `  vibe worker --temporal temporal.example.com:7233 --tls-dir ./tls --registry DIR --llm openai:gpt-4o-mini`,
		Args:    exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkWait("drain", wf.drain); err != nil {
				return err
			}
			reg, err := openRegistry(regDir)
			if err != nil {
				return err
			}
			eng, err := ef.attach(cmd.Context(), serverLogger())
			if errors.Is(err, engine.ErrNotRunning) {
				return usageError{fmt.Errorf("no engine to work for: give --temporal HOST:PORT, or run vibe serve with --data %s first", ef.data)}
			}
			if err != nil {
				return err
			}
			l, err := startWorker(cmd.Context(), io, eng, &wf, reg, serverLogger())
			if err != nil {
				eng.Close()
				return err
			}
			defer l.Close()
			fmt.Fprintf(io.err, "vibe: worker on %s, namespace %s, task queue vibe\n", l.Engine.HostPort(), l.Engine.Namespace())
			<-cmd.Context().Done()
			return drainWorker(cmd.Context(), io, l, wf.drain, nil)
		},
	}
	ef.add(cmd)
	wf.add(cmd)
	wf.addDrain(cmd)
	registryFlag(cmd, &regDir)
	return cmd
}

// serveTemporalUI serves Temporal's Web UI for eng on ln until ctx ends,
// behind opts' sign-in. (serve listens before the engine starts: a taken
// address is an error when the person chose it, and otherwise only a
// warning — a second vibe serve on the machine still runs, without the UI.)
func serveTemporalUI(ctx context.Context, ef *engineFlags, eng *engine.Engine, ln net.Listener, opts temporalui.Options, logger *slog.Logger) error {
	cert, key, ca := ef.tlsFiles()
	opts.Frontend, opts.Namespace, opts.CertFile, opts.KeyFile, opts.CAFile = eng.HostPort(), eng.Namespace(), cert, key, ca
	h, err := temporalui.Handler(opts)
	if err != nil {
		return err
	}
	go func() {
		if err := vibe.Serve(ctx, h, vibe.ServeOptions{Listener: ln}); err != nil {
			logger.Error("temporal ui", "err", err)
		}
	}()
	return nil
}

// listen listens on addr, which flag gave. An address in use is an error
// that names the flag that picks another.
func listen(flag, addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return nil, fmt.Errorf("%s %s: the address is in use (by another vibe serve, or another program): give %s HOST:PORT to pick another", flag, addr, flag)
	case err != nil:
		return nil, fmt.Errorf("%s %s: %w", flag, addr, err)
	}
	return ln, nil
}

// serverLogger logs Vibe's own records on stderr as text; $VIBE_LOG=debug
// shows more, $VIBE_LOG=warn less.
func serverLogger() *slog.Logger {
	level := slog.LevelInfo
	switch os.Getenv("VIBE_LOG") {
	case "debug":
		level = slog.LevelDebug
	case "warn":
		level = slog.LevelWarn
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// consoleReplays reads the replays' reports kept in a directory
// (replay.SaveReport) for the console.
type consoleReplays string

func (d consoleReplays) ReplayReport(ctx context.Context, id string) (*replay.Report, error) {
	return replay.LoadReport(string(d), id)
}

// consoleBatches is what the console reads of batches, from a batch
// client.
type consoleBatches struct{ c *batch.Client }

func (b consoleBatches) ListBatches(ctx context.Context) ([]batch.Status, error) {
	list, _, err := b.c.List(ctx, process.ListOptions{})
	return list, err
}

func (b consoleBatches) Batch(ctx context.Context, id string) (batch.Status, error) {
	st, err := b.c.Status(ctx, id)
	if err != nil {
		return batch.Status{}, err
	}
	return *st, nil
}

// WaitingItems are the ids of batch id's items that wait for a person
// (console.WaitingItems): the console's inbox lists them.
func (b consoleBatches) WaitingItems(ctx context.Context, id string) ([]string, error) {
	return b.c.Waiting(ctx, id)
}

// errEnough stops a read of results once it has what it needs.
var errEnough = errors.New("enough")

// Results reads the results of the groups that have finished, the failed
// ones only with failedOnly, at most limit.
func (b consoleBatches) Results(ctx context.Context, id string, failedOnly bool, limit int) ([]batch.Result, error) {
	var out []batch.Result
	err := b.c.Results(ctx, id, batch.ResultsOptions{Ready: true}, func(r batch.Result) error {
		if failedOnly && r.Status != batch.StatusFailed {
			return nil
		}
		out = append(out, r)
		if len(out) >= limit {
			return errEnough
		}
		return nil
	})
	if errors.Is(err, errEnough) {
		err = nil
	}
	return out, err
}
