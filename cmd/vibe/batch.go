package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	goio "io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/engine"
	"github.com/augceo/vibe/internal/watch"
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
		size, concurrency         int
		window                    time.Duration
		inline                    bool
		maxProps, maxDepth        int
		pf                        pricesFlag
		provider, fallback        bool
		dryRun                    bool
		poll                      time.Duration
	)
	cmd := &cobra.Command{
		Use:   "batch PROCESS|--pipeline EXPR --in FILE.jsonl|- [--out FILE.jsonl] [--batch-size K] [--concurrency C] [--id BATCH]",
		Short: "Run a process over a stream of items",
		Long: `Batch runs a process — a registry URI, a process schema file, or --pipeline
EXPR — once per line of --in (JSONL; - for stdin). A line is what POST
/v1/processes takes without the process, {"prompt": …, "input": {…}}, or a bare
JSON string, the prompt.

Items go in groups of K (--batch-size): each LLM chunk is asked of a group in one
model call (split further when the provider's limits need it), each item's part
of the answer checked on its own and, when wrong, repaired on its own. Server
and person steps run per item. At most C groups (--concurrency) are in flight,
and the input is read no further ahead than (C+1)×K lines, whatever its size.

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
process and the input file) names the work: groups that finished are read back,
not sent to the model again, and their actions do not run again; --out is
continued after its last complete line, so it ends with each item once.

Ctrl-C stops the reading: the groups in flight finish and their results are
written, then vibe batch exits with status 130 and prints the command that goes
on. A second Ctrl-C exits at once; the groups in flight go on in the engine, and
the command run again picks up their results.

Progress goes to stderr (a bar on a terminal, a line every few seconds
otherwise), starting at the lines --out already holds; then a summary of what
this run did — the results it wrote, the model requests it made — and, for a
batch that earlier runs began, of the whole batch. The exit status is 1 when
any item failed, 130 when interrupted.

It uses the vibe serve that has --data if one runs (its worker does the work);
otherwise it starts the embedded engine itself, or joins --temporal.`,
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
			if size < 0 || concurrency < 0 {
				return usageError{errors.New("--batch-size and --concurrency are counts: 1 or more (0 for the default)")}
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
				ID: id, Size: size, Concurrency: concurrency, Window: window, File: inputName(in),
				Call: batch.CallOptions{Inline: inline, Limits: compile.Limits{MaxProperties: maxProps, MaxDepth: maxDepth},
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
				f, err := os.Open(in)
				if err != nil {
					return err
				}
				defer f.Close()
				input = f
				if opts.ID == "" {
					if opts.ID, err = deriveID(spec, size, f); err != nil {
						return err
					}
				}
			} else if opts.ID == "" {
				opts.ID = wfid.New(wfid.Slug(filepath.Base(spec), "batch"))
				fmt.Fprintf(io.err, "vibe: batch %s (give --id %s to resume it)\n", opts.ID, opts.ID)
			}
			if err := batch.CheckID(opts.ID); err != nil {
				return usageError{err}
			}
			if dryRun {
				return dryRunBatch(ctx, io, reg, input, opts, prices, wf.llm.model())
			}
			// The first Ctrl-C stops the reading and lets the groups in
			// flight finish; the second ends ctx.
			opts.Stop = drainOnInterrupt(ctx)
			c, done, err := batchClient(ctx, io, &ef, &wf, reg)
			if err != nil {
				if ctx.Err() != nil {
					return &interruptedError{"interrupted before the batch started"}
				}
				return err
			}
			defer done()
			if err := repairResults(ctx, io, c, out, opts.ID, cmp.Or(size, batch.DefaultSize)); err != nil {
				return err
			}
			w, flush, closeOut, err := openResults(io, out, &opts)
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
			emit := func(r batch.Result) error {
				b, err := json.Marshal(r)
				if err != nil {
					return err
				}
				if _, err = w.Write(append(b, '\n')); err != nil {
					return err
				}
				line = r.Line
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
					p.note(fmt.Sprintf("vibe: the engine does not answer (%v); waiting up to %s for it to come back (a restarted vibe serve is found again)", err, batch.MaxUnreachable))
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
				return fmt.Errorf("%d of %d items failed: their result lines say why", failed, lines)
			}
			return nil
		},
	}
	ef.add(cmd)
	wf.add(cmd)
	pf.add(cmd)
	registryFlag(cmd, &regDir)
	cmd.Flags().StringVar(&pipeline, "pipeline", "", "run this pipeline expression (or @FILE) over the items")
	cmd.Flags().StringVar(&name, "name", "", "label the batch and its items with `NAME` (default: the process's name; a pipeline's steps'); the batch's id does not depend on it")
	cmd.Flags().StringVar(&in, "in", "", "the items: a JSONL `FILE`, or - for stdin")
	cmd.Flags().StringVar(&out, "out", "", "write the result lines to `FILE` (continued on a rerun); default stdout")
	cmd.Flags().IntVar(&size, "batch-size", 0, fmt.Sprintf("K, items per group: one model call per LLM chunk per group (default %d)", batch.DefaultSize))
	cmd.Flags().IntVar(&concurrency, "concurrency", 0, fmt.Sprintf("C, groups in flight (default %d)", batch.DefaultConcurrency))
	cmd.Flags().StringVar(&id, "id", "", "the batch's id (default: derived from the process and the input file; fresh for stdin)")
	cmd.Flags().StringVar(&prompt, "prompt", "", "the prompt of items that give none")
	cmd.Flags().StringVar(&system, "system", "", "the system text of the model calls")
	cmd.Flags().DurationVar(&window, "window", 0, fmt.Sprintf("how long a group waits for items still at their actions once the others asked for the next chunk (default %s)", batch.DefaultWindow))
	cmd.Flags().IntVar(&maxProps, "max-properties", 0, "the most object properties the provider takes in one schema, all levels counted (default 5000, OpenAI's): a group's call is split to keep within it")
	cmd.Flags().IntVar(&maxDepth, "max-depth", 0, "the deepest nesting of objects the provider takes (default 10, OpenAI's)")
	cmd.Flags().BoolVar(&provider, "provider-batch", false, "send the model calls through the provider's Batch API (OpenAI, Anthropic): half price, answered within 24 hours")
	cmd.Flags().BoolVar(&fallback, "provider-batch-fallback", false, "with --provider-batch: send a call a provider batch did not answer (failed, expired, cancelled) directly, not in the next provider batch")
	cmd.Flags().DurationVar(&poll, "provider-batch-poll", 0, fmt.Sprintf("with --provider-batch: the first wait between looks at a provider batch, growing by half each time up to %s (default %s)", batch.MaxProviderPoll, batch.DefaultProviderPoll))
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "estimate the batch's model requests, prompt tokens and cost (with --prices) without running it")
	cmd.Flags().BoolVar(&inline, "inline-schemas", false, "copy the step schemas into every item's property instead of sharing them with $ref, for providers without $ref")
	return cmd
}

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

// deriveID names a batch after what it runs, the size of its groups (K,
// which decides what each group holds) and its input's bytes, so the same
// command over the same file finds the same batch.
func deriveID(spec string, size int, f *os.File) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%d\n", spec, cmp.Or(max(size, 0), batch.DefaultSize))
	if _, err := goio.Copy(h, f); err != nil {
		return "", err
	}
	if _, err := f.Seek(0, goio.SeekStart); err != nil {
		return "", fmt.Errorf("%s: the input must be a file one can read twice, or give --id: %w", f.Name(), err)
	}
	name := strings.TrimSuffix(filepath.Base(spec), filepath.Ext(spec))
	if i := strings.LastIndexAny(name, ":/"); i >= 0 {
		name = name[i+1:]
	}
	return wfid.Slug(name, "batch") + "-" + hex.EncodeToString(h.Sum(nil))[:12], nil
}

// repairResults mends an --out file that an earlier run — one that lost
// its engine, before Vibe rode out a server's restart — filled with lines
// saying "failed" for items that had not: each failed line is checked
// against its group's result in the engine and rewritten when the engine
// says otherwise, and the file is cut back before a group that never
// started, so that this run runs it. The file is replaced atomically.
func repairResults(ctx context.Context, io stdio, c *batch.Client, out, id string, size int) error {
	if out == "" || out == "-" {
		return nil
	}
	data, err := os.ReadFile(out)
	if errors.Is(err, fs.ErrNotExist) || len(data) == 0 {
		return nil
	}
	if err != nil {
		return err
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	groups := map[int]map[int]batch.Result{} // group → line → the engine's result
	var b bytes.Buffer
	repaired, cut := 0, -1
	for _, l := range lines {
		var r batch.Result
		if !bytes.HasSuffix(l, []byte("\n")) || json.Unmarshal(l, &r) != nil || r.Status != batch.StatusFailed || r.Line < 1 {
			b.Write(l) // openResults judges the rest
			continue
		}
		g := (r.Line - 1) / size
		results, ok := groups[g]
		if !ok {
			res, err := c.Group(ctx, id, g)
			if errors.Is(err, batch.ErrNotFound) {
				cut = g * size // the group never started: this run runs it
				break
			}
			if err != nil {
				return fmt.Errorf("%s: check line %d against the batch's record: %w", out, r.Line, err)
			}
			results = map[int]batch.Result{}
			for _, e := range res.Results {
				results[e.Line] = e
			}
			groups[g] = results
		}
		if e, ok := results[r.Line]; ok && e.Status == batch.StatusCompleted {
			e.ID = cmp.Or(e.ID, r.ID)
			enc, err := json.Marshal(e)
			if err != nil {
				return err
			}
			b.Write(append(enc, '\n'))
			repaired++
			continue
		}
		b.Write(l)
	}
	if cut >= 0 {
		// Keep only the lines before the group that never ran.
		var kept bytes.Buffer
		for _, l := range bytes.SplitAfter(b.Bytes(), []byte("\n")) {
			var r batch.Result
			if json.Unmarshal(l, &r) == nil && r.Line > cut {
				break
			}
			kept.Write(l)
		}
		b = kept
	}
	if repaired == 0 && cut < 0 {
		return nil
	}
	tmp := out + ".repair"
	if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, out); err != nil {
		return err
	}
	if repaired > 0 {
		fmt.Fprintf(io.err, "vibe: %s: %d lines said failed for items that completed; rewritten from the batch's record\n", out, repaired)
	}
	if cut >= 0 {
		fmt.Fprintf(io.err, "vibe: %s: cut back to line %d: the group after it never started, and runs now\n", out, cut)
	}
	return nil
}

// openResults opens where result lines go. An --out file that holds lines
// of an earlier run is continued after its last complete line (a torn
// last line is cut off), and opts.After is set to it.
func openResults(io stdio, out string, opts *batch.Options) (w goio.Writer, flush, closeOut func(), err error) {
	if out == "" || out == "-" {
		return io.out, func() {}, func() {}, nil
	}
	f, err := os.OpenFile(out, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, nil, err
	}
	keep, last, err := lastResult(f)
	if err != nil {
		f.Close()
		return nil, nil, nil, fmt.Errorf("%s: %w", out, err)
	}
	if err := f.Truncate(keep); err != nil {
		f.Close()
		return nil, nil, nil, err
	}
	if _, err := f.Seek(keep, goio.SeekStart); err != nil {
		f.Close()
		return nil, nil, nil, err
	}
	if last > 0 {
		fmt.Fprintf(io.err, "vibe: %s holds results up to line %d; going on after it\n", out, last)
	}
	opts.After = last
	bw := bufio.NewWriter(f)
	return bw, func() { bw.Flush() }, func() { bw.Flush(); f.Close() }, nil
}

// lastResult reads a results file: the length of its complete lines and
// the input line of the last one.
func lastResult(f *os.File) (keep int64, line int, err error) {
	r := bufio.NewReaderSize(f, 1<<20)
	var off int64
	for {
		b, err := r.ReadBytes('\n')
		if len(b) > 0 && b[len(b)-1] == '\n' {
			var res batch.Result
			if json.Unmarshal(bytes.TrimSpace(b), &res) != nil || res.Line <= line {
				return 0, 0, fmt.Errorf("line %d is not a result line of a batch (a JSON object with a \"line\" after %d): use another --out", line+1, line)
			}
			off += int64(len(b))
			keep, line = off, res.Line
		}
		if err == goio.EOF {
			return keep, line, nil
		}
		if err != nil {
			return 0, 0, err
		}
	}
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
func batchClient(ctx context.Context, io stdio, ef *engineFlags, wf *workerFlags, reg *registry.Registry) (*batch.Client, func(), error) {
	if c, ok := ef.runningServer(); ok {
		if err := wf.modelUnused(ef, "the vibe serve at "+c.BaseURL); err != nil {
			return nil, nil, err
		}
		eng, err := ef.attach(ctx, quietLogger())
		if err == nil {
			return batch.NewClient(&process.Client{Temporal: eng.Client(), Registry: reg}), func() { eng.Close() }, nil
		}
		if !errors.Is(err, engine.ErrNotRunning) {
			return nil, nil, err
		}
	}
	l, err := startLocal(ctx, io, ef, wf, reg, quietLogger())
	if err != nil {
		return nil, nil, err
	}
	return l.Batches, func() { l.Close() }, nil
}

// progress shows a batch's progress on stderr: a bar on a terminal, a
// line every few seconds otherwise. Both start at the lines an earlier run
// wrote; the rates and the time left are this run's.
type progress struct {
	io    stdio
	id    string
	total int // the input's lines; -1 when unknown
	bar   *progressbar.ProgressBar
	mu    sync.Mutex
	last  time.Time
}

// newProgress shows a batch over total lines (-1: unknown) of which an
// earlier run wrote those up to after.
func newProgress(io stdio, id string, total, after int) *progress {
	p := &progress{io: io, id: id, total: total, last: time.Now()}
	if f, ok := io.err.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		// The bar's own rate would count the lines of earlier runs as
		// read in its first instant: the description gives this run's.
		p.bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(f), progressbar.OptionSetDescription("batch "+id),
			progressbar.OptionShowCount(), progressbar.OptionThrottle(200*time.Millisecond), progressbar.OptionClearOnFinish())
		p.bar.Set(after)
	}
	return p
}

// update shows s, this run's totals so far, and line, the last input line
// written.
func (p *progress) update(s batch.Summary, line int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		p.bar.Describe(fmt.Sprintf("batch %s: %s", p.id, p.rates(s, line)))
		p.bar.Set(line)
		return
	}
	if time.Since(p.last) >= 5*time.Second {
		p.last = time.Now()
		at := fmt.Sprintf("line %d", line)
		if p.total >= 0 {
			at += fmt.Sprintf(" of %d", p.total)
		}
		fmt.Fprintf(p.io.err, "vibe: batch %s: %s; %s\n", p.id, at, p.rates(s, line))
	}
}

// rates says what this run did and, at its pace, how long the rest takes.
func (p *progress) rates(s batch.Summary, line int) string {
	rate := 0.0
	if s.Elapsed > 0 {
		rate = float64(s.Lines) / s.Elapsed.Seconds()
	}
	out := fmt.Sprintf("this run %d ok, %d failed, %.1f items/s, %d tokens", s.Done, s.Failed, rate, s.Usage.Total())
	if rate > 0 && p.total > line {
		out += fmt.Sprintf(", about %s left", time.Duration(float64(p.total-line)/rate*float64(time.Second)).Round(time.Second))
	}
	return out
}

// note prints a line between the progress updates.
func (p *progress) note(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		p.bar.Clear()
	}
	fmt.Fprintln(p.io.err, msg)
}

func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		p.bar.Finish()
	}
}

// followProvider notes, between the progress updates, where the batch's
// provider batches are whenever that changes, until done is closed: a
// provider batch may take hours, and the progress does not move while it
// runs.
func followProvider(ctx context.Context, c *batch.Client, id string, p *progress, done <-chan struct{}) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-done:
			cancel()
		case <-ctx.Done():
		}
	}()
	read := func(ctx context.Context) (string, error) {
		st, err := c.Status(ctx, id)
		if err != nil {
			return "", err
		}
		return providerText(st.Provider), nil
	}
	// A read that shows nothing (no provider batch yet, or none left)
	// leaves the last note standing.
	same := func(last, now string) bool { return now == "" || now == last }
	for text, err := range watch.Changes(ctx, read, watch.Options[string]{Interval: 5 * time.Second, Equal: same}) {
		if err == nil && text != "" {
			p.note("vibe: provider batches: " + text)
		}
	}
}

// providerText says where a batch's provider batches are: each one's id,
// status and answers, and the calls gathering for the next.
func providerText(pr *batch.ProviderState) string {
	if pr == nil {
		return ""
	}
	var parts []string
	for _, f := range pr.Flights {
		switch {
		case f.ID == "":
			parts = append(parts, fmt.Sprintf("%d requests being submitted", f.Requests))
		default:
			parts = append(parts, fmt.Sprintf("%s %s, %d of %d requests answered", f.ID, f.Status, f.Answered, f.Requests))
		}
	}
	if pr.Pending > 0 {
		parts = append(parts, fmt.Sprintf("%d calls gathering for the next", pr.Pending))
	}
	return strings.Join(parts, "; ")
}

// dryRunBatch prints what the batch would ask of the model — requests and
// prompt tokens per LLM chunk, and their cost at prices — without running
// anything or starting an engine.
func dryRunBatch(ctx context.Context, io stdio, reg *registry.Registry, in goio.Reader, opts batch.Options, prices *llm.Prices, model string) error {
	c := batch.NewClient(&process.Client{Registry: reg})
	est, err := c.Estimate(ctx, in, opts)
	if err != nil {
		return err
	}
	how := "one HTTP request each"
	if opts.Call.ProviderBatch {
		how = "through the provider's Batch API"
	}
	fmt.Fprintf(io.out, "batch %s: %d items in %d groups of up to %d; the model calls go %s\n", opts.ID, est.Items, est.Groups, cmp.Or(opts.Size, batch.DefaultSize), how)
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
	return nil
}

func newBatchesCmd(io stdio) *cobra.Command {
	var (
		ef      engineFlags
		results bool
		after   int
		pf      pricesFlag
		cancel  bool
		lf      listFlags
	)
	cmd := &cobra.Command{
		Use:   "batches [ID] [--results | --cancel] [--json]",
		Short: "List batches, show one, print its result lines, or cancel it",
		Example: `  vibe batches                       # the batches, newest first
  vibe batches --json
  vibe batches review-1a2b3c            # one batch's counts (JSON)
  vibe batches review-1a2b3c --results  # its result lines (JSONL)
  vibe batches review-1a2b3c --cancel`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeBatchIDs(&ef),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if ef.noData() {
				// Nothing has run here: say so without creating the
				// data directory.
				if len(args) == 0 {
					return listPages(io, &lf, func(process.ListOptions) ([]batch.Status, string, error) { return nil, "", nil },
						func(s batch.Status) time.Time { return s.StartedAt }, "ID\tPROCESS\tSTATUS", func(batch.Status) string { return "" })
				}
				return fmt.Errorf("%w: %s (there is no data directory %s: nothing has run here; give --data DIR or set VIBE_DATA)", batch.ErrNotFound, args[0], ef.data)
			}
			p, done, err := connectEngine(ctx, io, &ef)
			if err != nil {
				return err
			}
			defer done()
			c := &batch.Client{Processes: p}
			prices, err := pf.load()
			if err != nil {
				return err
			}
			switch {
			case len(args) == 0:
				head := "ID\tPROCESS\tSTATUS\tITEMS\tDONE\tFAILED\tWAITING\tREQUESTS\tSTARTED"
				if prices != nil {
					head += "\tCOST (" + prices.Currency + ")"
				}
				return listPages(io, &lf, func(opts process.ListOptions) ([]batch.Status, string, error) { return c.List(ctx, opts) },
					func(s batch.Status) time.Time { return s.StartedAt }, head,
					func(s batch.Status) string {
						row := fmt.Sprintf("%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s", s.ID, s.Process, s.Status, s.Items, s.Done, s.Failed, s.Waiting, s.Requests, s.StartedAt.Local().Format(time.DateTime))
						if prices != nil {
							cost := "-"
							if c, ok := prices.Cost(s.Model, s.Usage, false); ok {
								cost = strings.TrimSuffix(prices.Format(c), " "+prices.Currency)
							}
							row += "\t" + cost
						}
						return row
					})
			case cancel:
				if err := c.Cancel(ctx, args[0]); err != nil {
					return err
				}
				fmt.Fprintf(io.err, "vibe: batch %s cancelled: its groups, its provider batches and its record; a vibe batch still reading its input stops at its next group\n", args[0])
				return nil
			case results:
				enc := json.NewEncoder(io.out)
				return c.Results(ctx, args[0], batch.ResultsOptions{After: after}, func(r batch.Result) error { return enc.Encode(r) })
			default:
				st, err := c.Status(ctx, args[0])
				if err != nil {
					return err
				}
				b, _ := jsonMarshalIndent(st)
				if _, err = fmt.Fprintln(io.out, string(b)); err != nil {
					return err
				}
				if words := costWords(prices, st.Model, st.Usage); words != "" {
					fmt.Fprintf(io.err, "vibe: batch %s: %s\n", st.ID, strings.TrimPrefix(words, "; "))
				}
				if st.Waiting > 0 {
					if ids, _ := c.Waiting(ctx, st.ID); len(ids) > 0 {
						fmt.Fprintf(io.err, "vibe: batch %s: %d item(s) wait for a person: %s; answer each with vibe answer ID JSON, or in the console's inbox\n", st.ID, len(ids), idList(ids, 20))
					}
				}
				return nil
			}
		},
	}
	ef.add(cmd)
	pf.add(cmd)
	cmd.Flags().BoolVar(&results, "results", false, "print the batch's result lines (JSONL), waiting for those still running")
	cmd.Flags().IntVar(&after, "after", 0, "with --results: start after this input line")
	cmd.Flags().BoolVar(&cancel, "cancel", false, "cancel the batch: its items stop, its provider batches are cancelled at the provider")
	lf.add(cmd, "batches")
	return cmd
}

// connectEngine returns a process client on the engine of the vibe serve
// that has the data directory, or on one started here with a worker that
// only answers queries.
func connectEngine(ctx context.Context, io stdio, ef *engineFlags) (*process.Client, func(), error) {
	if _, ok := ef.runningServer(); ok {
		eng, err := ef.attach(ctx, quietLogger())
		if err == nil {
			p := &process.Client{Temporal: eng.Client()}
			batch.NewClient(p) // items are read in their groups
			return p, func() { eng.Close() }, nil
		}
	}
	l, err := startLocal(ctx, io, ef, nil, nil, quietLogger())
	if err != nil {
		return nil, nil, err
	}
	return l.Processes, func() { l.Close() }, nil
}

// tokens says what a usage counts: "P prompt + C completion tokens", and
// the prompt's share the provider read from its cache when there is one.
func tokens(u llm.Usage) string {
	s := fmt.Sprintf("%d prompt + %d completion tokens", u.PromptTokens, u.CompletionTokens)
	if u.CachedPromptTokens > 0 {
		s += fmt.Sprintf(" (%d of the prompt's from the provider's cache, %.0f%%)", u.CachedPromptTokens, 100*float64(u.CachedPromptTokens)/float64(max(u.PromptTokens, 1)))
	}
	if b := u.Batched; b != nil && b.Total() > 0 {
		if b.Total() == u.Total() {
			s += ", all through the provider's Batch API"
		} else {
			s += fmt.Sprintf(", %d of them through the provider's Batch API", b.Total())
		}
	}
	return s
}

// pricesFlag is --prices: the prices file that turns tokens into money.
type pricesFlag struct{ file string }

func (f *pricesFlag) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.file, "prices", os.Getenv("VIBE_PRICES"), "a prices `FILE` (per model and million tokens: input, cachedInput, cacheWrite, output, batchDiscount) to show what the tokens cost; default $VIBE_PRICES, else "+defaultPricesFile()+" when it exists")
}

// defaultPricesFile is where a prices file is looked for when --prices
// and $VIBE_PRICES give none: vibe/prices.json in the user's config
// directory.
func defaultPricesFile() string {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "~/.config/vibe/prices.json"
	}
	return filepath.Join(dir, "vibe", "prices.json")
}

// load reads the prices file: --prices, $VIBE_PRICES or the default one
// when it exists; nil when there is none.
func (f *pricesFlag) load() (*llm.Prices, error) {
	file := f.file
	if file == "" {
		if _, err := os.Stat(defaultPricesFile()); err != nil {
			return nil, nil
		}
		file = defaultPricesFile()
	}
	return llm.LoadPrices(file)
}

// costWords says what usage u of model costs at p, as the words a summary
// ends with: "; cost 0.0123 USD (prices …)", or why there is no cost;
// nothing without prices or a model.
func costWords(p *llm.Prices, model string, u llm.Usage) string {
	if p == nil || model == "" {
		return ""
	}
	c, ok := p.Cost(model, u, false)
	if !ok {
		return fmt.Sprintf("; no price for %s in %s", model, p.File)
	}
	if u.Batched != nil && u.Batched.Total() > 0 {
		return fmt.Sprintf("; cost %s, the batch discount taken off what went through the Batch API (prices: %s)", p.Format(c), p.File)
	}
	return fmt.Sprintf("; cost %s (prices: %s)", p.Format(c), p.File)
}

// idList joins ids, the first limit of them, saying how many more there
// are.
func idList(ids []string, limit int) string {
	if len(ids) <= limit {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ids[:limit], ", "), len(ids)-limit)
}
