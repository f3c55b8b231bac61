package main

import (
	"context"
	"fmt"
	goio "io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/llm"
)

// report prints what a run did: the results it wrote and the model
// requests made for the batch since it began (the batch's status before
// and now; nil when unknown), or that there was nothing to do.
func report(w goio.Writer, sum *batch.Summary, err error, out string, after int, before, now *batch.Status, cost func(llm.Usage) string) {
	if err == nil && sum.Lines == 0 {
		where := "the input holds no items"
		if after > 0 {
			where = out + " already holds every result"
		}
		fmt.Fprintf(w, "vibe: batch %s: nothing to do: %s; 0 new results, 0 new LLM requests\n", sum.ID, where)
		return
	}
	counts := fmt.Sprintf("this run wrote %d results, %d ok, %d failed", sum.Lines, sum.Done, sum.Failed)
	if sum.Retried > 0 {
		counts += fmt.Sprintf("; %d failed items retried", sum.Retried)
	}
	if now != nil && (before == nil || now.Requests >= before.Requests) {
		// A group read back ran before this run: its requests are not
		// new, though its results are written now.
		requests, usage := now.Requests, now.Usage
		if before != nil {
			requests -= before.Requests
			usage.PromptTokens -= before.Usage.PromptTokens
			usage.CompletionTokens -= before.Usage.CompletionTokens
			usage.CachedPromptTokens -= before.Usage.CachedPromptTokens
			usage.CacheWriteTokens -= before.Usage.CacheWriteTokens
		}
		counts += fmt.Sprintf("; %d new LLM requests; %s%s", requests, tokens(usage), cost(usage))
	}
	fmt.Fprintf(w, "vibe: batch %s: %s; %s\n", sum.ID, counts, sum.Elapsed.Round(time.Millisecond))
	if len(sum.Unread) > 0 {
		fmt.Fprintf(w, "vibe: batch %s: warning: %s\n", sum.ID, strings.Replace(unreadText(sum.Unread), "the input", "the items' input", 1))
	}
}

// reportSizes says the K each LLM chunk's calls took and why, the calls
// halved because the model could not answer them whole, and what the
// limiter of model calls did (lim: this machine's worker's; nil through a
// serve).
func reportSizes(w goio.Writer, sum *batch.Summary, lim *llm.Limiter, now *batch.Status) {
	if sum.Lines == 0 {
		return
	}
	var ks []string
	for _, s := range sum.Sizes {
		ks = append(ks, fmt.Sprintf("%s K=%d, %s", s.Chunk, s.K, s.Why))
	}
	if len(ks) > 0 {
		fmt.Fprintf(w, "vibe: batch %s: %s\n", sum.ID, strings.Join(ks, "; "))
	}
	for _, a := range sum.Audits {
		fmt.Fprintf(w, "vibe: batch %s: audit of %s: %d items asked alone too, %d answered otherwise among others (agreement %.2f), given their answers alone; %d LLM requests apart, %s\n",
			sum.ID, a.Chunk, a.Audited, a.Disagreed, a.Agreement(), a.Requests, tokens(a.Usage))
	}
	for _, h := range sum.Halved {
		fmt.Fprintf(w, "vibe: batch %s: audit: %s\n", sum.ID, h)
	}
	if now != nil {
		for _, sp := range now.Splits {
			fmt.Fprintf(w, "vibe: batch %s: %s: calls of %d items could not be answered whole (%s); halved down to %d, which passed\n", sum.ID, sp.Chunk, sp.From, sp.Reason, sp.To)
		}
	}
	if lim != nil && lim.Stats().MaxCalls > 0 {
		fmt.Fprintf(w, "vibe: batch %s: model calls: %s\n", sum.ID, lim)
	}
}

// interrupted is the error of a run that Ctrl-C stopped, after the groups
// in flight finished or, at once, leaving them to the engine: it says how
// to go on.
func interrupted(io stdio, atOnce bool, out, in, id, batchID string, line int) error {
	args := io.args
	if in == "-" && id == "" { // a fresh id each time, unless given
		args = append(slices.Clone(args), "--id", batchID)
	}
	what := fmt.Sprintf("stopped after line %d", line)
	if atOnce {
		what = "stopped at once: the groups in flight go on in the engine, and a rerun picks up their results"
	}
	how := "run the same command again to go on"
	if in == "-" {
		how = "run the same command again, given the same input, to go on"
	}
	if out != "" && out != "-" {
		how += fmt.Sprintf("; it continues %s after line %d", out, line)
	} else {
		how += "; it writes every result again from line 1 (give --out FILE to have a file continued)"
	}
	return &interruptedError{fmt.Sprintf("batch %s %s; %s:\n  vibe %s", batchID, what, how, shellQuote(args))}
}

// systemicStop is the error of a batch stopped at an item that failed
// for a reason not its own (no model, an endpoint that refuses or stayed
// down): it says the cause, that no item is marked failed for it, and the
// command that goes on — exit 2 when waiting does not mend it.
func systemicStop(io stdio, se *batch.SystemicError, out, in, id string, line int) error {
	args := io.args
	if in == "-" && id == "" {
		args = append(slices.Clone(args), "--id", se.ID)
	}
	mend := "once the model endpoint answers"
	if se.Refused {
		mend = "once the model, its key or its endpoint is mended"
	}
	where := fmt.Sprintf("; it continues %s after line %d", out, line)
	if out == "" || out == "-" {
		where = "; it writes every result again from line 1 (give --out FILE to have a file continued)"
	}
	err := fmt.Errorf("%w; run the same command again %s to go on, asking that item and those after it%s:\n  vibe %s", se, mend, where, shellQuote(args))
	if se.Refused {
		return stopError{err}
	}
	return err
}

// shellQuote joins args into a command line a POSIX shell reads back as
// args.
func shellQuote(args []string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-") == "" {
			quoted[i] = a
			continue
		}
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(quoted, " ")
}

// batchAgain is the command that runs batch batchID again: the command
// as given, with the id a batch read from stdin was given afresh.
func batchAgain(io stdio, in, id, batchID string) string {
	args := io.args
	if in == "-" && id == "" {
		args = append(slices.Clone(args), "--id", batchID)
	}
	return "vibe " + shellQuote(args)
}

// settleBatchActions waits, on the command's own engine, at most bound,
// for the fire-and-forget actions of the batch's items — those of the
// items this run wrote and those of earlier runs' items still running —
// and says how many have ended as they do. What is still pending then is
// the command's error, naming the command that runs it (again, the batch
// run again). Through a vibe serve it says what is pending: the serve's
// worker runs it.
func settleBatchActions(ctx context.Context, io stdio, c *batch.Client, sum *batch.Summary, items []string, bound time.Duration, w actionsWhere, again string) error {
	ids, err := c.Actions(ctx, sum.ID, sum.FireAndForget, items)
	if err != nil || len(ids) == 0 {
		return err
	}
	wait := w.own && bound > 0
	wctx, cancel := context.WithTimeout(ctx, bound)
	if !wait {
		wctx, cancel = context.WithCancel(ctx)
		cancel() // look once, without waiting
	}
	defer cancel()
	if wait {
		fmt.Fprintf(io.err, "vibe: waiting up to %s (--wait-actions) for the items' fire-and-forget actions to settle\n", bound)
	}
	var mu sync.Mutex
	last := time.Now()
	pending, err := c.AwaitActions(wctx, ids, func(n int) {
		mu.Lock()
		defer mu.Unlock()
		if wait && time.Since(last) >= 5*time.Second {
			last = time.Now()
			fmt.Fprintf(io.err, "vibe: %d fire-and-forget action(s) of %d have settled\n", n, len(ids))
		}
	})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("batch %s's fire-and-forget actions: %w", sum.ID, err)
	}
	if len(pending) == 0 {
		if wait {
			fmt.Fprintf(io.err, "vibe: the items' %d fire-and-forget action(s) have settled\n", len(ids))
		}
		return nil
	}
	after := time.Duration(0)
	if wait {
		after = bound
	}
	return w.pending(io, pending, after, "; batch "+sum.ID+"'s items do not wait for them", "; vibe show ITEM tells how an item's actions end", again)
}
