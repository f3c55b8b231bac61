package main

import (
	"context"
	"fmt"
	goio "io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/process"
)

func newShowCmd(io stdio) *cobra.Command {
	var (
		pf     pricesFlag
		asJSON bool
	)
	cmd := readCmd(io, "show ID [--json]", "Print a process: status, its chunks, what it waits for, its output", exactArgs(1),
		func(ctx context.Context, p processes, args []string) error {
			prices, err := pf.load()
			if err != nil {
				return err
			}
			info, err := p.Get(ctx, args[0])
			if err != nil {
				return err
			}
			if asJSON || !outputIsTerminal(io) {
				err = writeAny(io, info)
			} else {
				err = writeSummary(io.out, info, time.Now())
			}
			if err != nil {
				return err
			}
			if prices != nil {
				fmt.Fprintf(io.err, "vibe: %s: %s\n", info.ID, callsCost(prices, info.Calls))
			}
			return nil
		})
	cmd.Long = `Show prints a process. On a terminal it is a summary: the status, each chunk
with its duration and tokens, what the process waits for and how to answer,
its fire-and-forget actions, and its output (the state: every step's result)
or its error. Piped, or with --json, it is the JSON the API gives
(GET /v1/processes/{id}): every model call, thinking field and metric too.`
	cmd.Example = `  vibe show meeting-1a2b3c4d
  vibe show meeting-1a2b3c4d | jq .state
  vibe show meeting-1a2b3c4d --json > meeting.json`
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the process as JSON, the API's fields, even on a terminal")
	pf.add(cmd)
	return cmd
}

// outputIsTerminal reports whether a command writes to a terminal, where
// a person reads rather than a program.
func outputIsTerminal(io stdio) bool {
	f, ok := io.out.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// writeSummary prints a process for a person: what it is and how it
// stands, a line per chunk (how long it took, the tokens it used), what it
// waits for, its fire-and-forget actions, and its output or error. now
// measures what still runs.
func writeSummary(w goio.Writer, info *process.Info, now time.Time) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\t%s\n", info.ID, info.Process)
	status := string(info.Status)
	if !info.StartedAt.IsZero() {
		end := now
		if info.EndedAt != nil {
			end = *info.EndedAt
		}
		started := info.StartedAt.Local().Format(time.DateTime)
		if info.EndedAt != nil {
			status += fmt.Sprintf(" in %s (started %s)", duration(end.Sub(info.StartedAt)), started)
		} else {
			status += fmt.Sprintf(" (started %s, %s ago)", started, duration(end.Sub(info.StartedAt)))
		}
	}
	fmt.Fprintf(tw, "status\t%s\n", status)
	if u := info.Usage; u.Total() > 0 {
		line := tokens(u) + fmt.Sprintf(" in %d model call", len(info.Calls))
		if len(info.Calls) != 1 {
			line += "s"
		}
		if info.Replayed {
			line += ", replayed from a recording"
		}
		fmt.Fprintf(tw, "tokens\t%s\n", line)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if rows := chunkRows(info, now); len(rows) > 0 {
		fmt.Fprintln(w, "\nchunks")
		for _, r := range rows {
			fmt.Fprintln(tw, r)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if p := info.Waiting; p != nil {
		fmt.Fprintf(w, "\nwaits for a person's answer to %s; answer with\n  vibe answer %s '%s'\n", p.Chunk, info.ID, answerSkeleton(p.Schema))
	}
	for _, st := range info.Stalled {
		fmt.Fprintf(w, "\n%s\n", stalledText(st, now))
	}
	if len(info.ActionRuns) > 0 {
		fmt.Fprintln(w, "\nfire-and-forget actions")
		for _, r := range info.ActionRuns {
			fmt.Fprintf(tw, "  %s\t%s\n", r.Step, actionRunText(r))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if info.Error != nil {
		fmt.Fprintf(w, "\nerror\n  %s\n", strings.ReplaceAll(*info.Error, "\n", "\n  "))
	}
	var out jsonv.Value
	head := "output"
	switch {
	case info.Direct != nil:
		out = jsonv.ObjectValue(
			jsonv.Member{Name: "value", Value: info.Direct.Value},
			jsonv.Member{Name: "action", Value: jsonv.StringValue(info.Direct.Action)},
			jsonv.Member{Name: "result", Value: info.Direct.Result})
	case info.State.Len() > 0:
		out = info.State
		if info.Status != process.Completed {
			head = "state so far"
		}
	}
	if !out.IsNull() {
		fmt.Fprintf(w, "\n%s\n%s\n", head, jsonv.MarshalIndent(out, "  "))
	}
	return nil
}

// chunkRows are a process's chunks as table rows, in the order they ran:
// those done (✓), then the one running (…), waited on (?) or failed (✗),
// each with how long it took — a SERVER chunk's actions under it — and its
// tokens. What has not ended is measured until now, or until the process
// ended.
func chunkRows(info *process.Info, now time.Time) []string {
	if info.EndedAt != nil {
		now = *info.EndedAt
	}
	names := slices.Clone(info.Done)
	if info.Chunk != "" && !slices.Contains(names, info.Chunk) {
		names = append(names, info.Chunk)
	}
	var rows []string
	for _, ch := range names {
		mark := "✓"
		switch {
		case slices.Contains(info.Done, ch):
		case info.Status == process.Failed:
			mark = "✗"
		case info.Waiting != nil && info.Waiting.Chunk == ch:
			mark = "?"
		default:
			mark = "…"
		}
		// A row's last cell ends it: tabwriter pads only the cells before.
		row := fmt.Sprintf("  %s %s\t%s", mark, ch, spanOf(info.Timings, ch, "", now, info.EndedAt == nil))
		if u, ok := info.Steps[ch]; ok && u.Total() > 0 {
			row += fmt.Sprintf("\t%d prompt + %d completion tokens", u.PromptTokens, u.CompletionTokens)
		}
		rows = append(rows, row)
		var steps []string
		for _, t := range info.Timings {
			if t.Chunk == ch && t.Step != "" && !slices.Contains(steps, t.Step) {
				steps = append(steps, t.Step)
				rows = append(rows, fmt.Sprintf("      %s\t%s", t.Step, spanOf(info.Timings, ch, t.Step, now, info.EndedAt == nil)))
			}
		}
	}
	return rows
}

// spanOf says how long a chunk (or its step's action) ran: from its first
// start to its last end, or until now when it did not end ("so far" while
// the process runs); "" when the process kept no timings.
func spanOf(timings []process.Timing, chunk, step string, now time.Time, runs bool) string {
	var start, end time.Time
	running := false
	for _, t := range timings {
		if t.Chunk != chunk || t.Step != step {
			continue
		}
		if start.IsZero() {
			start = t.Start
		}
		if t.End == nil {
			running = true
		} else {
			end = *t.End
		}
	}
	switch {
	case start.IsZero():
		return ""
	case running && runs:
		return duration(now.Sub(start)) + " so far"
	case running:
		return duration(now.Sub(start))
	}
	return duration(end.Sub(start))
}

// duration is d for a person: milliseconds under a second, tenths of a
// second under a minute, whole seconds beyond.
func duration(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// callsCost says what a process's model calls cost at p, each by the model
// that answered it, and which models p has no price for.
func callsCost(p *llm.Prices, calls []process.ModelCall) string {
	var total float64
	var unpriced []string
	for _, c := range calls {
		if cost, ok := p.Cost(c.Model, c.Usage, false); ok {
			total += cost
		} else if !slices.Contains(unpriced, c.Model) {
			unpriced = append(unpriced, c.Model)
		}
	}
	s := fmt.Sprintf("%d model calls cost %s (prices: %s)", len(calls), p.Format(total), p.File)
	if len(unpriced) > 0 {
		s += fmt.Sprintf("; no price for %s, left out", strings.Join(unpriced, ", "))
	}
	return s
}

// stalledText says what a call that waits for a worker needs, how long it
// has waited, and what to start.
func stalledText(st process.Stalled, now time.Time) string {
	waited := duration(now.Sub(st.Since))
	switch st.Needs {
	case "model":
		if st.Queue == durable.AnyModelQueue {
			return fmt.Sprintf("waits for a worker with a model: its model call has waited %s on the task queue %s, which any worker with a model polls, and none does; start a vibe worker (or a vibe serve) with --llm", waited, st.Queue)
		}
		return fmt.Sprintf("waits for a worker with its model: its model call has waited %s on the task queue %s, which no worker polls; start a vibe serve or vibe worker with the --llm (and --llm-base-url) it was started with", waited, st.Queue)
	case "action":
		return fmt.Sprintf("waits for a worker with the action %s: its call has waited %s on the task queue %s, which no worker polls; start a vibe serve or vibe worker whose --actions-file has it", st.Action, waited, st.Queue)
	}
	return fmt.Sprintf("waits for a worker: a call has waited %s on the task queue %s, which no worker polls", waited, st.Queue)
}
