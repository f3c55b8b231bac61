package main

import (
	"encoding/json"
	"errors"
	"fmt"
	goio "io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/registry"
)

func newCalibrateCmd(io stdio) *cobra.Command {
	var (
		regDir, pipeline, in, actionsFile string
		prompt, system, ks, dataDir       string
		sampleN                           int
		threshold                         float64
		asJSON                            bool
		lf                                llmFlags
		pf                                pricesFlag
	)
	cmd := &cobra.Command{
		Use:   "calibrate PROCESS|--pipeline EXPR --in FILE.jsonl [--sample N] [--k LIST] [--threshold T] [--json]",
		Short: "Measure how many items one model call answers as well as one by one (K), and record it",
		Long: `Calibrate asks the model a sample of the items (--sample, 64) of each LLM chunk of
the process: one by one, twice — how often the model agrees with itself is the
noise floor — then K at a time in one multiplexed call, as vibe batch asks them,
for each K of --k (2, 4, 8, 16, 32, 64), and once more at the largest K with the
items in another order. An item agrees when its answer among K others is its
one-by-one answer, field by field: enums, booleans, integers and consts exactly,
numbers within a millionth, free text not at all unless the schema says how
(the keyword "compare": "exact", "text", "ignore", a tolerance, or on an object
the names of the fields to compare). A chunk of free text alone is not judged.

The chosen K is the largest whose agreement is at least --threshold (0.98) and not
significantly below the noise floor (a one-sided test at 5 %). It prints, per
chunk, a row per K: the agreement with its 95 % interval, the prompt and
completion tokens and the wall time per item, and with --prices the cost per
1,000 items; and records the choice in the data directory (--data) under what
makes the answers — the model and its endpoint, the chunk's schema and system
text — for 30 days. vibe batch on that directory then takes it (--batch-size auto).

Calibration's own model calls are counted and priced; it always calls the model
directly, at temperature 0, even for a batch that will use --provider-batch.
Chunks after a server step or a person's are not calibrated: calibration runs
no action and answers for no one.`,
		Example: `  vibe calibrate aug:processes/moderate --registry DIR --in comments.jsonl --llm openai:gpt-4o-mini --prices prices.json
  vibe calibrate --pipeline 'prompt | Assess | Decide' --registry DIR --in comments.jsonl --k 4,8,16 --json`,
		Args:              fileOrPipeline,
		ValidArgsFunction: completeProcess(&regDir),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			ctx := cmd.Context()
			pipeline, pipeFile, err := readPipeline(pipeline)
			if err != nil {
				return err
			}
			defer func() { err = inPipelineFile(err, pipeFile) }()
			if in == "" || in == "-" {
				return usageError{errors.New("give the items: --in FILE.jsonl")}
			}
			co := batch.CalibrateOptions{Sample: sampleN, Threshold: threshold, File: inputName(in)}
			if sampleN < 0 || threshold < 0 || threshold > 1 {
				return usageError{errors.New("--sample is a count of items (1 or more) and --threshold a share between 0 and 1")}
			}
			if ks != "" {
				for _, s := range strings.Split(ks, ",") {
					k, err := strconv.Atoi(strings.TrimSpace(s))
					if err != nil || k < 2 {
						return usageError{fmt.Errorf("--k %q: a comma-separated list of K, each 2 or more", ks)}
					}
					co.Ks = append(co.Ks, k)
				}
				slices.Sort(co.Ks)
			}
			if strings.HasPrefix(lf.spec, "replay:") {
				return usageError{errors.New("calibration asks the model questions a recording holds no answer to: give --llm openai:MODEL or anthropic:MODEL")}
			}
			reg, err := openRegistry(regDir)
			if err != nil {
				return err
			}
			prices, err := pf.load()
			if err != nil {
				return err
			}
			pc := &process.Client{Registry: reg}
			if actionsFile != "" {
				if pc.Actions, err = actionNames(actionsFile); err != nil {
					return err
				}
			}
			opts := batch.Options{Process: process.StartOptions{Pipeline: pipeline, Prompt: prompt, System: system}}
			if len(args) == 1 {
				if registry.IsURI(args[0]) {
					opts.Process.Process = args[0]
				} else {
					if opts.Process.Document, err = readInput(io, args[0]); err != nil {
						return err
					}
					opts.Process.File = args[0]
				}
			}
			p, err := lf.provider(io)
			if err != nil {
				return err
			}
			f, err := os.Open(in)
			if err != nil {
				return err
			}
			defer f.Close()
			cal, err := batch.NewClient(pc).Calibrate(ctx, llm.WithTemperature(p, 0), opts, f, co)
			if cal != nil {
				if asJSON {
					b, _ := json.MarshalIndent(cal, "", "  ")
					fmt.Fprintln(io.out, string(b))
				} else {
					printCalibration(io.out, cal, prices, lf.model())
				}
				fmt.Fprintf(io.err, "vibe: calibration: %d LLM requests; %s%s\n", cal.Requests, tokens(cal.Usage), costWords(prices, cmpOr(lf.model(), cal.Model), cal.Usage))
			}
			if err != nil {
				return err
			}
			store := calibrationStore(dataDir, &lf)
			if err := store.Save(cal); err != nil {
				return err
			}
			fmt.Fprintf(io.err, "vibe: recorded in %s for model %s; vibe batch --data %s takes it\n", store.Dir, store.Model, dataDir)
			return nil
		},
	}
	registryFlag(cmd, &regDir)
	lf.add(cmd)
	pf.add(cmd)
	cmd.Flags().StringVar(&pipeline, "pipeline", "", "calibrate this pipeline expression (or @FILE)")
	cmd.Flags().StringVar(&in, "in", "", "the items: a JSONL `FILE`, as vibe batch reads it")
	cmd.Flags().StringVar(&actionsFile, "actions-file", "", "the registered server actions (an actions `FILE`): which steps are the server's")
	cmd.Flags().StringVar(&prompt, "prompt", "", "the prompt of items that give none")
	cmd.Flags().StringVar(&system, "system", "", "the system text of the model calls")
	cmd.Flags().IntVar(&sampleN, "sample", 64, "the items asked")
	cmd.Flags().StringVar(&ks, "k", "", "the K to try, comma-separated (default 2,4,8,16,32,64)")
	cmd.Flags().Float64Var(&threshold, "threshold", 0.98, "the share of items that must agree for a K to be chosen")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"chunks": [{"chunk", "chosen_k", "floor", "rows": [{"k", "agreement", "low", "high", "shuffled", …}]}]}`)
	cmd.Flags().StringVar(&dataDir, "data", cmpOr(os.Getenv("VIBE_DATA"), ".vibe"), "the data directory the choice is recorded in (vibe batch --data reads it)")
	return cmd
}

// calibrationStore is where the choices for the flags' model are kept in
// the data directory.
func calibrationStore(dataDir string, lf *llmFlags) *batch.CalibrationStore {
	return &batch.CalibrationStore{Dir: filepath.Join(dataDir, "calibration"), Model: lf.spec, Endpoint: lf.baseURL}
}

// printCalibration prints a table per chunk: a row per K.
func printCalibration(w goio.Writer, cal *batch.Calibration, prices *llm.Prices, model string) {
	for i, cc := range cal.Chunks {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if !cc.Judged {
			fmt.Fprintf(w, "%s: K=%d, %s\n", cc.Chunk, cc.ChosenK, cc.Why)
			continue
		}
		fmt.Fprintf(w, "%s: %d items; the model agrees with itself on %.2f of them (95%% %.2f–%.2f), the noise floor\n", cc.Chunk, cal.Sample, cc.Floor, cc.FloorLow, cc.FloorHigh)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		cost := ""
		if prices != nil {
			cost = "\tCOST/1000 ITEMS"
		}
		fmt.Fprintf(tw, "K\tAGREEMENT\t95%% INTERVAL\tBELOW FLOOR\tPROMPT/ITEM\tCOMPLETION/ITEM\tWALL/ITEM%s\n", cost)
		for _, r := range cc.Rows {
			k := strconv.Itoa(r.K)
			if r.Shuffled {
				k += " shuffled"
			}
			if r.K == 1 {
				k += " (alone)"
			}
			below := "no"
			if r.BelowFloor {
				below = "yes"
			}
			line := fmt.Sprintf("%s\t%.2f\t%.2f–%.2f\t%s\t%.0f\t%.0f\t%.0f ms", k, r.Agreement, r.Low, r.High, below, r.PromptPer, r.OutputPer, r.WallPerItem)
			if prices != nil {
				if c, ok := prices.Cost(model, r.Usage, false); ok {
					line += "\t" + prices.Format(c*1000/float64(r.Items))
				} else {
					line += "\t-"
				}
			}
			fmt.Fprintln(tw, line)
		}
		tw.Flush()
		fmt.Fprintf(w, "%s: chosen K=%d: %s\n", cc.Chunk, cc.ChosenK, cc.Why)
	}
}

func cmpOr(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
