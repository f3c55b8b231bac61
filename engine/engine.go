package engine

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/server/temporal"
	"google.golang.org/grpc"

	"github.com/augceo/vibe/internal/diskspace"
)

// Defaults for the zero Options.
const (
	// DefaultDataDir is the data directory of the embedded engine when
	// Options.DataDir is empty, relative to the working directory.
	DefaultDataDir = ".vibe"
	// DefaultNamespace is the Temporal namespace used when Options.Namespace
	// is empty.
	DefaultNamespace = "default"
)

// File names inside the data directory; see the package documentation.
const (
	dbFile   = "temporal.db"
	logFile  = "temporal.log"
	lockFile = "engine.lock"
	addrFile = "engine.addr"
)

const (
	// dialTimeout bounds connecting to an external cluster when ctx has no
	// earlier deadline.
	dialTimeout = 10 * time.Second
	// readyTimeout bounds waiting for the embedded frontend to serve.
	readyTimeout = 30 * time.Second
)

// Options configures Start and Attach. The zero value starts an embedded
// server on ./.vibe with namespace "default" on a free loopback port.
type Options struct {
	// DataDir holds the embedded server's files: temporal.db (SQLite),
	// temporal.log (the server's own logs), engine.lock, engine.addr and
	// the tls directory. It is created if missing. Empty means
	// DefaultDataDir. Unused when HostPort is set; Attach reads it.
	DataDir string

	// Namespace is the Temporal namespace the client uses. Empty means
	// DefaultNamespace. The embedded server registers it on first start; an
	// external cluster must already have it.
	Namespace string

	// HostPort, if set, is the frontend address ("host:port") of an existing
	// Temporal cluster: Start dials it and starts no server. Empty means
	// start the embedded server. To reach the embedded engine another
	// process runs on DataDir, use Attach instead.
	HostPort string

	// TLS, if set, is the TLS configuration of the client to the cluster at
	// HostPort, e.g. from LoadClientTLS: the client certificate copied from
	// a serving machine's DataDir/tls, or a Temporal Cloud namespace's.
	// Nil means plain text, unless ClientOptions.ConnectionOptions.TLS is
	// set. The embedded engine's own client, and Attach, always use the
	// data directory's certificates instead.
	TLS *tls.Config

	// Logger is Vibe's own logger; the SDK client and its workers log here
	// too. Nil means slog.Default(). The embedded server's logs never go
	// here; they go to DataDir/temporal.log.
	Logger *slog.Logger

	// FrontendPort fixes the embedded frontend's port, e.g. 7233 so that
	// the Temporal CLI and UI find it at their default address. Zero means
	// a free port. The other services always use free ports.
	FrontendPort int

	// ListenHost is the IP address the embedded frontend listens on, so
	// that workers on other machines can reach it: "0.0.0.0" or "::" for
	// every interface, or one interface's address. Empty means 127.0.0.1.
	// The other services always listen on 127.0.0.1. Clients need the data
	// directory's client certificate either way (see ClientCertFiles), and
	// the server certificate lists this address (for a wildcard, the host
	// name and the interfaces' addresses) so that they can verify it.
	ListenHost string

	// ServerLogLevel is the level of the embedded server's log file: "debug",
	// "info", "warn" or "error". Empty means "warn", which keeps the file
	// small; "info" shows the server's start-up and shard movements.
	ServerLogLevel string

	// Retention is how long the embedded server keeps closed workflows of a
	// namespace it creates. Zero means 24 hours. It does not change an
	// existing namespace.
	Retention time.Duration

	// SearchAttributes are registered on the namespace at start (those it
	// lacks), so that workflows can set them and visibility queries filter
	// on them; Vibe's are durable.SearchAttributes. On an external cluster
	// a failure to add them is logged, not fatal.
	SearchAttributes []sdktemporal.SearchAttributeKey

	// NoSystemWorkers runs the embedded server without Temporal's worker
	// service: its scanners (clean-up of old task queues and orphaned
	// histories), bulk operations, schedules and namespace deletion. The
	// history service then applies parent-close policies itself. For an
	// engine that lives as long as one command (`vibe batch`, `vibe run`):
	// it starts in half the time and stops at once, where the worker
	// service's long polls hold Temporal's frontend in its drain for a
	// second. A server that stays up (`vibe serve`) keeps them.
	NoSystemWorkers bool

	// ClientOptions are passed to the SDK client, for a data converter,
	// interceptors and the like. HostPort and Namespace are always set by
	// the engine, and ConnectionOptions.TLS by the embedded engine, Attach
	// and a non-nil TLS; a nil Logger is replaced by one writing to Logger.
	ClientOptions client.Options

	// freeSpace reads the free space of DataDir's filesystem; nil means
	// diskspace.Free. Tests set it to simulate a full disk.
	freeSpace diskspace.FreeFunc
}

// ErrNotRunning is returned (wrapped) by Attach when no engine runs on the
// data directory.
var ErrNotRunning = errors.New("no vibe engine is running on the data directory")

// Engine is a running Temporal engine: an SDK client, and in embedded mode
// the server it talks to. Its methods are safe for concurrent use.
type Engine struct {
	client    client.Client
	hostPort  string
	namespace string
	logger    *slog.Logger

	// Embedded mode only; all nil for an external cluster.
	server  temporal.Server
	dataDir string
	lock    *dirLock
	logOut  *logSink
	// spaceDir is the data directory whose free space guards the client's
	// writes (the embedded engine's, or the one Attach attached to), read
	// with freeSpace; "" for a cluster.
	spaceDir  string
	freeSpace diskspace.FreeFunc

	closeOnce sync.Once
	closeErr  error
}

// Start starts the engine: the embedded Temporal server on opts.DataDir, or
// a client to the cluster at opts.HostPort. It returns once the frontend
// serves requests for the namespace. The caller must Close the engine.
//
// A data directory can be used by one engine at a time; Start fails if
// another process (or another Engine in this process) has it. Use Attach to
// connect to that engine instead.
//
// The embedded engine refuses a temporal.db that fails SQLite's
// quick_check (ErrDamagedDB), and its client refuses to start, signal,
// update, cancel or list workflows while the data directory's disk is
// full; see "A full disk, a damaged database" in the package
// documentation.
func Start(ctx context.Context, opts Options) (*Engine, error) {
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	co := opts.ClientOptions
	co.Namespace = opts.Namespace
	if co.Logger == nil {
		co.Logger = sdklog.NewStructuredLogger(opts.Logger)
	}
	if opts.HostPort != "" {
		co.HostPort = opts.HostPort
		if opts.TLS != nil {
			co.ConnectionOptions.TLS = opts.TLS
		}
		return startExternal(ctx, opts, co)
	}
	if opts.DataDir == "" {
		opts.DataDir = DefaultDataDir
	}
	return startEmbedded(ctx, opts, co)
}

// startExternal dials an existing cluster.
func startExternal(ctx context.Context, opts Options, co client.Options) (*Engine, error) {
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	c, err := client.DialContext(dctx, co)
	if err != nil {
		return nil, fmt.Errorf("connect to temporal at %s: %w", opts.HostPort, err)
	}
	_, err = c.WorkflowService().DescribeNamespace(dctx, &workflowservice.DescribeNamespaceRequest{Namespace: opts.Namespace})
	if err != nil {
		c.Close()
		if _, ok := errors.AsType[*serviceerror.NamespaceNotFound](err); ok {
			return nil, fmt.Errorf("temporal at %s has no namespace %q; create it first (temporal operator namespace create --namespace %s)", opts.HostPort, opts.Namespace, opts.Namespace)
		}
		return nil, fmt.Errorf("describe namespace %q at %s: %w", opts.Namespace, opts.HostPort, err)
	}
	// Vibe works without its search attributes (they only serve listing in
	// Temporal's UI), and a shared cluster may not let us add them.
	if err := registerSearchAttributes(dctx, c, opts.Namespace, opts.SearchAttributes); err != nil {
		opts.Logger.Warn("cannot register Vibe's search attributes; processes will not be searchable by them",
			"addr", opts.HostPort, "namespace", opts.Namespace, "err", err)
	}
	return &Engine{client: c, hostPort: opts.HostPort, namespace: opts.Namespace, logger: opts.Logger}, nil
}

// startEmbedded locks the data directory and starts the server in it.
func startEmbedded(ctx context.Context, opts Options, co client.Options) (_ *Engine, err error) {
	t0 := time.Now()
	dir := opts.DataDir
	listen, err := parseListenHost(opts.ListenHost)
	if err != nil {
		return nil, err
	}
	tightened, err := makePrivateDir(dir)
	if err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	if tightened {
		opts.Logger.Warn("restricted the data dir to its owner (mode 0700): it holds every prompt and the engine's keys", "dataDir", dir)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	e := &Engine{namespace: opts.Namespace, logger: opts.Logger, dataDir: dir, lock: lock, spaceDir: dir, freeSpace: opts.freeSpace}
	defer func() {
		if err != nil {
			_ = e.close()
		}
	}()
	if full := diskspace.Check(opts.freeSpace, dir, ""); full != nil {
		opts.Logger.Warn("the data dir's disk is full: processes cannot be started, answered, cancelled or listed until it has room", "err", full)
	}
	files, err := tightenDataFiles(dir)
	if err != nil {
		return nil, err
	}
	if len(files) > 0 {
		opts.Logger.Warn("restricted files in the data dir to their owner (mode 0600)", "files", files)
	}
	certs, err := setupTLS(filepath.Join(dir, tlsDir), serverNames(opts.ListenHost), opts.Logger)
	if err != nil {
		return nil, fmt.Errorf("engine certificates: %w", err)
	}

	emb, err := newServer(opts, listen, certs)
	if err != nil {
		return nil, err
	}
	e.logOut = emb.logOut
	hostPort := emb.hostPort
	// A failed Start has already stopped whatever it had started.
	if err := emb.server.Start(); err != nil {
		return nil, fmt.Errorf("start temporal server: %w", err)
	}
	e.server, e.hostPort = emb.server, hostPort

	co.HostPort = hostPort
	co.ConnectionOptions.TLS = certs.clientConfig()
	co = withSpaceGuard(co, dir, opts.freeSpace)
	if e.client, err = client.NewLazyClient(co); err != nil {
		return nil, fmt.Errorf("create temporal client: %w", err)
	}
	if err := waitReady(ctx, e.client, hostPort); err != nil {
		return nil, err
	}
	if err := registerSearchAttributes(ctx, e.client, opts.Namespace, opts.SearchAttributes); err != nil {
		return nil, fmt.Errorf("register search attributes: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(dir, addrFile), []byte(hostPort+"\n")); err != nil {
		return nil, fmt.Errorf("write %s: %w", addrFile, err)
	}
	e.logger.Info("temporal engine started", "addr", hostPort, "namespace", opts.Namespace,
		"dataDir", dir, "took", time.Since(t0).Round(time.Millisecond))
	return e, nil
}

// Attach connects to the embedded engine that another process (or another
// Engine in this process) runs on opts.DataDir (empty means DefaultDataDir),
// such as a CLI command beside a running `vibe serve`. It dials the address
// in DataDir/engine.addr with the client certificate in DataDir/tls, so it
// needs the same read access to the data directory as the engine itself.
// The returned Engine is a client only: Embedded reports false and Close
// leaves the other engine running.
//
// If no engine holds the data directory, Attach returns an error wrapping
// ErrNotRunning; a caller that wants an engine either way then calls Start.
// Options.HostPort and Options.TLS must be empty: the data directory
// supplies both.
func Attach(ctx context.Context, opts Options) (*Engine, error) {
	if opts.HostPort != "" || opts.TLS != nil {
		return nil, errors.New("attach: Options.HostPort and Options.TLS must be empty; the data directory supplies them")
	}
	if opts.DataDir == "" {
		opts.DataDir = DefaultDataDir
	}
	addr, ok := RunningAddr(opts.DataDir)
	if !ok {
		return nil, fmt.Errorf("data dir %s: %w", opts.DataDir, ErrNotRunning)
	}
	cfg, err := LoadClientTLS(ClientCertFiles(opts.DataDir))
	if err != nil {
		return nil, fmt.Errorf("attach to the engine on %s: %w", opts.DataDir, err)
	}
	opts.HostPort, opts.TLS = addr, cfg
	// The engine may be restarted (its process killed and started again)
	// while this client lives, and then listens on another port: every
	// connection, the first and each reconnection, dials the address the
	// data directory gives at that moment. The certificates stay, so the
	// server is verified as before.
	dataDir := opts.DataDir
	opts.ClientOptions.ConnectionOptions.DialOptions = append(slices.Clip(opts.ClientOptions.ConnectionOptions.DialOptions),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			addr, ok := RunningAddr(dataDir)
			if !ok {
				return nil, fmt.Errorf("data dir %s: %w", dataDir, ErrNotRunning)
			}
			var d net.Dialer
			return d.DialContext(ctx, "tcp", addr)
		}))
	opts.ClientOptions = withSpaceGuard(opts.ClientOptions, opts.DataDir, opts.freeSpace)
	e, err := Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	e.spaceDir, e.freeSpace = dataDir, opts.freeSpace
	return e, nil
}

// waitReady polls the frontend's health check until it serves.
func waitReady(ctx context.Context, c client.Client, hostPort string) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	for {
		_, err := c.CheckHealth(ctx, &client.CheckHealthRequest{})
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("temporal server at %s did not become ready: %w", hostPort, err)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Space reports whether the engine's data directory has room for the
// engine's writes: while its filesystem has less than diskspace.Min free
// the disk-space guard refuses the client's writes, and the engine's work
// — every running process and batch — is held until space is freed. It
// returns the guard's error then (diskspace.Is), nil when there is room
// or the engine has no data directory of its own (a cluster's).
func (e *Engine) Space() error {
	if e.spaceDir == "" {
		return nil
	}
	return diskspace.Check(e.freeSpace, e.spaceDir, "the engine cannot write "+dbFile+", so its work is held until space is freed")
}

// Client returns the SDK client for the engine's namespace. It stays valid
// until Close; do not close it yourself.
func (e *Engine) Client() client.Client { return e.client }

// HostPort returns the frontend address clients dial: when embedded,
// "127.0.0.1:<port>", or Options.ListenHost's address if that is not a
// wildcard. The Temporal CLI reaches an embedded engine with the data
// directory's client certificate (see ClientCertFiles):
//
//	temporal --address <HostPort> --namespace <Namespace> \
//	  --tls-cert-path .vibe/tls/client.pem --tls-key-path .vibe/tls/client-key.pem \
//	  --tls-ca-path .vibe/tls/ca.pem workflow list
func (e *Engine) HostPort() string { return e.hostPort }

// Namespace returns the Temporal namespace the client uses.
func (e *Engine) Namespace() string { return e.namespace }

// Embedded reports whether the engine runs its own server in this process.
func (e *Engine) Embedded() bool { return e.server != nil }

// Close closes the client and, when embedded, stops the server gracefully
// (about a second) and releases the data directory. Workers using the
// client should be stopped first. Close is idempotent; later calls return
// the first call's result.
func (e *Engine) Close() error {
	e.closeOnce.Do(func() {
		e.closeErr = e.close()
		if e.server != nil {
			e.logger.Info("temporal engine stopped", "dataDir", e.dataDir)
		}
	})
	return e.closeErr
}

// close releases whatever has been acquired, in reverse order. It also
// undoes a Start that failed half way.
func (e *Engine) close() error {
	var errs []error
	if e.client != nil {
		e.client.Close()
	}
	if e.server != nil {
		if err := e.server.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stop temporal server: %w", err))
		}
	}
	if e.logOut != nil {
		if err := e.logOut.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close %s: %w", logFile, err))
		}
	}
	if e.lock != nil {
		// Remove the address while still holding the lock, so no one reads
		// an address whose lock is free and then taken by a new engine.
		if err := os.Remove(filepath.Join(e.dataDir, addrFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove %s: %w", addrFile, err))
		}
		if err := e.lock.unlock(); err != nil {
			errs = append(errs, fmt.Errorf("release data dir lock: %w", err))
		}
	}
	return errors.Join(errs...)
}

// RunningAddr returns the frontend host:port of the embedded engine running
// on dataDir (empty means DefaultDataDir), if there is one: a second
// command, such as a CLI listing processes, can then connect to it with
// Attach instead of failing to take the data directory. It reads
// DataDir/engine.addr and believes it only while the directory's lock is
// held: a file left behind by a killed process does not count. The engine
// may stop right after RunningAddr returns, so callers must still handle a
// failed dial.
func RunningAddr(dataDir string) (hostPort string, ok bool) {
	if dataDir == "" {
		dataDir = DefaultDataDir
	}
	b, err := os.ReadFile(filepath.Join(dataDir, addrFile))
	if err != nil {
		return "", false
	}
	addr := strings.TrimSpace(string(b))
	if addr == "" || !locked(dataDir) {
		return "", false
	}
	return addr, true
}

// readPID returns the pid recorded in a lock file, or "unknown".
func readPID(path string) string {
	b, err := os.ReadFile(path)
	if pid := strings.TrimSpace(string(b)); err == nil && pid != "" {
		return pid
	}
	return "unknown"
}
