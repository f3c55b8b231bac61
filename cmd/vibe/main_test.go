package main

import (
	"os"
	"testing"
)

// TestMain lets tests run the vibe command as a child process — the test
// binary itself, with VIBE_TEST_MAIN=1 — so that a crash test can SIGKILL
// a real `vibe serve`.
func TestMain(m *testing.M) {
	if os.Getenv("VIBE_TEST_MAIN") == "1" {
		os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}
