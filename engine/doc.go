// Package engine provides the Temporal engine that Vibe's processes run on.
//
// [Start] returns an [Engine] in one of two modes:
//
//   - Embedded (the default, Options.HostPort empty): a real Temporal server
//     (go.temporal.io/server, all four services in this process) persisted to
//     an SQLite file. State survives restarts: a workflow waiting for a signal
//     when the process exits resumes when the engine is started again on the
//     same data directory, and finished activities are not run again. Every
//     port is on 127.0.0.1; only the frontend port can be fixed
//     (Options.FrontendPort), the others are always free ports picked at start.
//   - External (Options.HostPort set): a client to an existing Temporal
//     cluster. No server is started, no data directory is used.
//
// In both modes [Engine.Client] is an SDK client for the engine's namespace.
//
// # Files in the data directory
//
// The embedded engine keeps everything in Options.DataDir (default ".vibe"):
//
//	temporal.db        the SQLite database (plus temporal.db-wal and -shm while open)
//	temporal.log       the Temporal server's own logs, JSON lines, appended
//	engine.lock        lock file; holds the pid of the process that has the directory
//	engine.addr        the frontend host:port while the engine runs (see [RunningAddr])
//
// The SQLite schema is created only when temporal.db does not exist yet; it is
// never migrated, so the server version is pinned by go.mod and an upgrade of
// go.temporal.io/server needs a plan for existing files.
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
// # Search attributes
//
// The engine registers two keyword search attributes on its namespace,
// [ProcessAttribute] (VibeProcess) and [StatusAttribute] (VibeStatus), so that
// Vibe processes can be listed and filtered in Temporal's own UI and CLI, e.g.
// `temporal workflow list --query 'VibeStatus = "waiting"'`. SQLite visibility
// supports up to ten custom keyword attributes per namespace.
//
// # Limits
//
// The embedded server is meant to live as long as its process. Close stops
// it, but Temporal v1.32 leaves about a hundred goroutines and its SQLite
// connection behind in the process; starting an engine again in the same
// process works (the tests do it), it just does not reclaim them.
package engine
