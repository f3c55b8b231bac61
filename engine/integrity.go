package engine

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// ErrDamagedDB is wrapped by the error of Start when DataDir/temporal.db
// fails SQLite's integrity check (PRAGMA quick_check): the engine does not
// start on it. The error names the file, quotes the check's first
// findings, and says what to do: restore the file from a backup, or move
// it away to start with an empty database, losing the processes in it.
var ErrDamagedDB = errors.New("the engine's database is damaged")

// quickCheckLines is how many of quick_check's findings an error quotes.
const quickCheckLines = 3

// checkDB runs PRAGMA quick_check on the SQLite file at path, which
// exists and is not empty, before the server opens it. Temporal reads a
// damaged page only when it needs it: the server would start and serve,
// and the processes on the damaged pages would time out one by one.
// quick_check reads every page in use, so it costs time in proportion to
// the file: 5 ms on a new engine's file (under 1 MB), 70–120 ms on a 70 MB
// one holding 3,000 finished workflows when the file is in the page
// cache, 280–320 ms when it is read from disk. It checks each b-tree's
// structure, not that indexes match their tables; the full
// integrity_check would add that at four times the cost (340 ms there).
// It runs on every start, not only after an unclean stop: damage from
// the disk comes whatever the stop.
func checkDB(path string) error {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=rw&_pragma=busy_timeout(5000)")
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer db.Close()
	rows, err := db.Query(fmt.Sprintf("PRAGMA quick_check(%d)", quickCheckLines+1))
	if err != nil {
		return checkError(path, err)
	}
	defer rows.Close()
	var found []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return checkError(path, err)
		}
		// A row may hold several findings, one a line, after a heading.
		for l := range strings.Lines(line) {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "*** in database ") {
				found = append(found, l)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return checkError(path, err)
	}
	if len(found) == 1 && found[0] == "ok" {
		return nil
	}
	return damaged(path, found)
}

// checkError is a failed check: the file is damaged when SQLite says so
// (SQLITE_CORRUPT, SQLITE_NOTADB), else the check could not run.
func checkError(path string, err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
			return damaged(path, []string{se.Error()})
		}
	}
	return fmt.Errorf("check %s: %w", path, err)
}

// damaged is the error of a database that quick_check found damaged.
func damaged(path string, found []string) error {
	said := found
	if len(said) > quickCheckLines {
		said = said[:quickCheckLines]
	}
	more := ""
	if len(found) > quickCheckLines {
		more = " (and more)"
	}
	return fmt.Errorf("%w: %s: SQLite's quick_check says: %s%s. "+
		"Restore the file from a backup, or move it away (with its -wal and -shm files, if any) "+
		"and start again with an empty database: the processes in this one are then lost",
		ErrDamagedDB, path, strings.Join(said, "; "), more)
}

// madeSuffix names the file, beside the database, that says the database
// was made: an empty database file beside it was emptied since (a
// truncation, a copy cut short), not left by a first start stopped before
// it made the schema.
const madeSuffix = ".made"

// markDB notes that the database at path holds its schema, once.
func markDB(path string) error {
	if _, err := os.Stat(path + madeSuffix); err == nil {
		return nil
	}
	note := "temporal.db holds the engine's database; an empty temporal.db beside this file has lost it\n"
	if err := writeFileAtomic(path+madeSuffix, []byte(note)); err != nil {
		return fmt.Errorf("mark %s: %w", path, err)
	}
	return nil
}

// emptyDB is the error for the empty database file at path when it held
// a database before (markDB), nil when it is new: a new engine starting on
// it would lose every process without a word.
func emptyDB(path string) error {
	if _, err := os.Stat(path + madeSuffix); err != nil {
		return nil
	}
	return fmt.Errorf("%w: %s is empty (0 bytes), but it held the engine's database (%s says so): it was truncated or replaced. "+
		"Restore it from a backup (with its -wal and -shm files, if any), or remove it, its -wal and -shm files and %s to start again with an empty database: "+
		"the processes it held are then lost", ErrDamagedDB, path, filepath.Base(path+madeSuffix), filepath.Base(path+madeSuffix))
}
