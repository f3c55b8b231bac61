package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/augceo/vibe/internal/diskspace"
)

// TestFullDisk fills the data directory's disk (the engine's free-space
// reading says 1 MiB, under diskspace.Min): the engine starts with a
// warning; a start, a signal and a list are refused at once — not after
// the engine's 10 s timeout, and not with a list that misses workflows —
// with an error that says "no space left on device on DIR"; a query that
// fails meanwhile says so too; reading one workflow still works. With room
// again, all of it works.
func TestFullDisk(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var full atomic.Bool
	full.Store(true)
	free := func(d string) (uint64, error) {
		if full.Load() {
			return 1 << 20, nil
		}
		return diskspace.Free(d)
	}
	var log lockedBuffer
	e := startEngine(t, Options{DataDir: dir, freeSpace: free, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if want := "the data dir's disk is full"; !strings.Contains(log.String(), want) {
		t.Errorf("the start logged no %q:\n%s", want, log.String())
	}
	full.Store(false)
	c := e.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// No worker runs Greet: the workflow stays open.
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "before", TaskQueue: taskQueue}, Greet, "a"); err != nil {
		t.Fatal(err)
	}

	full.Store(true)
	noSpace := func(what string, call func() error) {
		t.Helper()
		t0 := time.Now()
		err := call()
		took := time.Since(t0)
		var pre *serviceerror.FailedPrecondition
		if err == nil || !strings.Contains(err.Error(), "no space left on device on "+dir+" (1 MiB free)") || !errors.As(err, &pre) || !diskspace.Is(err) {
			t.Errorf("%s on a full disk: %v (%T), want a FailedPrecondition saying no space left on device on %s", what, err, err, dir)
		}
		if took > 2*time.Second {
			t.Errorf("%s on a full disk took %v", what, took)
		}
		t.Logf("%s: %v", what, err)
	}
	noSpace("a start", func() error {
		_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "during", TaskQueue: taskQueue}, Greet, "b")
		return err
	})
	noSpace("a signal", func() error { return c.SignalWorkflow(ctx, "before", "", "go", "on") })
	noSpace("a list", func() error {
		_, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{})
		return err
	})
	noSpace("a query no worker answers", func() error {
		qctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		_, err := c.QueryWorkflow(qctx, "before", "", "stage")
		return err
	})
	if _, err := c.DescribeWorkflowExecution(ctx, "before", ""); err != nil {
		t.Errorf("describe on a full disk: %v", err)
	}

	full.Store(false)
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "after", TaskQueue: taskQueue}, Greet, "c"); err != nil {
		t.Fatalf("a start with room again: %v", err)
	}
	waitFor(t, 10*time.Second, func() error {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{})
		if err != nil {
			return err
		}
		var ids []string
		for _, ex := range resp.GetExecutions() {
			ids = append(ids, ex.GetExecution().GetWorkflowId())
		}
		slices.Sort(ids)
		if !slices.Equal(ids, []string{"after", "before"}) {
			return errors.New("listed " + strings.Join(ids, ", "))
		}
		return nil
	})
}

// lockedBuffer is a log that goroutines write while a test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestDamagedDB overwrites pages of a stopped engine's temporal.db with
// garbage, 10 near its end, then 40 in its middle: Start refuses it each
// time, naming the file, what SQLite's quick_check found and what to do,
// and releases the data directory. The same file undamaged started again
// before.
func TestDamagedDB(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e := startEngine(t, Options{DataDir: dir})
	startWorker(t, e.Client(), []any{Greet}, []any{Hello})
	for range 20 {
		runGreet(t, e.Client(), "x")
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := startEngine(t, Options{DataDir: dir}).Close(); err != nil {
		t.Fatalf("the undamaged file: %v", err)
	}

	path := filepath.Join(dir, dbFile)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	refused := func(found string) {
		t.Helper()
		_, err := Start(ctx, Options{DataDir: dir, Logger: testLogger(t)})
		if !errors.Is(err, ErrDamagedDB) {
			t.Fatalf("Start on a damaged database: %v, want ErrDamagedDB", err)
		}
		t.Log(err)
		said := regexp.QuoteMeta(path+": SQLite's quick_check says: ") + found + `\. Restore the file from a backup, ` +
			`or move it away \(with its -wal and -shm files, if any\) and start again with an empty database: ` +
			`the processes in this one are then lost$`
		if !regexp.MustCompile(said).MatchString(err.Error()) {
			t.Errorf("the error does not match %s: %v", said, err)
		}
	}
	// Tables' pages near the end: quick_check names them ("Tree 9 page
	// 194: btreeInitPage() returns error code 11", three of them, or
	// "Page 194: …" in older SQLites).
	pages := damage(t, path, -12, 10)
	refused(`[^;]*[Pp]age \d+: [^;]+(; [^;]+){2} \(and more\)`)
	// 40 pages in the middle, the schema's among them: SQLite cannot even
	// read the file's schema. A second start finds the directory free, and
	// the same damage.
	damage(t, path, pages/2-20, 40)
	refused(`database disk image is malformed \(11\)`)
	refused(`database disk image is malformed \(11\)`)
	if _, ok := RunningAddr(dir); ok {
		t.Error("a refused start left an engine address behind")
	}
}

// TestEmptiedDB: a temporal.db that held the engine's database and is
// now empty (0 bytes: truncated, or a copy cut short) is refused, naming
// the file and what to do, instead of starting as an empty engine; an
// empty file in a directory whose database was never made (a first start
// stopped before it made the schema) is a new database, as before.
func TestEmptiedDB(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := startEngine(t, Options{DataDir: dir}).Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, dbFile)
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, err := Start(ctx, Options{DataDir: dir, Logger: testLogger(t)})
	if !errors.Is(err, ErrDamagedDB) || !strings.Contains(err.Error(), path+" is empty (0 bytes), but it held the engine's database (temporal.db.made says so)") {
		t.Fatalf("Start on an emptied database: %v", err)
	}
	if fi, err := os.Stat(path + madeSuffix); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the mark: %v %v", fi, err)
	}
	// An empty file where no database was made: a new one.
	fresh := t.TempDir()
	if err := os.WriteFile(filepath.Join(fresh, dbFile), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := startEngine(t, Options{DataDir: fresh}).Close(); err != nil {
		t.Fatalf("an empty file without the mark: %v", err)
	}
}

// damage overwrites n whole pages of the SQLite file at path with random
// bytes, from page first on (counted from 0; a negative first counts from
// the end). It returns how many pages the file has.
func damage(t *testing.T, path string, first, n int64) (pages int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	header := make([]byte, 100)
	if _, err := f.ReadAt(header, 0); err != nil {
		t.Fatal(err)
	}
	pageSize := int64(binary.BigEndian.Uint16(header[16:18]))
	if pageSize == 1 {
		pageSize = 65536
	}
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	pages = fi.Size() / pageSize
	if first < 0 {
		first += pages
	}
	if first < 1 || first+n > pages {
		t.Fatalf("%s has %d pages: cannot damage %d from page %d", path, pages, n, first)
	}
	rnd := rand.New(rand.NewPCG(uint64(first), uint64(n)))
	garbage := make([]byte, pageSize)
	for i := range n {
		for j := range garbage {
			garbage[j] = byte(rnd.Uint32())
		}
		if _, err := f.WriteAt(garbage, (first+i)*pageSize); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("damaged pages %d-%d of %d (%d bytes each)", first, first+n-1, pages, pageSize)
	return pages
}

// TestSpace: Space says the data directory's disk is full — the guard's
// error, naming the directory and what the engine cannot do — while its
// free space is under diskspace.Min, and nothing once there is room; an
// engine attached to the directory says the same.
func TestSpace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var full atomic.Bool
	free := func(d string) (uint64, error) {
		if full.Load() {
			return 1 << 20, nil
		}
		return diskspace.Free(d)
	}
	e := startEngine(t, Options{DataDir: dir, freeSpace: free})
	a, err := Attach(context.Background(), Options{DataDir: dir, freeSpace: free, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for _, eng := range []*Engine{e, a} {
		if err := eng.Space(); err != nil {
			t.Errorf("with room: %v", err)
		}
	}
	full.Store(true)
	for _, eng := range []*Engine{e, a} {
		if err := eng.Space(); !diskspace.Is(err) || !strings.Contains(err.Error(), "no space left on device on "+dir+" (1 MiB free)") || !strings.Contains(err.Error(), "held") {
			t.Errorf("on a full disk: %v", err)
		}
	}
	full.Store(false)
	if err := e.Space(); err != nil {
		t.Errorf("with room again: %v", err)
	}
	if err := (&Engine{}).Space(); err != nil {
		t.Errorf("a cluster's engine: %v", err)
	}
}
