// Package diskspace tells a failure for want of disk space from others: it
// reads the free space of a directory's filesystem, and knows the words
// such a failure goes by (ENOSPC, SQLite's SQLITE_FULL).
package diskspace
