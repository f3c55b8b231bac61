//go:build !unix

package engine

import (
	"errors"
	"fmt"
	"runtime"
)

// dirLock is not implemented without flock.
type dirLock struct{}

// lockDir fails: without flock a crashed process would leave the data
// directory locked forever, or two servers could share one database.
func lockDir(dir string) (*dirLock, error) {
	return nil, fmt.Errorf("embedded engine on %s: %w (set Options.HostPort to use a Temporal cluster)", runtime.GOOS, errors.ErrUnsupported)
}

func (l *dirLock) unlock() error { return nil }

func locked(dir string) bool { return false }
