package diskspace

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
)

// Min is the free space below which a filesystem counts as full: the
// embedded engine's SQLite file grows by a page or more with every write,
// and its write-ahead log by up to 4 MiB before a checkpoint.
const Min = 4 << 20

// Phrase starts the message of every Error: the words ENOSPC goes by.
const Phrase = "no space left on device"

// Error is a data directory whose filesystem has less than Min free.
type Error struct {
	Dir  string // the data directory
	Free uint64 // bytes free there
	What string // what could not be done, e.g. "the engine cannot write its database"; may be empty
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("%s on %s (%s free)", Phrase, e.Dir, Size(e.Free))
	if e.What != "" {
		msg += ": " + e.What
	}
	return msg + "; free some space there, then try again"
}

// FreeFunc returns the bytes free on dir's filesystem; Free is one, and a
// test passes another to simulate a full disk.
type FreeFunc func(dir string) (uint64, error)

// Check returns an *Error saying what a full disk keeps from being done
// when free says dir's filesystem has less than Min free, and nil when it
// has more or its free space cannot be read. A nil free is Free.
func Check(free FreeFunc, dir, what string) error {
	if free == nil {
		free = Free
	}
	n, err := free(dir)
	if err != nil || n >= Min {
		return nil
	}
	return &Error{Dir: dir, Free: n, What: what}
}

// Is reports whether err is a failure for want of space: an *Error, an
// ENOSPC, or a message saying so (SQLite's "database or disk is full", an
// error that came through gRPC as text).
func Is(err error) bool {
	if err == nil {
		return false
	}
	var e *Error
	if errors.As(err, &e) || errors.Is(err, syscall.ENOSPC) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, Phrase) || strings.Contains(msg, "database or disk is full")
}

// Size writes a number of bytes for people: 0 B, 512 KiB, 3.2 MiB.
func Size(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	v := float64(n) / float64(div)
	if v < 10 && v != float64(int(v)) {
		return fmt.Sprintf("%.1f %ciB", v, "KMGTP"[exp])
	}
	return fmt.Sprintf("%.0f %ciB", v, "KMGTP"[exp])
}
