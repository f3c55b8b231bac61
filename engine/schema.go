package engine

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// schemaTemplate is an empty engine database, gzipped: the tables and
// indexes go.temporal.io/server/schema/sqlite.SetupSchema makes, in the
// database file itself (its log checkpointed). A new data directory's
// database is written from it in one go, faster than made statement by
// statement (BenchmarkStartStop, its /new case). TestSchemaTemplate checks it
// against what SetupSchema of the Temporal server Vibe is built with makes;
// go test ./engine -run TestSchemaTemplate -update makes it again.
//
//go:embed schema.db.gz
var schemaTemplate []byte

// writeSchema writes the empty engine database (schemaTemplate) to path,
// which is empty or absent, through a temporary file that is synced and
// then renamed over it: a start killed on the way leaves path as it was,
// for the next start to write again. The -wal and -shm files of a
// database that was there before are removed.
func writeSchema(path string) error {
	// The log of a database that was there before would be applied to
	// this one; a start killed while writing leaves its temporary file.
	gone := []string{path + "-wal", path + "-shm"}
	dir, base := filepath.Split(path)
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if n := e.Name(); strings.HasPrefix(n, "."+base+".") && strings.HasSuffix(n, ".tmp") {
			gone = append(gone, filepath.Join(dir, n))
		}
	}
	for _, f := range gone {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	zr, err := gzip.NewReader(bytes.NewReader(schemaTemplate))
	if err != nil {
		return fmt.Errorf("read the empty database: %w", err)
	}
	var db bytes.Buffer
	if n := len(schemaTemplate); n >= 4 {
		db.Grow(int(binary.LittleEndian.Uint32(schemaTemplate[n-4:]))) // gzip's trailer: the size
	}
	if _, err := db.ReadFrom(zr); err != nil {
		return fmt.Errorf("read the empty database: %w", err)
	}
	return writeFile(path, db.Bytes(), true)
}
