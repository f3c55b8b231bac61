// Package clustertest starts a real Temporal cluster for tests, as a team
// that outgrows the embedded engine runs one: PostgreSQL (Debian's
// postgresql package) for persistence and visibility, its schema set up by
// Temporal's own temporal-sql-tool, and the official Temporal server at the
// version go.mod pins with its services — frontend, history, matching and
// worker — each a process of its own, all on loopback.
//
// The binaries are built from the module (go.mod lists them as tools, so
// that no library package depends on them) and kept in a directory keyed by
// the server's version and the Go toolchain, so that later tests, and later
// runs, do not build them again. A test that needs the cluster calls Start;
// without PostgreSQL it is skipped, saying how to install it.
package clustertest
