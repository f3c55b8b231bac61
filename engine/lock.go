//go:build unix

package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// dirLock is an exclusive flock on DataDir/engine.lock. The kernel releases it
// when the file is closed or the process dies, so it can never go stale.
type dirLock struct {
	f *os.File
}

// lockDir takes the data directory's lock without waiting and writes this
// process's pid into the lock file. If another process (or another Engine in
// this process) holds it, the error names the directory and the holder's pid.
func lockDir(dir string) (*dirLock, error) {
	path := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, privateFileMode)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("data dir %s is in use by another vibe process (pid %s)", dir, readPID(path))
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	// Writing the pid is informational only: the flock is what excludes.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &dirLock{f: f}, nil
}

// unlock releases the lock. The lock file itself stays: removing it would let
// a process that opened the old file and one that creates a new one both
// think they hold the lock.
func (l *dirLock) unlock() error {
	_ = l.f.Truncate(0)
	return l.f.Close() // closing the descriptor drops the flock
}

// locked reports whether some process holds the lock on dir. It probes with
// a shared lock that it drops at once.
func locked(dir string) bool {
	f, err := os.Open(filepath.Join(dir, lockFile))
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return errors.Is(err, syscall.EWOULDBLOCK)
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}
