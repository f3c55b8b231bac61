package main

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// inFlight counts the calls that reached the ledger and have been neither
// answered nor cut short.
func (l *fireLedger) inFlight() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := -l.cut
	for k, c := range l.calls {
		n += c - l.answered[k]
	}
	return n
}

// inFlightKeys are the keys of the calls in flight, with their calls so
// far.
func (l *fireLedger) inFlightKeys() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	keys := map[string]int{}
	for k, c := range l.calls {
		if c > l.answered[k]+l.cutBy[k] {
			keys[k] = c
		}
	}
	return keys
}

// callsOf is how many calls key has had.
func (l *fireLedger) callsOf(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls[key]
}

// TestServeDrain sends SIGTERM to a vibe serve while a batch's
// fire-and-forget actions, 1.5 s a call, are in flight: the serve takes no
// more work, lets every call in flight finish (no client went away), and
// exits 0 within --drain. Started again, it runs the rest: each key is
// called once, the record action's effects are applied once each. vibe
// batch is given no actions file: it learns from the serve's address file
// which steps name its actions, and so that the model's decide step is
// fire-and-forget.
func TestServeDrain(t *testing.T) {
	t.Parallel() // vibe runs in child processes of its own, on a data directory and model of its own
	if testing.Short() {
		t.Skip("stops and restarts vibe serve")
	}
	const n, drain = 64, 30 * time.Second
	ledger := newFireLedger(func(string) <-chan struct{} {
		c := make(chan struct{})
		time.AfterFunc(1500*time.Millisecond, func() { close(c) })
		return c
	})
	sb := newServeBatch(t, n)
	dir, led := fireSetup(t, n, ledger) // the record action's tally is this one's
	// The serve batch's files, with the fire-and-forget action beside
	// record.
	for i, a := range sb.serveArgs {
		if a == filepath.Join(sb.dir, "actions.json") {
			sb.serveArgs[i] = filepath.Join(dir, "actions.json")
		}
	}
	sb.serveArgs = append(sb.serveArgs, "--drain", drain.String())
	serve, serveOut := child(t, sb.serveArgs...)
	waitUntil(t, "vibe serve", time.Minute, sb.ready)
	feeder, feederOut := child(t, sb.batchArgs...)
	waitUntil(t, "fire-and-forget calls in flight", 2*time.Minute, func() bool { return ledger.inFlight() >= 4 })

	serve.Process.Signal(syscall.SIGTERM)
	sent := time.Now()
	err := serve.Wait()
	took := time.Since(sent)
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	if err != nil {
		t.Fatalf("vibe serve, sent SIGTERM: %v after %s, want exit 0\n%s", err, took, serveOut)
	}
	if took > drain+20*time.Second {
		t.Errorf("vibe serve took %s to stop, past --drain %s", took, drain)
	}
	if !strings.Contains(serveOut.String(), "vibe: stopping: no more work is taken;") {
		t.Errorf("vibe serve does not say it drains:\n%s", serveOut)
	}
	keys, _, unanswered, cut := ledger.counts()
	if cut > 0 || ledger.inFlight() > 0 {
		t.Errorf("at the serve's exit, %d fire-and-forget calls were cut short and %d still in flight", cut, ledger.inFlight())
	}
	t.Logf("SIGTERM: vibe serve stopped in %s; %d keys called, %d not answered (none cut short)", took.Round(time.Millisecond), keys, len(unanswered))

	_, serveOut = child(t, sb.serveArgs...)
	waitUntil(t, "vibe serve to come back", time.Minute, sb.ready)
	if err := feeder.Wait(); err != nil {
		t.Fatalf("vibe batch: %v\n%s\nserve:\n%s", err, feederOut, serveOut)
	}
	checkResults(t, readResults(t, sb.out), n, nil)
	waitUntil(t, "every item's fire-and-forget action", 3*time.Minute, func() bool {
		keys, _, unanswered, _ := ledger.counts()
		return keys == n && len(unanswered) == 0
	})
	if _, repeated, _, cut := ledger.counts(); len(repeated) > 0 || cut > 0 {
		t.Errorf("fire-and-forget keys called again after the restart: %v (%d calls cut short)", repeated, cut)
	}
	if _, keys, repeated := led.counts(); keys != n || len(repeated) > 0 {
		t.Errorf("the record action: %d keys (want %d), applied again: %v", keys, n, repeated)
	}
}
