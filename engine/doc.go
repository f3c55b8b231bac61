// Package engine provides the Temporal engine that Vibe's processes run on.
//
// [Start] returns an [Engine] in one of two modes:
//
//   - Embedded (the default, Options.HostPort empty): a real Temporal server
//     (go.temporal.io/server, all four services in this process) persisted to
//     an SQLite file. State survives restarts: a workflow waiting for a signal
//     when the process exits resumes when the engine is started again on the
//     same data directory, and finished activities are not run again. Every
//     port is on 127.0.0.1 unless Options.ListenHost moves the frontend to
//     another address; only the frontend port can be fixed
//     (Options.FrontendPort), the others are always free ports picked at
//     start. Every port requires mutual TLS (see Security).
//   - External (Options.HostPort set): a client to an existing Temporal
//     cluster, over TLS when Options.TLS is set (see [LoadClientTLS]). No
//     server is started, no data directory is used.
//
// [Attach] connects to the embedded engine that another process runs on a
// data directory, with that directory's client certificate; it is how a
// second command beside a running `vibe serve` reaches the engine.
//
// In every case [Engine.Client] is an SDK client for the engine's namespace.
//
// A CLI wires them like this:
//
//   - serving (vibe serve): Start with DataDir, and ListenHost and
//     FrontendPort for workers on other machines.
//   - another command on the same data directory: Attach, and Start if it
//     returns ErrNotRunning.
//   - a worker on another machine (vibe worker --temporal HOST:PORT): Start
//     with HostPort and TLS from LoadClientTLS on the files copied from the
//     serving machine's DataDir/tls (see [ClientCertFiles]).
//
// # Files in the data directory
//
// The embedded engine keeps everything in Options.DataDir (default ".vibe"):
//
//	temporal.db        the SQLite database (plus temporal.db-wal and -shm while open)
//	temporal.log       the Temporal server's own logs, JSON lines, appended
//	engine.lock        lock file; holds the pid of the process that has the directory
//	engine.addr        the frontend host:port clients dial, while the engine runs (see [RunningAddr])
//	tls/ca.pem         the engine's private CA, which issued the two certificates below
//	tls/ca-key.pem     its key
//	tls/server.pem     the server certificate (and server-key.pem), of every service
//	tls/client.pem     the client certificate (and client-key.pem): whoever has it has the engine
//
// The directory and tls/ are 0700 and every file in them is 0600; see
// Security.
//
// The SQLite schema is created only when temporal.db does not exist yet (or
// is empty: a start killed before making it); it is
// never migrated, so the server version is pinned by go.mod and an upgrade of
// go.temporal.io/server needs a plan for existing files.
//
// # A full disk, a damaged database
//
// On a full disk Temporal retries its database writes and never says why:
// a client's start times out ("context deadline exceeded" after 10 s),
// and its lists leave out the workflows whose records it could not write.
// So the client of the embedded engine (and of Attach) reads the free
// space of the data directory's filesystem: while it is under 4 MiB,
// starts, signals, updates (a person's answer), cancels and lists are
// refused at once with a FailedPrecondition error that says "no space left
// on device on DIR (N free)", and a read of one workflow that fails
// meanwhile says so too. Reads that succeed are answered: a workflow's own
// state is right on a full disk. The start logs a warning when the disk is
// full.
//
// SQLite reads a damaged page only when a query needs it, so the server
// would start on a damaged temporal.db and its processes on the damaged
// pages would time out one by one. Start therefore runs PRAGMA
// quick_check on temporal.db before the server opens it, every time, and
// refuses a file that fails it with [ErrDamagedDB]: the error names the
// file and says what the check found and what to do. The check reads the
// whole file: 5 ms on a new one, about 0.1 s on 70 MB (3,000 finished
// workflows) from the page cache, 0.3 s from disk.
//
// # Why a lock file
//
// SQLite would let two processes open temporal.db, but two Temporal servers
// on one database would fight over its single history shard, each fencing
// the other out, and requests to both would fail. So the embedded engine
// takes an exclusive flock on engine.lock for as long as it runs, and a
// second Start on the same directory fails at once with an error naming the
// pid that holds it. The kernel drops the lock when the
// process dies, even by SIGKILL, so a crash never leaves the directory locked;
// a stale engine.addr left by such a crash is ignored by [RunningAddr] because
// the lock is no longer held.
//
// # Security
//
// The engine holds every prompt, answer and tool result of every process, so
// only the user running Vibe may reach it. That takes two things.
//
// Private files. The data directory is created 0700; an existing one with
// looser permissions, such as one made by an earlier Vibe, is restricted to
// 0700 and a warning says so. Every file the engine writes there is 0600
// whatever the umask: temporal.log, engine.lock, engine.addr and tls/* are
// created so, and temporal.db is created empty by the engine before SQLite
// opens it, because SQLite creates temporal.db-wal and -shm with the
// permissions of temporal.db. Engine files found with looser permissions
// are restricted at start, with a warning.
//
// Mutual TLS. Without it any local user could point a Temporal client at
// the frontend on 127.0.0.1 and read every workflow, bypassing Vibe's API
// token. So every gRPC port of the server
// (frontend, history, matching, worker) requires a client certificate
// issued by the engine's own CA, which the first start creates in tls/ (an
// ECDSA P-256 key, valid 20 years). The server certificate (every service
// presents it, and uses it as a client certificate between services) and
// the client certificate (for Vibe's client, the server's own system
// worker, and anyone given a copy) are valid 10 years. Later starts reuse
// them; a start makes a new server certificate when the listen address is
// not among its names or it expires within 30 days, and a new client
// certificate when it expires within 30 days. Neither matters to clients,
// which trust the CA. The CA is never replaced silently: workers on other
// machines hold its client certificate, so a damaged or expired CA is an
// error, and a new one is made only by removing tls/ (then copy the new
// client.pem, client-key.pem and ca.pem to every remote worker).
//
// Why mutual TLS and not a token authorizer (a ClaimMapper checking Vibe's
// API token): it is Temporal's own supported mechanism, configured in the
// server's TLS settings; it protects internode traffic and the server's
// system worker too, where an authorizer would need an internal-frontend
// port to exempt them; it works the same for workers on other machines and
// for Temporal Cloud, whose namespaces use client certificates; and Vibe's
// API token never has to be handed to Temporal or its workers.
//
// The embedded server is configured through Temporal's RootTLS: Frontend and
// Internode servers with RequireClientAuth and the CA as client CA,
// Internode clients trusting the CA, SystemWorker presenting the client
// certificate, and a RemoteClusters entry for the frontend's own address,
// because the server dials its own cluster's admin API as a remote
// cluster's.
//
// The client key is the key to the engine: keep the data directory on a
// disk only its user can read, and copy tls/client-key.pem only to machines
// that run workers.
//
// # Search attributes
//
// The engine registers two keyword search attributes on its namespace,
// [ProcessAttribute] (VibeProcess) and [StatusAttribute] (VibeStatus), so that
// Vibe processes can be listed and filtered in Temporal's own UI and CLI, e.g.
// `temporal workflow list --query 'VibeStatus = "waiting"'` (against the
// embedded engine with the TLS flags shown at [Engine.HostPort]). SQLite
// visibility supports up to ten custom keyword attributes per namespace.
//
// # Limits
//
// The embedded server is meant to live as long as its process. Close stops
// it, but Temporal v1.32 leaves about a hundred goroutines and its SQLite
// connection behind in the process; starting an engine again in the same
// process works (the tests do it), it just does not reclaim them.
package engine
