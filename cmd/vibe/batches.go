package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/process"
)

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
		Short: "List batches and replays, show one, print its result lines, or cancel it",
		Example: `  vibe batches                       # the batches, newest first
  vibe batches --json
  vibe batches review-1a2b3c            # one batch's counts (JSON)
  vibe batches review-1a2b3c --results  # its result lines (JSONL)
  vibe batches review-1a2b3c --cancel`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeBatchIDs(&ef),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			switch {
			case results && cancel:
				return usageError{errors.New("give --results or --cancel, not both")}
			case (results || cancel) && len(args) == 0:
				return usageError{errors.New("--results and --cancel need the batch's ID")}
			case after < 0:
				return usageError{fmt.Errorf("--after %d: give an input line, 0 or more", after)}
			case cmd.Flags().Changed("after") && !results:
				return usageError{errors.New("--after goes with --results")}
			}
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
			c, ok := p.Hosts.(*batch.Client) // the engine's: it says when a full disk holds the batches
			if !ok {
				c = &batch.Client{Processes: p}
			}
			prices, err := pf.load()
			if err != nil {
				return err
			}
			switch {
			case len(args) == 0:
				head := "ID\tPROCESS\tKIND\tSTATUS\tITEMS\tDONE\tFAILED\tWAITING\tREQUESTS\tSTARTED"
				if prices != nil {
					head += "\tCOST (" + prices.Currency + ")"
				}
				return listPages(io, &lf, func(opts process.ListOptions) ([]batch.Status, string, error) { return c.List(ctx, opts) },
					func(s batch.Status) time.Time { return s.StartedAt }, head,
					func(s batch.Status) string {
						row := fmt.Sprintf("%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s", s.ID, s.Process, cmp.Or(s.Kind, "batch"), s.Status, s.Items, s.Done, s.Failed, s.Waiting, s.Requests, s.StartedAt.Local().Format(time.DateTime))
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
			bc := batch.NewClient(p)
			bc.Held = eng.Space // a full disk holds every batch's work
			p.Hosts = bc        // items are read in their groups
			return p, func() { eng.Close() }, nil
		}
	}
	l, err := startLocal(ctx, io, ef, nil, nil, quietLogger())
	if err != nil {
		return nil, nil, err
	}
	return l.Processes, func() { l.Close() }, nil
}

// idList joins ids, the first limit of them, saying how many more there
// are.
func idList(ids []string, limit int) string {
	if len(ids) <= limit {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ids[:limit], ", "), len(ids)-limit)
}
