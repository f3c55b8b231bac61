package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	goio "io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/augceo/vibe"
	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/engine"
	"github.com/augceo/vibe/internal/diskspace"
	"github.com/augceo/vibe/internal/wfid"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/registry"
)

func newBatchCmd(io stdio) *cobra.Command {
	var (
		ef                        engineFlags
		wf                        workerFlags
		regDir, pipeline, in, out string
		id, prompt, system, name  string
		sizeFlag                  string
		concurrency               int
		audit                     float64
		window                    time.Duration
		maxProps, maxDepth        int
		pf                        pricesFlag
		provider, fallback        bool
		dryRun, retryFailed       bool
		bf                        budgetFlags
		poll, waitActions         time.Duration
	)
	cmd := &cobra.Command{
		Use:   "batch PROCESS|--pipeline EXPR --in FILE.jsonl|- [--out FILE.jsonl] [--batch-size K|auto] [--concurrency C] [--id BATCH]",
		Short: "Run a process over a stream of items",
		Long: `Batch runs a process — a registry URI, a process schema file, or --pipeline
EXPR — once per line of --in (JSONL; - for stdin). A line is what POST
/v1/processes takes without the process, {"prompt": …, "input": {…}}, or a bare
JSON string, the prompt.

Each LLM chunk is asked of K items in one model call (--batch-size), each item's
part of the answer checked on its own and, when wrong, repaired on its own; a
call the model cannot answer whole (too large, cut off, refused) is halved. K is
auto by default, per chunk: the largest of 1, 2, 4, 8, 16, 32, 64 not above the
K calibration chose for the model and chunk (vibe calibrate; 32 without), the
items over the calls that may run at once, and what the output token limit
allows; the summary says which K each chunk took and why, and a batch keeps the
K of its first run. Server and person steps run per item. Items go in groups
(workflows) of 32, or K when it is larger (a batch of up to 128 items whose calls
fit in C at once: one group); a group's calls run at once, at most C
model calls in flight (--concurrency; by default 32 to begin with, growing while
latency holds and halving on the provider's 429), and the input is read no
further ahead than the groups that keep them busy.

--provider-batch sends the model calls through the provider's own Batch API
(OpenAI's Batch API, Anthropic's Message Batches) instead of one HTTP request
each: half the price at both, answered within 24 hours (most within the hour).
The calls of every group that is ready go in one provider batch; the engine waits
for it on a timer, at no cost, and a restart of anything finds it again — nothing
is submitted twice. Calls a provider batch does not answer go in the next one, or
directly with --provider-batch-fallback. With it, C defaults to as many groups as
one provider batch holds (up to 1024).

--dry-run reads the input and says, before any call, how many model requests the
batch makes at its first LLM chunk, their prompt tokens (an estimate: 4 bytes a
token) and, with --prices, their cost.

One result line per item goes to --out (default stdout), in input order:
  {"line": N, "id": ITEM, "status": "completed"|"failed", "output" | "error"}
A line that is not JSON or has a bad field gets an error line naming the line
and the JSON path; the others go on. Every item is a process (vibe show ITEM).

Resume: run the same command again. The batch id (--id, or derived from the
compiled process, the system text, the prompt and the input file's items — the
same id POST /v1/batches derives — not from K or the concurrency) names the work:
groups that finished are read back, not sent to the model again, and their
actions do not run again; --out is continued after its last complete line, so it
ends with each item once. A batch keeps the K of its first run. Items that
failed for their own reason (the model's answer refused after its repairs, an
action that failed for good) stay failed on a rerun; --retry-failed asks them
again, under the same batch id: the ok results are kept, not asked again, --out
is written again from line 1, and the summary says how many were retried.

Ctrl-C stops the reading: the groups in flight finish and their results are
written, then vibe batch exits with status 130 and prints the command that goes
on. A second Ctrl-C exits at once; the groups in flight go on in the engine, and
the command run again picks up their results.

An item does not wait for its fire-and-forget actions; vibe batch does. On its
own engine, after the last item it waits up to --wait-actions (5m) for them to
settle — this run's items' and those earlier runs left pending; when some are
still pending then (or with --wait-actions 0) it names them and exits 1 with
the command that runs them: the same command again. An action's call still in
flight when it exits finishes first, for up to --drain (30s), so that its
endpoint does not see it cut and made again. Through a running vibe serve it
says which are pending: the serve's worker runs them.

Progress goes to stderr (a bar on a terminal, a line every few seconds
otherwise), starting at the lines --out already holds; then a summary of what
this run did — the results it wrote, the model requests it made — and, for a
batch that earlier runs began, of the whole batch. The exit status is 1 when
any item failed or an action is still pending, 130 when interrupted.

--audit RATE asks that share of the items alone too while the batch runs, compares
each with its answer among K others (as vibe calibrate does), and gives an item
whose answers differ its answer alone; when the running agreement is significantly
below 0.98 (a sequential test), K halves for the rest of the run. The progress line
shows the agreement, and the summary the audit's calls, counted apart.

It uses the vibe serve that has --data if one runs (its worker does the work,
and its actions, which it names in its address file, are the batch's: no
--actions-file needed); otherwise it starts the embedded engine itself, or
joins --temporal.`,
		Example: `  vibe batch aug:processes/review --registry DIR --in items.jsonl --out results.jsonl --llm openai:gpt-4o-mini
  vibe batch --pipeline 'prompt | Assess' --registry DIR --in - --dry-run < items.jsonl
  vibe batch aug:processes/review --registry DIR --in items.jsonl --provider-batch   # half price, within 24 h`,
		Args:              fileOrPipeline,
		ValidArgsFunction: completeProcess(&regDir),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			softMemoryLimit()
			ctx := cmd.Context()
			pipeline, pipeFile, err := readPipeline(pipeline)
			if err != nil {
				return err
			}
			defer func() { err = inPipelineFile(err, pipeFile) }()
			if in == "" {
				return usageError{errors.New("give the items: --in FILE.jsonl, or --in - for stdin")}
			}
			if (provider || fallback) && strings.HasPrefix(wf.llm.spec, "replay:") {
				return usageError{errors.New("--provider-batch sends the calls through the provider's Batch API, and a recording has none: give --llm openai:MODEL or anthropic:MODEL")}
			}
			size, err := batchSize(sizeFlag)
			if err != nil {
				return usageError{err}
			}
			if audit < 0 || audit > 1 {
				return usageError{errors.New("--audit is the share of items asked alone too: from 0 to 1 (0.02 is 2%)")}
			}
			if concurrency < 0 {
				return usageError{errors.New("--concurrency is a count of model calls at once: 1 or more (0 for the default)")}
			}
			lf := batchFlags{concurrency: concurrency, window: window, poll: poll, maxProps: maxProps, maxDepth: maxDepth}
			if err := lf.check(cmd); err != nil {
				return err
			}
			if err := checkWait("wait-actions", waitActions); err != nil {
				return err
			}
			if err := checkWait("drain", wf.drain); err != nil {
				return err
			}
			if concurrency > 0 {
				wf.llm.concurrency = concurrency // this run's own worker holds to it
			}
			reg, err := openRegistry(regDir)
			if err != nil {
				return err
			}
			prices, err := pf.load()
			if err != nil {
				return err
			}
			opts := batch.Options{Process: process.StartOptions{Pipeline: pipeline, Prompt: prompt, System: system, Name: name},
				ID: id, Size: size, Concurrency: concurrency, Window: window, File: inputName(in), Audit: audit, RetryFailed: retryFailed,
				Call: batch.CallOptions{Inline: wf.llm.inline, Limits: compile.Limits{MaxProperties: maxProps, MaxDepth: maxDepth},
					ProviderBatch: provider || fallback, ProviderFallback: fallback, ProviderPoll: poll}}
			spec := pipeline
			if len(args) == 1 {
				spec = args[0]
				if registry.IsURI(args[0]) {
					opts.Process.Process = args[0]
				} else {
					if opts.Process.Document, err = readInput(io, args[0]); err != nil {
						return err
					}
					opts.Process.File = args[0]
				}
			}
			var input goio.Reader = io.in
			if in != "-" {
				r, f, err := openItems(in)
				if err != nil {
					return err
				}
				defer r.Close()
				input = r
				// A file is read twice: once for its digest, which with the
				// process names the batch (batch.Client.ID), then for the run.
				// A pipe is read once, as stdin is.
				if f != nil {
					if opts.Digest, err = batch.InputDigest(f); err != nil {
						return fmt.Errorf("%s: %w", in, err)
					}
					if _, err := f.Seek(0, goio.SeekStart); err != nil {
						return fmt.Errorf("%s: the input must be a file one can read twice, or - for stdin: %w", in, err)
					}
				}
			}
			if opts.ID != "" {
				if err := batch.CheckID(opts.ID); err != nil {
					return usageError{err}
				}
			}
			if dryRun {
				var cals batch.Calibrations
				if wf.llm.spec != "" {
					cals = calibrationStore(ef.data, &wf.llm)
				}
				if in != "-" {
					opts.Total = countLines(in)
				}
				return dryRunBatch(ctx, io, reg, wf.actionsFile, input, opts, prices, &wf.llm, bf, cals)
			}
			// The first Ctrl-C stops the reading and lets the groups in
			// flight finish; the second ends ctx.
			opts.Stop = drainOnInterrupt(ctx)
			c, where, done, err := batchClient(ctx, io, &ef, &wf, reg)
			if err != nil {
				if ctx.Err() != nil {
					return &interruptedError{"interrupted before the batch started"}
				}
				return err
			}
			defer done()
			switch {
			case opts.ID != "":
			case opts.Digest != "":
				if opts.ID, err = c.ID(ctx, opts, opts.Digest); err != nil {
					return err
				}
			default: // stdin or a pipe: read once, so named afresh
				opts.ID = wfid.New(wfid.Slug(filepath.Base(spec), "batch"))
				fmt.Fprintf(io.err, "vibe: batch %s (give --id %s to resume it)\n", opts.ID, opts.ID)
			}
			opts.Note = func(s string) { fmt.Fprintln(io.err, "vibe: "+s) }
			if where.own && ef.temporal == "" {
				// A later command on the data directory (vibe answer ITEM J,
				// typed without the flags) finishes an item that waits for a
				// person with what it needs.
				if err := recordBatchNeeds(ef.data, opts.ID, &wf); err != nil {
					fmt.Fprintf(io.err, "vibe: warning: what the items of %s need (its actions file, its model) is not recorded: %v\n", opts.ID, err)
				}
			}
			// Another input under the id of a batch is refused before its
			// results file is touched.
			if err := c.CheckInput(ctx, opts); err != nil {
				if _, ok := errors.AsType[*batch.InputChangedError](err); ok {
					return usageError{err}
				}
				return err
			}
			if opts.Digest == "" && id != "" {
				// stdin, whose digest is known only once it is read: a
				// batch made from a file is resumed from that file.
				if d := c.RecordedDigest(ctx, opts.ID); d != "" {
					return usageError{&batch.InputChangedError{ID: opts.ID, Recorded: d}}
				}
			}
			w, flush, closeOut, err := openResults(ctx, io, c, out, &opts)
			if err != nil {
				return err
			}
			defer closeOut()
			// The batch as earlier runs left it (none: a new batch), to
			// tell this run's model requests from theirs.
			before, _ := c.Status(ctx, opts.ID)
			total := countLines(in)
			opts.Total = total // the record shows "of N" while the lines are read
			p := newProgress(io, opts.ID, total, opts.After)
			line := opts.After // the last input line written
			var items []string // the items this run wrote, for their actions
			emit := func(r batch.Result) error {
				b, err := json.Marshal(r)
				if err != nil {
					return err
				}
				if _, err = w.Write(append(b, '\n')); err != nil {
					return err
				}
				line = r.Line
				if r.ID != "" {
					items = append(items, r.ID)
				}
				return nil
			}
			opts.Progress = func(s batch.Summary) {
				flush() // a group's lines at a time: a kill tears at most one line
				p.update(s, line)
			}
			var lastDown time.Time
			var downMu sync.Mutex
			opts.Unreachable = func(err error) {
				downMu.Lock()
				defer downMu.Unlock()
				if time.Since(lastDown) > 10*time.Second { // once per outage, not once per group
					lastDown = time.Now()
					p.note(unreachableNote(opts.ID, err))
				}
			}
			running := make(chan struct{})
			go func() {
				select {
				case <-opts.Stop:
					p.note("vibe: stopping: no more input is read; the groups in flight finish and their results are written (Ctrl-C again to stop at once)")
				case <-running:
				}
			}()
			if opts.Call.ProviderBatch {
				go followProvider(ctx, c, opts.ID, p, running)
			}
			sum, err := c.Run(ctx, input, emit, opts)
			close(running)
			p.finish()
			flush()
			var now *batch.Status
			if ctx.Err() == nil {
				now, _ = c.Status(ctx, opts.ID)
			}
			if sum != nil {
				reportSizes(io.err, sum, c.Limiter, now)
				report(io.err, sum, err, out, opts.After, before, now, func(u llm.Usage) string {
					model := wf.llm.model()
					if model == "" && now != nil {
						model = now.Model // the serve's worker answered
					}
					return costWords(prices, model, u)
				})
			}
			if err != nil {
				if errors.Is(err, batch.ErrStopped) || ctx.Err() != nil {
					return interrupted(io, ctx.Err() != nil, out, in, id, opts.ID, line)
				}
				if se, ok := errors.AsType[*batch.SystemicError](err); ok {
					return systemicStop(io, se, out, in, id, line)
				}
				return err
			}
			// Every item's actions have run before the batch says done.
			if err := settleBatchActions(ctx, io, c, sum, items, waitActions, where, batchAgain(io, in, id, opts.ID)); err != nil {
				return err
			}
			// The whole batch, earlier runs' lines included.
			failed, lines := sum.Failed, sum.Lines
			if now != nil && (opts.After > 0 || before != nil) {
				fmt.Fprintf(io.err, "vibe: batch %s in all: %d items, %d ok, %d failed; %d LLM requests; %s%s\n",
					now.ID, now.Items, now.Done, now.Failed, now.Requests, tokens(now.Usage), costWords(prices, cmp.Or(wf.llm.model(), now.Model), now.Usage))
				failed, lines = now.Failed, now.Items
			}
			if failed > 0 {
				return fmt.Errorf("%d of %d items failed: their result lines say why; the same command with --retry-failed asks them again", failed, lines)
			}
			return nil
		},
	}
	ef.add(cmd)
	wf.add(cmd)
	wf.addExitDrain(cmd)
	pf.add(cmd)
	registryFlag(cmd, &regDir)
	cmd.Flags().StringVar(&pipeline, "pipeline", "", "run this pipeline expression (or @FILE) over the items")
	cmd.Flags().StringVar(&name, "name", "", "label the batch and its items with `NAME` (default: the process's name; a pipeline's steps'); the batch's id does not depend on it")
	cmd.Flags().StringVar(&in, "in", "", "the items: a JSONL `FILE`, or - for stdin")
	cmd.Flags().StringVar(&out, "out", "", "write the result lines to `FILE` (continued on a rerun); default stdout")
	cmd.Flags().StringVar(&sizeFlag, "batch-size", "auto", "K, items per model call of each LLM chunk, or auto: chosen per chunk from calibration, the items and the calls at once")
	cmd.Flags().Float64Var(&audit, "audit", 0, "ask this share of the items alone too (0.02: 2%), compare, give a disagreeing item its answer alone, and halve K when the agreement is significantly below 0.98")
	cmd.Flags().IntVar(&concurrency, "concurrency", 0, fmt.Sprintf("C, model calls at once (default: %d to begin with, adapting to the provider)", llm.DefaultConcurrency))
	cmd.Flags().StringVar(&id, "id", "", "the batch's id (default: derived from the process and the input file; fresh for stdin)")
	cmd.Flags().StringVar(&prompt, "prompt", "", "the prompt of items that give none")
	cmd.Flags().StringVar(&system, "system", "", "the system text of the model calls")
	cmd.Flags().DurationVar(&window, "window", 0, fmt.Sprintf("how long a group waits for items still at their actions once the others asked for the next chunk (default %s)", batch.DefaultWindow))
	cmd.Flags().IntVar(&maxProps, "max-properties", 0, "the most object properties the provider takes in one schema, all levels counted (default 5000, OpenAI's): a group's call is split to keep within it")
	cmd.Flags().IntVar(&maxDepth, "max-depth", 0, "the deepest nesting of objects the provider takes (default 10, OpenAI's)")
	cmd.Flags().BoolVar(&provider, "provider-batch", false, "send the model calls through the provider's Batch API (OpenAI, Anthropic): half price, answered within 24 hours")
	cmd.Flags().BoolVar(&fallback, "provider-batch-fallback", false, "with --provider-batch: send a call a provider batch did not answer (failed, expired, cancelled) directly, not in the next provider batch")
	cmd.Flags().DurationVar(&poll, "provider-batch-poll", 0, fmt.Sprintf("with --provider-batch: the first wait between looks at a provider batch, growing by half each time up to %s (default %s)", batch.MaxProviderPoll, batch.DefaultProviderPoll))
	bf.add(cmd)
	cmd.Flags().DurationVar(&waitActions, "wait-actions", defaultWaitActions, "on its own engine, wait up to `D` after the last item for the items' fire-and-forget actions to settle; exit 1 when some are still pending (0: do not wait)")
	cmd.Flags().BoolVar(&retryFailed, "retry-failed", false, "ask again the items an earlier run of the batch left failed for their own reason, keeping the ok results")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "estimate the batch's model requests, prompt tokens and cost (with --prices) without running it")
	return cmd
}

// unreachableNote is what vibe batch says when the engine cannot take
// batch id's work (batch.Options.Unreachable): down, or its disk full — the
// disk-space guard stops it until space is freed, and the batch, shown
// "held" (batch.Client.Held), waits without marking an item failed.
func unreachableNote(id string, err error) string {
	if diskspace.Is(err) {
		return fmt.Sprintf("vibe: batch %s is stopped by the disk-space guard: %v; it waits up to %s for space to be freed, marking no item failed (Ctrl-C stops; the same command goes on)", id, err, batch.MaxUnreachable)
	}
	return fmt.Sprintf("vibe: the engine does not answer (%v); waiting up to %s for it to come back (a restarted vibe serve is found again)", err, batch.MaxUnreachable)
}

// batchMemoryLimit is the Go heap's soft limit for vibe batch unless
// GOMEMLIMIT sets one: without it, the garbage of the embedded engine and
// its worker let the resident memory grow with a long batch (317 MB
// after 100,000 items against 285 MB after 10,000); with it, it stays
// flat (BenchmarkBatchMemory). A soft limit: a heap that needs more gets
// it, with more collections.
const batchMemoryLimit = 150 << 20

// softMemoryLimit sets batchMemoryLimit unless GOMEMLIMIT is set.
func softMemoryLimit() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(batchMemoryLimit)
	}
}

// openResults opens where result lines go: an --out file continued after
// its last complete line (batch.Client.OpenResults), with opts.After set to
// it; else stdout.
func openResults(ctx context.Context, io stdio, c *batch.Client, out string, opts *batch.Options) (w goio.Writer, flush, closeOut func(), err error) {
	if out == "" || out == "-" {
		return io.out, func() {}, func() {}, nil
	}
	rf, err := c.OpenResults(ctx, out, opts.ID)
	if err != nil {
		return nil, nil, nil, err
	}
	if rf.Repaired > 0 {
		fmt.Fprintf(io.err, "vibe: %s: %d lines said failed for items that completed; rewritten from the batch's record\n", out, rf.Repaired)
	}
	if rf.Cut > 0 {
		fmt.Fprintf(io.err, "vibe: %s: cut back before line %d: its group never started, and runs now\n", out, rf.Cut)
	}
	switch {
	case opts.RetryFailed:
		// Every line is written again: the failed items' lines are in it.
		if err := rf.Rewrite(); err != nil {
			rf.Close()
			return nil, nil, nil, fmt.Errorf("%s: %w", out, err)
		}
		fmt.Fprintf(io.err, "vibe: --retry-failed: %s is written again from line 1; the ok results are read back, the failed items asked again\n", out)
	case rf.After > 0:
		fmt.Fprintf(io.err, "vibe: %s holds results up to line %d; going on after it\n", out, rf.After)
	}
	opts.After = rf.After
	return rf, func() { rf.Flush() }, func() { rf.Close() }, nil
}

// countLines counts a file's lines for the progress bar's total; -1 when
// the input is no regular file.
func countLines(name string) int {
	if name == "-" {
		return -1
	}
	f, err := os.Open(name)
	if err != nil {
		return -1
	}
	defer f.Close()
	n := 0
	buf := make([]byte, 1<<20)
	for {
		k, err := f.Read(buf)
		n += bytes.Count(buf[:k], []byte{'\n'})
		if err != nil {
			return n
		}
	}
}

// batchClient returns a batch client on the engine of the vibe serve that
// has the data directory (whose worker does the work), or on an engine
// and worker started here.
func batchClient(ctx context.Context, io stdio, ef *engineFlags, wf *workerFlags, reg *registry.Registry) (*batch.Client, actionsWhere, func(), error) {
	if s, ok := ef.runningServer(); ok {
		if err := wf.modelUnused(ef, "the vibe serve at "+s.BaseURL); err != nil {
			return nil, actionsWhere{}, nil, err
		}
		eng, err := ef.attach(ctx, quietLogger())
		if err == nil {
			p := &process.Client{Temporal: eng.Client(), Registry: reg}
			// The model calls go where the serve's own would: its
			// model's queue, or the one any model answers when it has
			// none ("" from a serve that does not say: Vibe's queue).
			var served []string // the serve's actions, when it says
			if e, ok := vibe.RunningEndpoint(ef.data); ok {
				p.ModelQueue, served = e.ModelQueue, e.Actions
			}
			// The process compiles here: the serve's actions (or those
			// of the actions file given) make a step they name an action
			// — fire-and-forget where the model fills it — and route the
			// items' calls to the queues of the actions they resolve
			// them to, which the serve's workers poll.
			switch {
			case wf.actionsFile != "":
				if p.Registered, err = actionNamesRegistry(wf.actionsFile); err != nil {
					eng.Close()
					return nil, actionsWhere{}, nil, err
				}
			case len(served) > 0:
				p.Registered = namesRegistry(served)
			}
			if p.Registered != nil {
				p.Actions = p.Registered.Names()
			}
			c := batch.NewClient(p)
			p.Hosts = c // items are read in their groups
			return c, ef.actionsRunWhere(s), func() { eng.Close() }, nil
		}
		if !errors.Is(err, engine.ErrNotRunning) {
			return nil, actionsWhere{}, nil, err
		}
	}
	l, err := startLocal(ctx, io, ef, wf, reg, quietLogger())
	if err != nil {
		return nil, actionsWhere{}, nil, err
	}
	if wf.llm.spec != "" {
		l.Batches.Calibrations = calibrationStore(ef.data, &wf.llm) // vibe calibrate's choices
	}
	return l.Batches, ef.actionsRunWhere(l.Processes), func() { closeDraining(io, l, wf.drain) }, nil
}

// dryRunBatch prints what the batch would ask of the model — requests and
// prompt tokens per LLM chunk, and their cost at prices — without running
// anything or starting an engine.
func dryRunBatch(ctx context.Context, io stdio, reg *registry.Registry, actionsFile string, in goio.Reader, opts batch.Options, prices *llm.Prices, lf *llmFlags, bf budgetFlags, cals batch.Calibrations) error {
	model := lf.model()
	pc := &process.Client{Registry: reg}
	if actionsFile != "" {
		names, err := actionNames(actionsFile)
		if err != nil {
			return err
		}
		pc.Actions = names
	}
	c := batch.NewClient(pc)
	c.Calibrations = cals
	if opts.ID == "" && opts.Digest != "" {
		id, err := c.ID(ctx, opts, opts.Digest)
		if err != nil {
			return err
		}
		opts.ID = id
	}
	est, err := c.Estimate(ctx, in, opts)
	if err != nil {
		return err
	}
	how := "one HTTP request each"
	if opts.Call.ProviderBatch {
		how = "through the provider's Batch API"
	}
	fmt.Fprintf(io.out, "batch %s: %d items in %d groups of up to %d; the model calls go %s\n", opts.ID, est.Items, est.Groups, est.Group, how)
	for _, s := range est.Sizes {
		fmt.Fprintf(io.out, "%s: K=%d, %s\n", s.Chunk, s.K, s.Why)
	}
	tw := tabwriter.NewWriter(io.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHUNK\tREQUESTS\tPROMPT TOKENS (est.)")
	for _, ch := range est.Chunks {
		note := ""
		if ch.Partial {
			note = " + what earlier steps answer"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d%s\n", ch.Chunk, ch.Requests, ch.PromptTokens, note)
	}
	fmt.Fprintf(tw, "total\t%d\t%d\n", est.Requests, est.PromptTokens)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(io.out, "Tokens are estimated at 4 bytes of the prompt's text a token; repairs and completion tokens are not known before the model answers.")
	switch {
	case prices == nil:
	case model == "":
		fmt.Fprintln(io.out, "No cost: give --llm openai:MODEL or anthropic:MODEL to price the prompt tokens.")
	default:
		if cost, ok := prices.Cost(model, llm.Usage{PromptTokens: est.PromptTokens}, opts.Call.ProviderBatch); ok {
			fmt.Fprintf(io.out, "Prompt cost at %s's prices in %s: %s%s\n", model, prices.File, prices.Format(cost), map[bool]string{true: ", with the batch discount", false: ""}[opts.Call.ProviderBatch])
		} else {
			fmt.Fprintf(io.out, "No cost: %s has no price for %s.\n", prices.File, model)
		}
	}
	// Each chunk's call at K against the model's limits, as vibe compile
	// --budget says it: what cannot fit is refused here too.
	start, _, err := pc.Prepare(ctx, opts.Process)
	if err != nil {
		return err
	}
	models, sizes, err := bf.load(start.Program)
	if err != nil {
		return err
	}
	name, strict := budgetModel(lf.spec, lf.baseURL)
	k := cmp.Or(opts.Size, batch.DefaultSize)
	b, err := llm.NewBudget(start.Program, llm.BudgetOptions{Model: name, Models: models, K: k, Limits: opts.Call.Limits,
		System: start.System, Prompt: start.Prompt, Strict: strict || lf.strict, Inline: opts.Call.Inline, Sizes: sizes})
	if err != nil {
		return err
	}
	fmt.Fprintln(io.out)
	if err := printBudget(io.out, b, k); err != nil {
		return err
	}
	return b.Err()
}

// batchSize reads --batch-size: auto (0), or K, 1 or more.
func batchSize(s string) (int, error) {
	if s == "" || s == "auto" {
		return 0, nil
	}
	k, err := strconv.Atoi(s)
	if err != nil || k < 1 {
		return 0, fmt.Errorf("--batch-size %q: give auto, or K, the items of one model call (1 or more)", s)
	}
	return k, nil
}

// openItems opens --in FILE: a regular file (file is set: it can be read
// twice), or a named pipe that someone writes to. A directory, a device
// (/dev/zero has no end: its one line would be read for ever) or a socket
// is refused, and so is a named pipe with no writer, at once instead of
// waiting for one.
func openItems(name string) (r goio.ReadCloser, file *os.File, err error) {
	fi, err := os.Stat(name)
	if err != nil {
		return nil, nil, usageError{fmt.Errorf("--in %s: %w", name, errors.Unwrap(err))}
	}
	switch mode := fi.Mode(); {
	case mode.IsRegular():
		f, err := os.Open(name)
		if err != nil {
			return nil, nil, usageError{fmt.Errorf("--in %s: %w", name, errors.Unwrap(err))}
		}
		return f, f, nil
	case mode.IsDir():
		return nil, nil, usageError{fmt.Errorf("--in %s: a directory, not a file of items", name)}
	case mode&fs.ModeNamedPipe == 0:
		return nil, nil, usageError{fmt.Errorf("--in %s: a device or a socket, not a file of items (only regular files, named pipes and - for stdin are read)", name)}
	}
	// Opened without waiting for a writer: a read then waits for the first
	// byte, or ends at once when no one has the pipe open to write.
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, usageError{fmt.Errorf("--in %s: %w", name, errors.Unwrap(err))}
	}
	var first [1]byte
	if n, _ := goio.ReadFull(f, first[:]); n == 0 {
		f.Close()
		return nil, nil, usageError{fmt.Errorf("--in %s: a named pipe that no one writes to (open it for writing first, or give a file)", name)}
	}
	return struct {
		goio.Reader
		goio.Closer
	}{goio.MultiReader(bytes.NewReader(first[:]), f), f}, nil, nil
}
