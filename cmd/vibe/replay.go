package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	goio "io"
	"log/slog"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/augceo/vibe"
	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/engine"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/replay"
	"github.com/augceo/vibe/replay/record"
)

func newReplayCmd(io stdio) *cobra.Command {
	var (
		data, regDir, proc, pipeline, actionsFile, out string
		name, status                                   string
		since, retention                               time.Duration
		size, sampleN, baselineN                       int
		seed                                           uint64
		baseProc, baseReg                              string
		asJSON, failOnChange, prune, providerBatch     bool
		poll                                           time.Duration
		failOn                                         []string
		lf                                             llmFlags
		pf                                             pricesFlag
	)
	cmd := &cobra.Command{
		Use:   "replay (BATCH | PROCESS-ID... | --from NAME) (--process URI|FILE | --pipeline EXPR) [--fail-on-change]",
		Short: "Replay recorded runs against a changed process, with no effects",
		Long: `Replay answers "which of these answers would come out different?" before a
change ships. It takes recorded work — a batch's items (BATCH), processes by id,
or the processes a filter selects (--from NAME, --status, --since) — and the
changed process (--process, a registry URI or a schema file, or --pipeline EXPR
with --registry), and replays each item with no effects:

  - a server step is answered with the item's recorded output when the changed
    process gives it the same input; otherwise the item stops there, "needs the
    server", and counts as changed; fire-and-forget actions are not started;
  - a person's step takes the recorded answer, or the item stops, "needs a
    person";
  - an LLM chunk whose compiled schema and instructions, inputs and model are
    unchanged takes its recorded answer; only the others are asked of the model
    (--llm), K items to a multiplexed call (--batch-size), as vibe batch asks.

Every process and batch item that ends, and every process that starts to wait
for a person, keeps a replay record in DATA/replay (the embedded engine's data
directory, --data) for 30 days, whatever the engine's own retention of
histories; --prune removes those past --retention, and the replays' reports
(DATA/replays) as old. An item that had not completed (failed, cancelled,
waiting) is replayed up to where it got and counted apart; one with no record
(it never ended nor waited, or its record was pruned) is reported as such.

--sample N replays a random sample of N items (--seed S chooses it again) and
gives the changed share's 95% interval; --baseline N asks N of them again with
the process as it was recorded (--baseline-process): the model's own noise,
beside the edit's effect.

A replay is a batch of its own: vibe batches and the console list it (kind
"replay") with its items, requests and tokens. The model's answers are kept as
they come (in DATA/replay/answers): killed, even with kill -9, the same command
run again asks none of them again and reports each item once.

With --provider-batch, the calls of a changed chunk go in one provider batch
through the provider's Batch API, at its discount; the command waits for it.

One JSON line per item goes to --out (default stdout):
  {"line": N, "id": ITEM, "changed": true|false, "outcome": "same"|"changed"|
   "needs the server"|"needs a person"|"failed"|"no record",
   "changes": [{"path": "/step/field", "before": …, "after": …}], "route": […]}
and a summary to stderr: items changed of items replayed, by field, the values
that moved, the chunks asked and reused, and the model requests and tokens the
replay cost (and, with --prices, what they cost). --json writes the whole report as one JSON object instead.
While it runs, its progress goes to stderr as vibe batch's: a bar on a terminal
(items replayed, changed so far, requests, tokens), a line every 5 s otherwise.

Exit status: 0; 1 with --fail-on-change when any item changed (or needs the
server or a person), or with --fail-on PATH when that field changed.`,
		Example: `  vibe replay moderate-3f2a9c1e --process aug:processes/moderate --registry CHANGED --llm openai:gpt-4o-mini --fail-on-change
  vibe replay --from moderate --since 72h --process moderate.json --llm openai:gpt-4o-mini --out report.jsonl
  vibe replay moderate-3f2a9c1e --pipeline 'prompt | Moderate | Record' --registry CHANGED --fail-on /moderate/verdict
  vibe replay --prune --retention 720h`,
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			ctx := cmd.Context()
			store := &record.Store{Dir: filepath.Join(data, "replay"), Retention: retention}
			if prune {
				n, err := store.Prune(time.Now())
				if err != nil {
					return err
				}
				fmt.Fprintf(io.err, "vibe: pruned %d replay files (records and kept answers) older than %s from %s\n", n, store.Retention.String(), store.Dir)
				reports := filepath.Join(data, "replays")
				ids, err := replay.PruneReports(reports, store.Retention, time.Now())
				fmt.Fprintf(io.err, "vibe: pruned %d replay reports older than %s from %s%s\n", len(ids), store.Retention.String(), reports, listed(ids, 10))
				return err
			}
			if (proc == "") == (pipeline == "") {
				return usageError{errors.New("give the changed process: --process URI|FILE, or --pipeline EXPR")}
			}
			if len(args) == 0 && name == "" && status == "" && since == 0 {
				return usageError{errors.New("give the recorded work: a batch id, process ids, or a filter (--from NAME, --status, --since)")}
			}
			if providerBatch && strings.HasPrefix(lf.spec, "replay:") {
				return usageError{errors.New("--provider-batch sends the calls through the provider's Batch API, and a recording has none: give --llm openai:MODEL or anthropic:MODEL")}
			}
			if err := checkWait("provider-batch-poll", poll); err != nil {
				return err
			}
			if poll > batch.MaxProviderPoll {
				return usageError{fmt.Errorf("--provider-batch-poll %s: give a wait of at most %s", poll, batch.MaxProviderPoll)}
			}
			pipeline, pipeFile, err := readPipeline(pipeline)
			if err != nil {
				return err
			}
			defer func() { err = inPipelineFile(err, pipeFile) }()
			reg, err := openRegistry(regDir)
			if err != nil {
				return err
			}
			pc := &process.Client{Registry: reg}
			if actionsFile != "" {
				if pc.Actions, err = actionNames(actionsFile); err != nil {
					return err
				}
			}
			prepare := func(pc *process.Client, proc, pipeline string) (*compile.Program, string, error) {
				var err error
				sopts := process.StartOptions{Pipeline: pipeline}
				switch {
				case proc == "":
				case registry.IsURI(proc):
					sopts.Process = proc
				default:
					if sopts.Document, err = readInput(io, proc); err != nil {
						return nil, "", err
					}
					sopts.File = proc
				}
				start, _, err := pc.Prepare(ctx, sopts)
				if err != nil {
					return nil, "", err
				}
				return start.Program, start.Name, nil
			}
			program, pname, err := prepare(pc, proc, pipeline)
			if err != nil {
				return err
			}
			if sampleN < 0 || baselineN < 0 {
				return usageError{errors.New("--sample and --baseline take a number of items above 0")}
			}
			if !cmd.Flags().Changed("seed") {
				seed = rand.Uint64()
			}
			ropts := replay.Options{Name: pname, Program: program, Size: size, Sample: sampleN, Seed: seed, Baseline: baselineN,
				Call: batch.CallOptions{Inline: lf.inline, ProviderBatch: providerBatch, ProviderPoll: poll}, Answers: replay.AnswersFile(store, program)}
			if baselineN > 0 {
				if baseProc == "" {
					return usageError{errors.New("--baseline needs the process as it was recorded: --baseline-process URI|FILE")}
				}
				bpc := pc
				if baseReg != "" {
					breg, err := openRegistry(baseReg)
					if err != nil {
						return err
					}
					bpc = &process.Client{Registry: breg, Actions: pc.Actions}
				}
				if ropts.Recorded, _, err = prepare(bpc, baseProc, ""); err != nil {
					return fmt.Errorf("--baseline-process: %w", err)
				}
				ropts.BaselineAnswers = replay.BaselineAnswersFile(store, ropts.Recorded)
			}
			sel := replay.Selection{IDs: args, From: name, Status: status, Since: since}
			recs, missing, err := replay.Select(store, sel)
			if err != nil {
				return err
			}
			ropts.Missing = missing
			if lf.spec != "" {
				if ropts.Provider, err = lf.provider(io); err != nil {
					return err
				}
				ropts.Model = llm.ModelOf(ropts.Provider)
			}
			rep, err := runReplay(ctx, io, data, pname, sel, program, recs, ropts)
			if err != nil {
				return err
			}
			if err := writeReport(io, rep, out, asJSON); err != nil {
				return err
			}
			prices, err := pf.load()
			if err != nil {
				return err
			}
			summarize(io.err, rep, costWords(prices, lf.model(), rep.Summary.Usage))
			if failOnChange && rep.AnyChanged() {
				return fmt.Errorf("%d of %d items replayed changed (--fail-on-change)", rep.Summary.Changed+rep.Summary.NeedsServer+rep.Summary.NeedsPerson+rep.Summary.Failed, rep.Summary.Replayed)
			}
			for _, p := range failOn {
				if rep.ChangedAt(p) {
					return fmt.Errorf("%s changed (--fail-on %s)", p, p)
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&data, "data", cmp.Or(os.Getenv("VIBE_DATA"), engine.DefaultDataDir), "data directory whose replay records are read (DATA/replay); $VIBE_DATA gives the default")
	registryFlag(cmd, &regDir)
	cmd.Flags().StringVar(&proc, "process", "", "the changed process: a registry `URI` or a process schema FILE")
	cmd.Flags().StringVar(&pipeline, "pipeline", "", "the changed process as a pipeline expression (or @FILE)")
	cmd.Flags().StringVar(&actionsFile, "actions-file", "", "the server actions' file, for their names (none is called)")
	cmd.Flags().StringVar(&name, "from", "", "replay the recorded processes of this process `NAME` (not a batch's items)")
	cmd.Flags().StringVar(&status, "status", "", "with a filter: only the processes that ended in this status (completed, failed, running, waiting)")
	cmd.Flags().DurationVar(&since, "since", 0, "with a filter: only the processes that ended within this long before now")
	cmd.Flags().IntVar(&size, "batch-size", 0, fmt.Sprintf("K, items per model call of a changed chunk (default %d)", batch.DefaultSize))
	cmd.Flags().IntVar(&sampleN, "sample", 0, "replay a random sample of `N` of the recorded items; the summary gives the changed share's 95% interval")
	cmd.Flags().Uint64Var(&seed, "seed", 0, "with --sample: the seed that chooses the sample (default: drawn at random, and said in the summary)")
	cmd.Flags().IntVar(&baselineN, "baseline", 0, "ask `N` of the items again with the process as it was recorded (--baseline-process), at the same K and positions: the model's own noise")
	cmd.Flags().StringVar(&baseProc, "baseline-process", "", "with --baseline: the process as it was recorded, a registry `URI` or a process schema FILE")
	cmd.Flags().StringVar(&baseReg, "baseline-registry", "", "with --baseline: the registry `DIR` the recorded process resolves in (default --registry)")
	cmd.Flags().StringVar(&out, "out", "", "write the report's lines to `FILE`; default stdout")
	cmd.Flags().BoolVar(&asJSON, "json", false, "write the whole report, items and summary, as one JSON object")
	cmd.Flags().BoolVar(&failOnChange, "fail-on-change", false, "exit 1 when any item changed (a CI gate)")
	cmd.Flags().StringArrayVar(&failOn, "fail-on", nil, "exit 1 when the field at this `PATH` (/step/field) changed in any item; repeatable")
	cmd.Flags().BoolVar(&prune, "prune", false, "remove the replay records and the replays' reports (DATA/replays) past --retention, and do nothing else")
	cmd.Flags().DurationVar(&retention, "retention", record.DefaultRetention, "with --prune: how long records and reports are kept")
	cmd.Flags().BoolVar(&providerBatch, "provider-batch", false, "send a changed chunk's calls through the provider's Batch API (OpenAI, Anthropic), all in one provider batch: half price, answered within 24 hours")
	cmd.Flags().DurationVar(&poll, "provider-batch-poll", 0, fmt.Sprintf("with --provider-batch: the first wait between looks at a provider batch, growing by half each time up to %s (default %s)", batch.MaxProviderPoll, batch.DefaultProviderPoll))
	lf.add(cmd)
	pf.add(cmd)
	return cmd
}

// runReplay runs a replay as a batch of its own on the engine of the data
// directory (a vibe serve's, or one started here): its record is listed
// by vibe batches and the console.
func runReplay(ctx context.Context, io stdio, data, name string, sel replay.Selection, program any, recs []record.Record, opts replay.Options) (*replay.Report, error) {
	id, err := replay.ID(name, sel, recs, program, opts)
	if err != nil {
		return nil, err
	}
	p, done, err := connectEngine(ctx, io, &engineFlags{data: data, namespace: engine.DefaultNamespace})
	if err != nil {
		return nil, err
	}
	defer done()
	fmt.Fprintf(io.err, "vibe: replay %s: %d items (vibe batches %s shows it; killed, the same command goes on)\n", id, len(recs)+len(opts.Missing), id)
	total := len(recs) // the items replayed: a sample's, or all with a record
	if opts.Sample > 0 {
		total = min(total, opts.Sample)
	}
	bar, show := replayProgress(io, id, total)
	opts.Progress = show
	rep, err := replay.RunKept(ctx, batch.NewClient(p), id, recs, opts)
	bar.finish()
	if err != nil {
		return nil, err
	}
	// The console's page of the replay shows it.
	return rep, replay.SaveReport(filepath.Join(data, "replays"), id, rep)
}

// writeReport writes the report's lines to out (stdout for ""), or the
// whole report as one object.
func writeReport(io stdio, rep *replay.Report, out string, whole bool) error {
	var w goio.Writer = io.out
	if out != "" {
		f, err := os.Create(out)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if whole {
		return enc.Encode(rep)
	}
	for _, it := range rep.Items {
		if err := enc.Encode(it); err != nil {
			return err
		}
	}
	return nil
}

// summarize writes the report's summary for a person.
func summarize(w goio.Writer, rep *replay.Report, cost string) {
	s := rep.Summary
	fmt.Fprintf(w, "vibe: replayed %d of %d items: %d changed, %d same", s.Replayed, s.Items, s.Changed, s.Same)
	for _, c := range []struct {
		n    int
		what string
	}{{s.NeedsServer, "need the server"}, {s.NeedsPerson, "need a person"}, {s.Failed, "failed"}, {s.NoRecord, "have no record"}} {
		if c.n > 0 {
			fmt.Fprintf(w, ", %d %s", c.n, c.what)
		}
	}
	if s.Unfinished > 0 {
		var by []string
		for _, st := range slices.Sorted(maps.Keys(s.UnfinishedBy)) {
			by = append(by, fmt.Sprintf("%d %s", s.UnfinishedBy[st], st))
		}
		fmt.Fprintf(w, ", %d had not completed when recorded (%s: replayed up to where they got)", s.Unfinished, strings.Join(by, ", "))
	}
	fmt.Fprintln(w)
	if s.Sample != nil {
		fmt.Fprintf(w, "  a random sample of %d of %d recorded items (--seed %d chooses it again)\n", s.Sample.Items, s.Sample.Of, s.Sample.Seed)
	}
	if sh := s.Share; sh != nil && (s.Sample != nil || s.Baseline != nil) {
		fmt.Fprintf(w, "vibe: changed %d of %d (%s, 95%% %s–%s)", sh.Changed, sh.Of, percent(sh.Rate), percentNum(sh.Low), percent(sh.High))
		if b := s.Baseline; b != nil && b.Share != nil {
			fmt.Fprintf(w, "; the unchanged process changes %d of %d (%s, 95%% %s–%s): the edit's effect beyond noise ≈ %s",
				b.Share.Changed, b.Share.Of, percent(b.Share.Rate), percentNum(b.Share.Low), percent(b.Share.High), percent(*s.Beyond))
		}
		fmt.Fprintln(w)
	}
	for _, f := range topCounts(s.Fields, 10) {
		fmt.Fprintf(w, "  %s changed in %d items\n", f, s.Fields[f])
	}
	for _, m := range topCounts(s.Moves, 10) {
		fmt.Fprintf(w, "  %s  %d\n", m, s.Moves[m])
	}
	var asked []string
	for _, c := range slices.Sorted(maps.Keys(s.Asked)) {
		asked = append(asked, fmt.Sprintf("%s %d", c, s.Asked[c]))
	}
	if len(asked) == 0 {
		asked = []string{"none"}
	}
	resumed := ""
	if s.Resumed > 0 {
		resumed = fmt.Sprintf(" (%d answers taken from an earlier run of this replay)", s.Resumed)
	}
	fmt.Fprintf(w, "vibe: chunks asked again: %s%s; answers reused: %d; actions not run: %d; %d LLM requests, %s%s\n",
		strings.Join(asked, ", "), resumed, sumCounts(s.Reused), s.ActionsSkipped, s.Requests, tokens(s.Usage), cost)
	if b := s.Baseline; b != nil {
		fmt.Fprintf(w, "vibe: the baseline asked %d items again with the unchanged process: %d LLM requests, %s (apart from the above)\n",
			b.Items, b.Requests, tokens(b.Usage))
	}
}

// percent writes a share as a percentage, to a tenth when it needs one:
// "4 %", "18.5 %".
func percent(x float64) string { return percentNum(x) + " %" }

func percentNum(x float64) string {
	return strconv.FormatFloat(math.Round(x*1000)/10, 'f', -1, 64)
}

// topCounts are the n keys of counts with the largest counts, largest
// first.
func topCounts(counts map[string]int, n int) []string {
	keys := slices.Sorted(maps.Keys(counts))
	slices.SortStableFunc(keys, func(a, b string) int { return counts[b] - counts[a] })
	if len(keys) > n {
		keys = keys[:n]
	}
	return keys
}

func sumCounts(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// listed is ": " and the first n of ids, "" for none: what a message
// names of what it counts.
func listed(ids []string, n int) string {
	switch {
	case len(ids) == 0:
		return ""
	case len(ids) > n:
		return fmt.Sprintf(": %s and %d more", strings.Join(ids[:n], ", "), len(ids)-n)
	}
	return ": " + strings.Join(ids, ", ")
}

// pruneReports removes the replays' reports (DATA/replays, beside the
// records' DATA/replay) past the records' retention, as a worker's start
// prunes the records themselves (vibe.Start): a command that runs work
// keeps the data directory from growing without `vibe replay --prune`.
// What it cannot remove is logged, not fatal.
func pruneReports(rt *vibe.Runtime, logger *slog.Logger) {
	logger = cmp.Or(logger, slog.Default())
	if rt.Records == nil || rt.Records.Dir == "" {
		return
	}
	dir := filepath.Join(filepath.Dir(rt.Records.Dir), "replays")
	ids, err := replay.PruneReports(dir, rt.Records.Retention, time.Now())
	if err != nil {
		logger.Warn("replay reports not pruned", "dir", dir, "error", err)
	} else if len(ids) > 0 {
		logger.Info("pruned replay reports", "dir", dir, "ids", ids)
	}
}
