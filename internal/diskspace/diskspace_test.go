package diskspace

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"
)

func TestCheck(t *testing.T) {
	at := func(n uint64) FreeFunc { return func(string) (uint64, error) { return n, nil } }
	if err := Check(at(Min), "/data", "x"); err != nil {
		t.Errorf("%d free: %v", uint64(Min), err)
	}
	if err := Check(func(string) (uint64, error) { return 0, errors.ErrUnsupported }, "/data", "x"); err != nil {
		t.Errorf("free space unknown: %v", err)
	}
	err := Check(at(3<<20+300<<10), "/data", "the engine cannot write temporal.db")
	want := "no space left on device on /data (3.3 MiB free): the engine cannot write temporal.db; free some space there, then try again"
	if err == nil || err.Error() != want || !Is(fmt.Errorf("start x: %w", err)) {
		t.Errorf("got %v, want %s", err, want)
	}
	if n, err := Free(t.TempDir()); err != nil && !errors.Is(err, errors.ErrUnsupported) || err == nil && n == 0 {
		t.Errorf("Free of a temporary directory: %d, %v", n, err)
	}
}

func TestIs(t *testing.T) {
	for _, err := range []error{
		&fs.PathError{Op: "write", Path: "/data/x", Err: syscall.ENOSPC},
		errors.New("rpc error: code = Unavailable desc = database or disk is full (13)"),
		errors.New("api: 507: no space left on device on /data (0 B free)"),
	} {
		if !Is(err) {
			t.Errorf("Is(%v) = false", err)
		}
	}
	for _, err := range []error{nil, errors.New("context deadline exceeded"), syscall.EIO} {
		if Is(err) {
			t.Errorf("Is(%v) = true", err)
		}
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[uint64]string{0: "0 B", 1023: "1023 B", 1024: "1 KiB", 1536: "1.5 KiB", 4 << 20: "4 MiB", 70 << 20: "70 MiB", 5 << 30: "5 GiB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}
