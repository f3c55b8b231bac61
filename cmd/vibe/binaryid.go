package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"runtime/debug"
)

// binaryID identifies this build of vibe to the engine (the workers'
// binary checksum, which marks each workflow's reset points): a digest of
// the build's information — module versions, VCS revision, settings — and
// the executable's size and time. Temporal's default reads the whole
// executable, a quarter of a gigabyte, at every worker's start: 0.4 s of
// every command.
func binaryID() string {
	h := sha256.New()
	if bi, ok := debug.ReadBuildInfo(); ok {
		fmt.Fprint(h, bi.String())
	}
	if exe, err := os.Executable(); err == nil {
		if fi, err := os.Stat(exe); err == nil {
			fmt.Fprint(h, exe, fi.Size(), fi.ModTime().UnixNano())
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}
