//go:build !linux

package main

import (
	"errors"
	"os"
)

// openPTY is Linux's only, for now.
func openPTY() (tty, typist *os.File, err error) {
	return nil, nil, errors.New("the test opens a pseudo-terminal on Linux only")
}
