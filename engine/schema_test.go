package engine

import (
	"bytes"
	"compress/gzip"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/augceo/vibe/internal/golden"
	"go.temporal.io/server/schema/sqlite"
)

// TestSchemaTemplate checks that the empty database a new data directory
// gets (schemaTemplate) holds what SetupSchema of this Temporal server
// makes: the same tables, indexes and rows. With -update it makes the
// template again (after a Temporal server upgrade).
func TestSchemaTemplate(t *testing.T) {
	dir := t.TempDir()
	made := filepath.Join(dir, "made.db")
	cfg := serverConfig(made, frontendHost{bind: loopback, dial: loopback}, nil).Persistence.DataStores["sqlite"].SQL
	if err := sqlite.SetupSchema(cfg); err != nil {
		t.Fatal(err)
	}
	want := dumpDB(t, made, true)
	if golden.Update() {
		db, err := os.ReadFile(made)
		if err != nil {
			t.Fatal(err)
		}
		var z bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
		zw.Write(db)
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("schema.db.gz", z.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	written := filepath.Join(dir, "written.db")
	if err := writeSchema(written); err != nil {
		t.Fatal(err)
	}
	if got := dumpDB(t, written, false); got != want {
		t.Errorf("the empty database of a new data directory (engine/schema.db.gz) is not what SetupSchema makes: go test ./engine -run TestSchemaTemplate -update makes it again\ngot:\n%s\nwant:\n%s", got, want)
	}
}

// TestWriteSchemaRemovesLeftovers: a new database is written whole, with
// no log of one that was there before applied to it, and a temporary file
// a killed start left is removed.
func TestWriteSchemaRemovesLeftovers(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "temporal.db")
	left := []string{path + "-wal", path + "-shm", filepath.Join(dir, ".temporal.db.123.tmp")}
	for _, f := range append(left, path) {
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := writeSchema(path); err != nil {
		t.Fatal(err)
	}
	for _, f := range left {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("%s is still there", filepath.Base(f))
		}
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 || fi.Size() == 0 {
		t.Fatalf("temporal.db: %v %v", fi, err)
	}
	if err := checkDB(path); err != nil {
		t.Fatal(err)
	}
}

// dumpDB is the schema and the rows of the SQLite database at path;
// checkpoint moves its log into the file first.
func dumpDB(t *testing.T, path string, checkpoint bool) string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if checkpoint {
		if _, err := db.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
			t.Fatal(err)
		}
	}
	var b strings.Builder
	rows, err := db.Query("SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master ORDER BY type, name")
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var typ, name, tbl, text string
		if err := rows.Scan(&typ, &name, &tbl, &text); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %s on %s: %s\n", typ, name, tbl, text)
		if typ == "table" && !strings.HasPrefix(name, "sqlite_") {
			tables = append(tables, name)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	for _, tbl := range tables {
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM "` + tbl + `"`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s: %d rows\n", tbl, n)
	}
	var v int
	if err := db.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "user_version %d\n", v)
	return b.String()
}
