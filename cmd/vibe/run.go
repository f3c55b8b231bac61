package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/api/serviceerror"
	"golang.org/x/term"

	"github.com/augceo/vibe/api"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/schema"
)

// connect returns the processes of the vibe serve that has the data
// directory, or starts the engine here: with a full worker when work may
// run (run, answer), with a query-only worker otherwise (show).
func connect(ctx context.Context, io stdio, ef *engineFlags, wf *workerFlags, reg *registry.Registry) (processes, func(), error) {
	if c, ok := ef.runningServer(); ok {
		if err := wf.modelUnused(ef, "the vibe serve at "+c.BaseURL); err != nil {
			return nil, nil, err
		}
		return c, func() {}, nil
	}
	l, err := startLocal(ctx, io, ef, wf, reg, quietLogger())
	if err != nil {
		return nil, nil, err
	}
	if wf == nil {
		return l.Processes, func() { l.Close() }, nil
	}
	return l.Processes, func() { closeDraining(io, l, wf.drain) }, nil
}

func newRunCmd(io stdio) *cobra.Command {
	var (
		ef                                      engineFlags
		wf                                      workerFlags
		regDir, prompt, input, answer, pipeline string
		name                                    string
		waitActions                             time.Duration
	)
	cmd := &cobra.Command{
		Use:   "run PROCESS|--pipeline EXPR [--prompt T] [--input J] [--answer J] [--name N]",
		Short: "Start a process and follow it",
		Long: `Run starts a process — a registry URI (aug:processes/schedule-meeting), a process
schema file, or --pipeline EXPR (or @FILE) — and shows each chunk as it finishes.
--name labels it in vibe ps and the console; a pipeline's label is made of its
steps' names (triage-ticket+draft-reply). A pipeline that begins with the bare
name prompt needs --prompt; a process started without --prompt or --input is
warned of.

It uses the vibe serve that has --data if one runs; otherwise it starts the
embedded engine itself. When the process waits for a person it asks on the
terminal; --answer J answers non-interactively; without a terminal it prints
how to answer (vibe answer ID J) and leaves the process waiting, durably.

A process does not wait for its fire-and-forget actions; vibe run does. Once
the process completes, run on its own engine waits up to --wait-actions (5m)
for them to settle, showing each retry; when some are still pending then
(or with --wait-actions 0), it names them, where they will run and the
command that runs them (vibe serve on the same data directory), and exits 1:
nothing runs them while no command runs on that engine. An action's call still
in flight when it exits finishes first, for up to --drain (30s). Through a running
vibe serve it says which are pending: the serve's worker runs them.

J is JSON, or @FILE.`,
		Example: `  vibe run aug:processes/schedule-meeting --registry examples/schedule-meeting/registry \
      --actions-file actions.json --llm openai:gpt-4o-mini --prompt "Meet Bob on Friday"
  vibe run process.json --input @start.json --answer '{"confirm": {"approve": true}}'
  vibe run --pipeline 'identifyParticipants | draftInvitation' --registry DIR --llm replay:answers.jsonl --prompt "…"`,
		Args:              fileOrPipeline,
		ValidArgsFunction: completeProcess(&regDir),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if err := checkWait("wait-actions", waitActions); err != nil {
				return err
			}
			if err := checkWait("drain", wf.drain); err != nil {
				return err
			}
			reg, err := openRegistry(regDir)
			if err != nil {
				return err
			}
			expr, pipeFile, err := readPipeline(pipeline)
			if err != nil {
				return err
			}
			opts := process.StartOptions{Prompt: prompt, Pipeline: expr, Name: name}
			if len(args) == 1 {
				if registry.IsURI(args[0]) {
					opts.Process = args[0]
				} else {
					if opts.Document, err = readInput(io, args[0]); err != nil {
						return err
					}
					opts.File = inputName(args[0])
				}
			}
			if input != "" {
				if opts.Input, err = parseJSONArg("--input", input); err != nil {
					return err
				}
			}
			var ans jsonv.Value
			if answer != "" {
				if ans, err = parseJSONArg("--answer", answer); err != nil {
					return err
				}
			}
			if err := checkPrompt(io, opts, reg); err != nil {
				return err
			}
			p, done, err := connect(ctx, io, &ef, &wf, reg)
			if err != nil {
				return err
			}
			defer done()
			started, err := p.Start(ctx, opts)
			if err != nil {
				return inPipelineFile(err, pipeFile)
			}
			fmt.Fprintf(io.err, "vibe: started %s\n", started.ID)
			if _, local := p.(*process.Client); local && ef.temporal == "" {
				// A later command on the data directory (vibe answer ID J,
				// typed without the flags) finishes it with what it needs.
				if err := recordNeeds(ef.data, started.ID, &wf); err != nil {
					fmt.Fprintf(io.err, "vibe: warning: what %s needs (its actions file, its model) is not recorded: %v\n", started.ID, err)
				}
			}
			if len(started.Unread) > 0 {
				fmt.Fprintf(io.err, "vibe: warning: %s\n", unreadText(started.Unread))
			}
			if err := follow(ctx, io, p, started.ID, ans, true); err != nil {
				return err
			}
			return settleActions(ctx, io, p, started.ID, waitActions, ef.actionsRunWhere(p))
		},
	}
	ef.add(cmd)
	wf.add(cmd)
	wf.addExitDrain(cmd)
	registryFlag(cmd, &regDir)
	cmd.Flags().StringVar(&prompt, "prompt", "", "the person's request")
	cmd.Flags().StringVar(&input, "input", "", "data the process starts with (JSON or @FILE)")
	cmd.Flags().StringVar(&answer, "answer", "", "the answer to give when the process waits for a person (JSON or @FILE)")
	cmd.Flags().StringVar(&pipeline, "pipeline", "", "run this pipeline expression (or @FILE)")
	cmd.Flags().StringVar(&name, "name", "", "label the process with `NAME` in vibe ps and the console (default: the process's name; a pipeline's steps')")
	cmd.Flags().DurationVar(&waitActions, "wait-actions", defaultWaitActions, "on its own engine, wait up to `D` after the process completes for its fire-and-forget actions to settle; exit 1 when some are still pending (0: do not wait)")
	return cmd
}

// unreadText says that no step reads what of the input names names
// (compile.Program.UnreadInput), and why.
func unreadText(names []string) string {
	what := "the input"
	if len(names) > 1 || names[0] != "" {
		what = "the input's " + strings.Join(names, ", ")
	}
	return "no step reads " + what + ": a model is sent only what its steps reference, and only a server step that references nothing is given the input"
}

func newAnswerCmd(io stdio) *cobra.Command {
	var (
		ef          engineFlags
		wf          workerFlags
		waitActions time.Duration
	)
	cmd := &cobra.Command{
		Use:   "answer ID J",
		Short: "Give a person's answer to a waiting process",
		Long: `Answer sends the answer J (JSON, or @FILE) to the chunk process ID waits on. An
answer that does not fit the chunk's schema is refused with the errors, and the
process keeps waiting. Then it follows the process until it waits again or ends,
and waits for its fire-and-forget actions as vibe run does (--wait-actions).
Without --actions-file or --llm, it takes the actions file and model that vibe
run started the process with on that data directory; when one cannot be had
(the file is gone, its key's variable unset), it says so and sends nothing.`,
		Example: `  vibe answer meeting-1a2b3c4d '{"confirmInvitation": {"decision": "Approve"}}'
  vibe answer meeting-1a2b3c4d @answer.json`,
		Args:              exactArgs(2),
		ValidArgsFunction: completeProcessIDs(&ef, process.Waiting),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkWait("wait-actions", waitActions); err != nil {
				return err
			}
			if err := checkWait("drain", wf.drain); err != nil {
				return err
			}
			ans, err := parseJSONArg("answer", args[1])
			if err != nil {
				return err
			}
			if _, served := ef.runningServer(); !served && ef.temporal == "" {
				// The actions file and model the process was started with,
				// where this command was not given them.
				if err := loadNeeds(ef.data, args[0], &wf); err != nil {
					return err
				}
			}
			p, done, err := connect(cmd.Context(), io, &ef, &wf, nil)
			if err != nil {
				return err
			}
			defer done()
			if pc, local := p.(*process.Client); local {
				// A worker without an action leaves its calls waiting: the
				// answer is not sent to a process this command cannot
				// finish.
				missing, err := pc.MissingActions(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				if len(missing) > 0 {
					return fmt.Errorf("%s goes on with %s, which this command has not: nothing was sent, and it waits as it did; give the actions file that has them (--actions-file FILE), as the command that started it had", args[0], andList(missing))
				}
				// Nor to one whose model calls would wait for a worker that
				// has the model it was started with.
				other, err := pc.MissingModel(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				if other && pc.ModelQueue == durable.AnyModelQueue {
					return fmt.Errorf("%s goes on asking a model, and this command has none: nothing was sent, and it waits as it did; give the model it was started with (--llm MODEL, --llm-base-url URL), or any model if it was started without one", args[0])
				}
				if other {
					return fmt.Errorf("%s goes on asking the model it was started with, which this command has not: nothing was sent, and it waits as it did; give that model (--llm MODEL, --llm-base-url URL), as the command that started it had", args[0])
				}
			}
			if _, err := p.Answer(cmd.Context(), args[0], ans); err != nil {
				return err
			}
			fmt.Fprintf(io.err, "vibe: answer accepted\n")
			if err := follow(cmd.Context(), io, p, args[0], jsonv.Value{}, false); err != nil {
				return err
			}
			return settleActions(cmd.Context(), io, p, args[0], waitActions, ef.actionsRunWhere(p))
		},
	}
	ef.add(cmd)
	wf.add(cmd)
	wf.addExitDrain(cmd)
	cmd.Flags().DurationVar(&waitActions, "wait-actions", defaultWaitActions, "on its own engine, wait up to `D` after the process completes for its fire-and-forget actions to settle; exit 1 when some are still pending (0: do not wait)")
	return cmd
}

func newPsCmd(io stdio) *cobra.Command {
	var lf listFlags
	cmd := readCmd(io, "ps [--status S] [--limit N | --all] [--json]", "List processes, newest first", exactArgs(0),
		func(ctx context.Context, p processes, args []string) error {
			return listPages(io, &lf,
				func(opts process.ListOptions) ([]process.Summary, string, error) {
					opts.Status = process.Status(lf.status)
					page, err := p.List(ctx, opts)
					return page.Processes, page.Next, err
				},
				func(s process.Summary) time.Time { return s.StartedAt },
				"ID\tPROCESS\tSTATUS\tSTARTED",
				func(s process.Summary) string {
					return fmt.Sprintf("%s\t%s\t%s\t%s", s.ID, s.Process, s.Status, s.StartedAt.Local().Format(time.DateTime))
				})
		})
	cmd.Example = `  vibe ps
  vibe ps --status waiting          # the processes that wait for a person
  vibe ps --all --json | jq -r '.[] | select(.status == "failed") | .id'`
	lf.add(cmd, "processes")
	cmd.Flags().StringVar(&lf.status, "status", "", "list only the processes of this `STATUS`: running, waiting (for a person), completed or failed")
	cmd.RegisterFlagCompletionFunc("status", cobra.FixedCompletions([]string{"running", "waiting", "completed", "failed"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// listFlags are a listing's flags: how many (--limit N or --all), a
// filter (--status), and --json.
type listFlags struct {
	limit  int
	all    bool
	status string
	json   bool
}

func (f *listFlags) add(cmd *cobra.Command, what string) {
	cmd.Flags().IntVar(&f.limit, "limit", durable.DefaultListLimit, "show at most `N` "+what+": those still running, then those that ended most recently")
	cmd.Flags().BoolVar(&f.all, "all", false, "show every one of the "+what)
	cmd.Flags().BoolVar(&f.json, "json", false, "print a JSON array (the API's fields), not a table")
	// Checked before the engine starts.
	beforeRun(cmd, func() error {
		if f.limit < 1 {
			return usageError{fmt.Errorf("--limit %d: give a number of %s from 1 up", f.limit, what)}
		}
		if f.all && cmd.Flags().Changed("limit") {
			return usageError{errors.New("give --limit N or --all, not both")}
		}
		switch process.Status(f.status) {
		case "", process.Running, process.Waiting, process.Completed, process.Failed:
		default:
			return usageError{fmt.Errorf("--status %q: give running, waiting, completed or failed", f.status)}
		}
		return nil
	})
}

// listPages prints a list, newest first, following the cursors: pages of
// at most the engine's page size, until --limit items are shown (--all:
// until the last page). It prints a table of head and a row per item, or
// with --json one JSON array; that there are more goes to stderr.
//
// The engine's lists (SQL visibility, which takes no ORDER BY) give the
// workflows still open first, then the closed ones by when they closed:
// so --limit keeps those and the most recently ended, and the items shown
// are sorted here by when they started (started), newest first.
func listPages[T any](io stdio, f *listFlags, list func(process.ListOptions) ([]T, string, error), started func(T) time.Time, head string, row func(T) string) error {
	var items []T
	cursor := ""
	for f.all || len(items) < f.limit {
		n := durable.MaxListLimit
		if !f.all {
			n = min(n, f.limit-len(items))
		}
		page, next, err := list(process.ListOptions{Limit: n, Cursor: cursor})
		if err != nil {
			return err
		}
		items = append(items, page...)
		if cursor = next; cursor == "" {
			break
		}
	}
	slices.SortStableFunc(items, func(a, b T) int { return started(b).Compare(started(a)) })
	if f.json {
		if items == nil {
			items = []T{}
		}
		if err := writeAny(io, items); err != nil {
			return err
		}
	} else {
		tw := tabwriter.NewWriter(io.out, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, head)
		for _, it := range items {
			fmt.Fprintln(tw, row(it))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if cursor != "" {
		fmt.Fprintf(io.err, "vibe: the newest %d shown; there are more (--limit N, or --all)\n", len(items))
	}
	return nil
}

// readCmd is a command that only reads processes: through the vibe serve
// that has the data directory, or else the engine with a worker that runs
// nothing.
func readCmd(io stdio, use, short string, args cobra.PositionalArgs, read func(ctx context.Context, p processes, args []string) error) *cobra.Command {
	var ef engineFlags
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  args,
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if cmd.Name() != "show" {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return completeProcessIDs(&ef, "")(cmd, args, toComplete)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if ef.noData() {
				// Nothing has run here: say so without creating the
				// data directory.
				return read(cmd.Context(), noProcesses{dir: ef.data}, args)
			}
			p, done, err := connect(cmd.Context(), io, &ef, nil, nil)
			if err != nil {
				return err
			}
			defer done()
			return read(cmd.Context(), p, args)
		},
	}
	ef.add(cmd)
	return cmd
}

// noProcesses are the processes of a data directory that does not exist:
// none.
type noProcesses struct{ dir string }

func (n noProcesses) notFound(id string) error {
	return fmt.Errorf("%w: %s (there is no data directory %s: nothing has run here; give --data DIR or set VIBE_DATA)", process.ErrNotFound, id, n.dir)
}

func (n noProcesses) Start(context.Context, process.StartOptions) (*process.Started, error) {
	return nil, errors.New("a command that only reads starts nothing")
}

func (n noProcesses) Get(_ context.Context, id string) (*process.Info, error) {
	return nil, n.notFound(id)
}

func (n noProcesses) List(context.Context, process.ListOptions) (process.Page, error) {
	return process.Page{}, nil
}

func (n noProcesses) Answer(_ context.Context, id string, _ jsonv.Value) (*process.View, error) {
	return nil, n.notFound(id)
}

func (n noProcesses) Watch(_ context.Context, id string, _ process.WatchOptions) iter.Seq2[*process.Info, error] {
	return func(yield func(*process.Info, error) bool) { yield(nil, n.notFound(id)) }
}

// follow shows a process's chunks as they finish, answers or asks when it
// waits for a person, and prints its state when it ends.
func follow(ctx context.Context, io stdio, p processes, id string, answer jsonv.Value, ask bool) error {
	shown := 0
	asked := ""
	stalled := map[string]bool{} // the queues said
	for info, err := range p.Watch(ctx, id, process.WatchOptions{Interval: 150 * time.Millisecond}) {
		if err != nil {
			return err
		}
		for _, st := range info.Stalled {
			if !stalled[st.Queue] {
				stalled[st.Queue] = true
				fmt.Fprintf(io.err, "vibe: %s %s\n", id, stalledText(st, time.Now()))
			}
		}
		for ; shown < len(info.Done); shown++ {
			ch := info.Done[shown]
			line := "vibe: ✓ " + ch
			if u, ok := info.Steps[ch]; ok {
				line += fmt.Sprintf("  (%d prompt + %d completion tokens", u.PromptTokens, u.CompletionTokens)
				if info.Replayed {
					line += ", replayed from a recording"
				}
				line += ")"
			}
			fmt.Fprintln(io.err, line)
		}
		switch info.Status {
		case process.Completed:
			fmt.Fprintf(io.err, "vibe: %s completed (%s in all)\n", id, tokens(info.Usage))
			for _, u := range info.StepUsage {
				fmt.Fprintf(io.err, "vibe:   %s: %s\n", u.Step, tokens(u.Usage))
			}
			if info.Direct != nil {
				return writeAny(io, info.Direct)
			}
			return writeJSON(io, info.State)
		case process.Failed:
			msg := "failed"
			if info.Error != nil {
				msg = *info.Error
			}
			return fmt.Errorf("process %s failed: %s", id, msg)
		case process.Waiting:
			if info.Waiting == nil || info.Waiting.Chunk == asked {
				break
			}
			w := info.Waiting
			asked = w.Chunk
			fmt.Fprintf(io.err, "vibe: %s waits for a person's answer to %s\n  context: %s\n  schema:  %s\n",
				id, w.Chunk, jsonv.Marshal(w.Context), jsonv.Marshal(w.Schema))
			switch {
			case !answer.IsNull():
				a := answer
				answer = jsonv.Value{}
				if _, err := p.Answer(ctx, id, a); err != nil {
					return err
				}
				fmt.Fprintf(io.err, "vibe: answered %s with %s\n", w.Chunk, jsonv.Marshal(a))
			case ask && isTerminal(io):
				if err := askOnTerminal(ctx, io, p, id, w); err != nil {
					return err
				}
			default:
				fmt.Fprintf(io.err, "vibe: the process waits, durably; answer it with\n  vibe answer %s\n", shellQuote(append([]string{id, answerSkeleton(w.Schema)}, carried(io.args)...)))
				return nil
			}
		}
	}
	// Not reached: the watch ends with the process's end (returned above)
	// or after an error (returned too).
	return nil
}

func isTerminal(io stdio) bool {
	f, ok := io.in.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// askOnTerminal reads answers until one fits: a choice (enums,
// booleans) as numbered options and y/n, anything else as JSON.
func askOnTerminal(ctx context.Context, io stdio, p processes, id string, w *process.Pending) error {
	in := bufio.NewScanner(io.in)
	in.Buffer(make([]byte, 1<<20), 16<<20)
	if qs, ok := choiceQuestions(w.Schema); ok {
		for {
			a, err := askChoices(in, io.err, qs)
			if err != nil {
				return err
			}
			_, err = p.Answer(ctx, id, a)
			var refused *process.RefusedError
			if errors.As(err, &refused) {
				fmt.Fprintln(io.err, refused.Message)
				continue
			}
			if err == nil {
				fmt.Fprintf(io.err, "vibe: answered %s with %s\n", w.Chunk, jsonv.Marshal(a))
			}
			return err
		}
	}
	for {
		fmt.Fprintf(io.err, "answer (JSON, e.g. %s)> ", answerSkeleton(w.Schema))
		if !in.Scan() {
			return errors.New("no answer given")
		}
		line := strings.TrimSpace(in.Text())
		if line == "" {
			continue
		}
		a, err := schema.Parse("answer", []byte(line))
		if err != nil {
			fmt.Fprintln(io.err, err)
			continue
		}
		_, err = p.Answer(ctx, id, a)
		var refused *process.RefusedError
		if errors.As(err, &refused) {
			fmt.Fprintln(io.err, refused.Message)
			continue
		}
		return err
	}
}

// answerSkeleton is a skeleton answer for a schema, for the person to
// edit.
func answerSkeleton(s jsonv.Value) string { return string(jsonv.Marshal(schema.Skeleton(s))) }

// writeAny prints a Go value as indented JSON (jsonv values inside keep
// their order).
func writeAny(io stdio, v any) error {
	b, err := jsonMarshalIndent(v)
	if err != nil {
		return err
	}
	_, err = io.out.Write(append(b, '\n'))
	return err
}

// actionsWhere says where a process's fire-and-forget actions run once this
// command has ended, and whether they stop running with it (own is true:
// this command's worker is the only one that runs them now); resume is the
// command that runs them then, given the flags this one carried.
type actionsWhere struct {
	own    bool
	where  string
	resume string
}

// pending says which fire-and-forget actions (their workflows) are still
// pending, after waiting for them as long as after (0: not waited for),
// and where they run. what says what does not wait for them, and then
// where to read how they end. On the command's own engine it is the
// command's error (a non-zero exit: it did not do all it was asked),
// naming the command that runs them, again: the command that does not
// wait for them, or run through a vibe serve, says so and has done its
// part.
func (w actionsWhere) pending(io stdio, workflows []string, after time.Duration, what, then, again string) error {
	waited := ""
	if after > 0 {
		waited = " after " + after.String()
	}
	const shown = 10 // of a batch's thousand, the first few
	listed := strings.Join(workflows[:min(len(workflows), shown)], ", ")
	if len(workflows) > shown {
		listed += fmt.Sprintf(" and %d more", len(workflows)-shown)
	}
	msg := fmt.Sprintf("%d fire-and-forget action(s) still pending%s%s. They run %s, each in its workflow (%s)%s",
		len(workflows), waited, what, w.where, listed, then)
	if !w.own {
		fmt.Fprintf(io.err, "vibe: %s\n", msg)
		return nil
	}
	return &pendingActionsError{msg + "; to run them now:\n  " + again}
}

// pendingActionsError is the error of a command that ends with
// fire-and-forget actions pending on its own engine: nothing runs them
// once it has exited, until the command it names runs.
type pendingActionsError struct{ msg string }

func (e *pendingActionsError) Error() string { return e.msg }

// actionsRunWhere is where the actions of processes p started run.
func (f *engineFlags) actionsRunWhere(p processes) actionsWhere {
	switch c := p.(type) {
	case *api.Client:
		return actionsWhere{where: "on the workers of the vibe serve at " + c.BaseURL}
	}
	if f.temporal != "" {
		return actionsWhere{own: true, where: "on the Temporal cluster at " + f.temporal + ", by the next Vibe worker that polls it", resume: "worker"}
	}
	return actionsWhere{own: true, where: "on the embedded engine in " + f.data + ": they go on when a vibe serve, vibe worker, vibe run or vibe batch next runs on that data directory", resume: "serve"}
}

// defaultWaitActions is how long vibe run, vibe answer and vibe batch wait
// on their own engine for the fire-and-forget actions they started: long
// enough for an action's retries over a few minutes' outage.
const defaultWaitActions = 5 * time.Minute

// settleActions follows a completed process's fire-and-forget actions: on
// the command's own worker, until each has completed or failed, at most
// bound, showing each change on stderr; then it says how each ended, or
// which are still pending and where they will run.
func settleActions(ctx context.Context, io stdio, p processes, id string, bound time.Duration, w actionsWhere) error {
	wait := w.own && bound > 0
	wctx, cancel := ctx, context.CancelFunc(func() {})
	if wait {
		wctx, cancel = context.WithTimeout(ctx, bound)
	}
	defer cancel()
	var last *process.Info
	waiting, shown := false, map[string]string{}
	for info, err := range p.Watch(wctx, id, process.WatchOptions{Interval: 200 * time.Millisecond, Actions: true}) {
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if last != nil && (wctx.Err() != nil || wait && deadlineError(err)) {
				break // the bound, reached (the engine may say so a moment before wctx does)
			}
			return err
		}
		if info.Status != process.Completed || len(info.ActionRuns) == 0 {
			return nil
		}
		last = info
		for _, r := range info.ActionRuns {
			if text := actionRunText(r); shown[r.Step] != text {
				shown[r.Step] = text
				fmt.Fprintf(io.err, "vibe: fire-and-forget %s %s\n", r.Step, text)
			}
		}
		if info.ActionsSettled() {
			if waiting {
				fmt.Fprintf(io.err, "vibe: the fire-and-forget actions have settled\n")
			}
			return nil
		}
		if !wait {
			break
		}
		if !waiting {
			waiting = true
			fmt.Fprintf(io.err, "vibe: waiting up to %s (--wait-actions) for %d fire-and-forget action(s) to settle\n", bound, len(pendingActions(info)))
		}
	}
	if last == nil {
		return nil
	}
	after := time.Duration(0)
	if waiting {
		after = bound
	}
	return w.pending(io, pendingActions(last), after, "; the process does not wait for them",
		"; vibe show "+id+" tells how they end", "vibe "+shellQuote(append([]string{w.resume}, carried(io.args)...)))
}

// pendingActions are the workflows of the fire-and-forget actions of info
// that have not completed or failed yet.
func pendingActions(info *process.Info) []string {
	var pending []string
	for _, r := range info.ActionRuns {
		if !r.Done {
			pending = append(pending, r.Workflow)
		}
	}
	return pending
}

// actionRunText says what a fire-and-forget action has come to.
func actionRunText(r process.ActionRun) string {
	attempts := func(n int) string {
		if n == 1 {
			return "1 attempt"
		}
		return fmt.Sprintf("%d attempts", n)
	}
	switch r.Status {
	case process.ActionCompleted:
		s := "completed after " + attempts(r.Attempts)
		if r.Attempts > 1 && r.LastError != "" {
			s += " (the last failure: " + r.LastError + ")"
		}
		return s
	case process.ActionFailed:
		return "failed after " + attempts(r.Attempts) + ": " + r.LastError
	case process.ActionUnknown:
		return "ended, how is not known: " + r.LastError
	}
	s := "running: " + attempts(r.Attempts) + " so far"
	if r.LastError != "" {
		s += ", the last failed: " + r.LastError
	}
	if r.NextAttempt != nil {
		s += ", next attempt at " + r.NextAttempt.Local().Format(time.TimeOnly)
	}
	return s
}

// deadlineError reports whether err is a deadline's: the context's own,
// or the engine's answer that the call's deadline passed, which may come
// a moment before the context says so.
func deadlineError(err error) bool {
	var de *serviceerror.DeadlineExceeded
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &de)
}

// carriedFlags are the flags of the engine and worker a command that
// goes on with a process needs as the command that left it waiting had
// them: its data directory, its actions file, its model. The token is
// never carried (it is a secret; $VIBE_TOKEN gives it).
var carriedFlags = map[string]bool{ // name → takes a value
	"data": true, "actions-file": true, "delegate-allow": true, "namespace": true, "temporal": true,
	"tls-ca": true, "tls-cert": true, "tls-dir": true, "tls-key": true, "tls-server-name": true,
	"llm": true, "llm-base-url": true, "llm-strict": false, "llm-tools": false, "inline-schemas": false,
}

// carried are the carriedFlags among args, as given: printed with a
// vibe answer hint, they make it run where the process waits, with the
// actions and model its next steps need.
func carried(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		name, _, inline := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		value, ok := carriedFlags[name]
		if !ok || !strings.HasPrefix(args[i], "--") {
			continue
		}
		out = append(out, args[i])
		if value && !inline && i+1 < len(args) {
			i++
			out = append(out, args[i])
		}
	}
	return out
}
