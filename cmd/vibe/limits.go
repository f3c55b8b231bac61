package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/batch"
)

// maxConcurrency bounds --concurrency: more model calls at once than any
// provider takes, and each a goroutine and a connection held open.
const maxConcurrency = 10_000

// A number on the command line is checked before anything starts: a bad
// one is a usage error (exit 2) naming the flag and what it takes, never a
// value taken as a default without a word.

// beforeRun adds check to what cmd checks before it runs (its PreRunE),
// after the checks added before.
func beforeRun(cmd *cobra.Command, check func() error) {
	prev := cmd.PreRunE
	cmd.PreRunE = func(cmd *cobra.Command, args []string) error {
		if prev != nil {
			if err := prev(cmd, args); err != nil {
				return err
			}
		}
		return check()
	}
}

// checkWait checks a duration flag that is a wait: 0 or more.
func checkWait(flag string, d time.Duration) error {
	if d < 0 {
		return usageError{fmt.Errorf("--%s %s: give a wait of 0 or more", flag, d)}
	}
	return nil
}

// checkCount checks an integer flag that cmd was given, when it was: from
// least to most (most 0: no bound above).
func checkCount(cmd *cobra.Command, flag string, n, least, most int, what string) error {
	if !cmd.Flags().Changed(flag) {
		return nil
	}
	if n < least || (most > 0 && n > most) {
		bound := fmt.Sprintf("%d or more", least)
		if most > 0 {
			bound = fmt.Sprintf("from %d to %d", least, most)
		}
		return usageError{fmt.Errorf("--%s %d: give %s, %s", flag, n, what, bound)}
	}
	return nil
}

// batchFlags are the numbers of vibe batch that shape the run.
type batchFlags struct {
	concurrency        int
	window, poll, wait time.Duration
	maxProps, maxDepth int
}

// check checks them as cmd was given them.
func (f *batchFlags) check(cmd *cobra.Command) error {
	if f.concurrency > maxConcurrency {
		return usageError{fmt.Errorf("--concurrency %d: give the model calls at once, from 1 to %d (0: the default)", f.concurrency, maxConcurrency)}
	}
	for _, d := range []struct {
		flag string
		d    time.Duration
	}{{"window", f.window}, {"provider-batch-poll", f.poll}, {"wait-actions", f.wait}} {
		if err := checkWait(d.flag, d.d); err != nil {
			return err
		}
	}
	if f.poll > batch.MaxProviderPoll {
		return usageError{fmt.Errorf("--provider-batch-poll %s: give a wait of at most %s", f.poll, batch.MaxProviderPoll)}
	}
	if err := checkCount(cmd, "max-properties", f.maxProps, 1, 0, "the most object properties the provider takes in one schema"); err != nil {
		return err
	}
	return checkCount(cmd, "max-depth", f.maxDepth, 1, 0, "the deepest nesting of objects the provider takes")
}

// checkActionNames checks the names of --actions: each a name an action
// may have (action.CheckName).
func checkActionNames(names []string) error {
	for _, n := range names {
		if err := action.CheckName(n); err != nil {
			return usageError{fmt.Errorf("--actions: %w", err)}
		}
	}
	return nil
}
