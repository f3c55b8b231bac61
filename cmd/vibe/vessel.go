package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/augceo/vibe"
	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/api"
	"github.com/augceo/vibe/engine"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/request"
	"github.com/augceo/vibe/schema"
	"github.com/augceo/vibe/vessel"
)

func newVesselCmd(io stdio) *cobra.Command {
	var (
		ef                      engineFlags
		wf                      workerFlags
		bounds                  delegateBounds
		regDir, prompt, ctxFile string
		showPrompt              bool
	)
	cmd := &cobra.Command{
		Use:   "vessel FILE --prompt T [--context MESSAGES.json] [--registry DIR] [--llm …]",
		Short: "Run one request of a Vessel: its model decides, its calls run",
		Long: `Vessel builds a Vessel's toolset (its instructions, a LaunchProcess tool for each
process it may launch, all wrapped in its mixins), sends the request — the
context messages and the prompt — to its model in one call, and runs the calls
the model decides on, durably, on the engine: instructions give their filled
values, launches start processes, actions run. It prints the decision, what
each call did, each instance's state and the usage, and — when there are
any — the follow-ups, repairs, replaced calls, instances left without a call
and the parts of a request split by the Vessel's decisionSize.

A tool with "_delegate" runs its call in an isolated sub-request (SPEC §8): the
delegate's own context (a stored Request from the registry, a file, an http(s)
URL on a --delegate-allow host, or "anonymous"), the parent data its "_scopes"
select, and an input message with the call's parameters. Its result is the
call's result; the sub-request runs as a child workflow, printed as "run".

--context holds the request's messages: a JSON array (or {"context": [...]}) of
system, input, state, data and plan messages; any may carry "_instance".

While a vibe serve runs on --data, the request goes to it (POST /v1/requests)
with the Vessel file and the context inline: the server builds the toolset
with its own registry, actions and model. Otherwise it runs here on the
embedded engine, which stays up until the processes the request launched
have finished or wait for a person.`,
		Example: `  vibe vessel examples/music/producer.vessel.json --registry examples/music/registry \
      --context examples/music/context.json --llm replay:examples/music/answers.jsonl \
      --prompt "Make the album's first track: a song, and a rain ambience for its intro."
  vibe vessel team.vessel.json --prompt "…" --show-prompt`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := request.StartOptions{Prompt: prompt, Context: jsonv.ArrayValue(), ContextFile: "request", File: args[0]}
			if c, ok := ef.runningServer(); ok && !showPrompt {
				if err := wf.modelUnused(&ef, "the vibe serve at "+c.BaseURL); err != nil {
					return err
				}
				var err error
				if opts.Document, err = schema.ReadFile(args[0]); err != nil {
					return err
				}
				if err := readContextFlag(io, ctxFile, &opts); err != nil {
					return err
				}
				return serveRequest(cmd, io, c, &bounds, opts)
			}
			reg, err := openRegistry(regDir)
			if err != nil {
				return err
			}
			if opts.Toolset, err = buildToolset(args[0], reg, &wf); err != nil {
				return err
			}
			if err := readContextFlag(io, ctxFile, &opts); err != nil {
				return err
			}
			// Prepared here to check the context before an engine starts.
			req, err := vessel.NewRequest(opts.Toolset, opts.Context, vessel.RequestOptions{Prompt: prompt, File: opts.ContextFile, MaxDepth: bounds.depth, MaxFanOut: bounds.fanOut})
			if err != nil {
				return err
			}
			if showPrompt {
				return writeJSON(io, jsonv.ObjectValue(
					jsonv.Member{Name: "system", Value: jsonv.StringValue(req.System())},
					jsonv.Member{Name: "prompt", Value: jsonv.StringValue(req.Text())},
					jsonv.Member{Name: "schema", Value: req.DecisionSchema()}))
			}
			return runRequest(cmd.Context(), io, &ef, &wf, reg, &bounds, opts)
		},
	}
	ef.add(cmd)
	wf.add(cmd)
	bounds.add(cmd)
	registryFlag(cmd, &regDir)
	cmd.Flags().StringVar(&prompt, "prompt", "", "the person's request")
	cmd.Flags().StringVar(&ctxFile, "context", "", "the request's context messages (JSON array, or {\"context\": [...]}; - for stdin)")
	cmd.Flags().BoolVar(&showPrompt, "show-prompt", false, "print the system text, prompt and decision schema, and send nothing")
	return cmd
}

func newPlanCmd(io stdio) *cobra.Command {
	var (
		ef            engineFlags
		wf            workerFlags
		bounds        delegateBounds
		regDir, vfile string
		dryRun, asDot bool
	)
	cmd := &cobra.Command{
		Use:   "plan FILE --vessel V [--dry-run] [--dot]",
		Short: "Validate, print or run a plan: calls wired through state",
		Long: `Plan reads a request whose context holds a plan message — calls wired through
state variables ("_outputPath": "state.x" writes x, a parameter "†state.x" reads
it) — and validates it before anything runs: unknown tools, parameters that
break a tool's schema, reads of variables nothing writes, cycles, each named.
The plan runs once per instance (a plan is never instanced itself), independent
calls in parallel.

FILE is {"vessel": "V.json", "context": [...]} (the vessel path relative to
FILE) or a bare array of messages with --vessel.

  --dry-run   print the calls in the order they would run, layer by layer
  --dot       print the plan as a Graphviz graph

To run, a plan goes to the vibe serve on --data when one runs (POST /v1/plans),
which checks it against the toolset it builds with its own registry and
actions; otherwise it runs here on the embedded engine.`,
		Example: `  vibe plan examples/manager-employees/plan.json --registry examples/manager-employees/registry --dry-run
  vibe plan plan.json --vessel manager.vessel.json --dot | dot -Tsvg > plan.svg`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			file := inputName(args[0])
			doc, err := readInput(io, args[0])
			if err != nil {
				return err
			}
			msgs := doc
			if doc.Object() != nil {
				msgs = doc.Lookup("context")
				if v := doc.Lookup("vessel").Str(); v != "" && vfile == "" {
					vfile = filepath.Join(filepath.Dir(args[0]), v)
				}
			}
			if vfile == "" {
				return usageError{errors.New("which Vessel's tools does the plan call? give --vessel V.json, or \"vessel\" in the file")}
			}
			opts := request.StartOptions{File: vfile, Context: msgs, ContextFile: file, Plan: true}
			if doc.Object() != nil {
				opts.ContextAt = "/context"
			}
			if c, ok := ef.runningServer(); ok && !asDot && !dryRun {
				if err := wf.modelUnused(&ef, "the vibe serve at "+c.BaseURL); err != nil {
					return err
				}
				if opts.Document, err = schema.ReadFile(vfile); err != nil {
					return err
				}
				return serveRequest(cmd, io, c, &bounds, opts)
			}
			reg, err := openRegistry(regDir)
			if err != nil {
				return err
			}
			if opts.Toolset, err = buildToolset(vfile, reg, &wf); err != nil {
				return err
			}
			parsed, err := vessel.ParseContext(file, opts.ContextAt, msgs)
			if err != nil {
				return err
			}
			g, err := vessel.AssemblePlan(file, parsed, opts.Toolset)
			if err != nil {
				return err
			}
			switch {
			case asDot:
				_, err := io.out.Write([]byte(g.Dot()))
				return err
			case dryRun:
				return g.WriteTable(io.out)
			}
			return runRequest(cmd.Context(), io, &ef, &wf, reg, &bounds, opts)
		},
	}
	ef.add(cmd)
	wf.add(cmd)
	bounds.add(cmd)
	registryFlag(cmd, &regDir)
	cmd.Flags().StringVar(&vfile, "vessel", "", "the Vessel whose tools the plan calls")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "validate and print the order the calls would run in; run nothing")
	cmd.Flags().BoolVar(&asDot, "dot", false, "print the plan as a Graphviz graph; run nothing")
	return cmd
}

// buildToolset loads a Vessel and builds its toolset against the actions
// the worker flags declare.
func buildToolset(file string, reg *registry.Registry, wf *workerFlags) (*vessel.Toolset, error) {
	v, err := vessel.Load(file)
	if err != nil {
		return nil, err
	}
	names := []string{}
	if wf.actionsFile != "" {
		acts, err := action.Load(wf.actionsFile, nil) // names only: no server is reached
		if err != nil {
			return nil, err
		}
		for _, a := range acts {
			names = append(names, a.Name)
		}
		slices.Sort(names)
	}
	// The Vessel's delegate files are read from its directory, here and
	// by the worker this command starts.
	wf.delegateRoots = append(wf.delegateRoots, filepath.Dir(file))
	return vessel.Build(context.Background(), v, vessel.BuildOptions{Registry: reg, Actions: names, Loader: wf.loader(reg)})
}

// readContextFlag reads --context into opts: messages as an array, or
// {"context": [...]}, named by the file in errors.
func readContextFlag(io stdio, name string, opts *request.StartOptions) error {
	if name == "" {
		return nil
	}
	doc, err := readInput(io, name)
	if err != nil {
		return err
	}
	opts.Context, opts.ContextFile = doc, inputName(name)
	if c, ok := doc.Get("context"); ok {
		opts.Context = c
	}
	return nil
}

// serveRequest runs a request on the vibe serve that c talks to: it builds
// the toolset with its own registry, actions and model.
func serveRequest(cmd *cobra.Command, io stdio, c *api.Client, bounds *delegateBounds, opts request.StartOptions) error {
	fmt.Fprintf(io.err, "vibe: sending the request to the vibe serve at %s (its registry, actions and model)\n", c.BaseURL)
	opts.MaxDepth, opts.MaxFanOut = bounds.asked(cmd)
	_, err := runOn(cmd.Context(), io, c.Requests(), opts)
	return err
}

// runRequest runs a request of a built toolset: on the engine of the vibe
// process that has the data directory, or else on the embedded engine with
// a worker here, which it keeps up until what the request launched has run
// as far as it can without a person. It prints what the request did.
func runRequest(ctx context.Context, io stdio, ef *engineFlags, wf *workerFlags, reg *registry.Registry, bounds *delegateBounds, opts request.StartOptions) error {
	if ef.temporal == "" {
		// Another vibe process runs the engine: its worker does the work.
		eng, err := ef.attach(ctx, quietLogger())
		switch {
		case err == nil:
			defer eng.Close()
			if err := wf.modelUnused(ef, "another vibe process"); err != nil {
				return err
			}
			rc := &request.Client{Temporal: eng.Client(), MaxDepth: bounds.depth, MaxFanOut: bounds.fanOut}
			if e, ok := vibe.RunningEndpoint(ef.data); ok {
				rc.ModelQueue = e.ModelQueue // the serve's model calls' queue
			}
			_, err := runOn(ctx, io, rc, opts)
			return err
		case !errors.Is(err, engine.ErrNotRunning):
			return err
		}
	}
	l, err := startLocal(ctx, io, ef, wf, reg, quietLogger())
	if err != nil {
		return err
	}
	defer l.Close()
	l.Requests.MaxDepth, l.Requests.MaxFanOut = bounds.depth, bounds.fanOut
	info, err := runOn(ctx, io, l.Requests, opts)
	if info != nil {
		if serr := settle(ctx, io, l.Processes, launched(opts.Toolset, info)); err == nil {
			err = serr
		}
	}
	return err
}

// launched lists the ids of the processes a request's calls launched.
func launched(ts *vessel.Toolset, info *request.Info) []string {
	var ids []string
	for _, c := range info.Calls {
		if t := ts.Tool(c.Tool); t != nil && t.Kind == vessel.Launch && c.Error == "" {
			ids = append(ids, c.Result.Lookup("id").Str())
		}
	}
	return ids
}

// runOn starts a request, waits until it has finished and prints what it
// did. It returns the request unless it failed.
func runOn(ctx context.Context, io stdio, r requests, opts request.StartOptions) (*request.Info, error) {
	started, err := r.Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	info, err := awaitRequest(ctx, r, started.ID)
	if err != nil {
		return nil, fmt.Errorf("request %s: %w", started.ID, err)
	}
	if info.Status == process.Failed {
		return nil, fmt.Errorf("request %s failed: %s", info.ID, *info.Error)
	}
	return info, printResult(io, info)
}

// awaitRequest watches a request until it has finished, more and more
// slowly (20 ms at first, at most half a second apart).
func awaitRequest(ctx context.Context, r requests, id string) (*request.Info, error) {
	var last *request.Info
	for info, err := range r.Watch(ctx, id, request.WatchOptions{Interval: 20 * time.Millisecond, MaxInterval: 500 * time.Millisecond}) {
		if err != nil {
			return nil, err
		}
		last = info
	}
	return last, nil
}

// settle waits until each process has completed, failed or waits for a
// person, with its fire-and-forget actions done, saying so. A process that
// has ended is waited for no longer: its view keeps its actions as they
// were when it ended.
func settle(ctx context.Context, io stdio, p processes, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	fmt.Fprintf(io.err, "vibe: keeping the engine up until the %d launched process(es) finish or wait for a person (Ctrl-C leaves them, durably, to the next worker on this data directory)\n", len(ids))
	for _, id := range ids {
		var last *process.Info
		for info, err := range p.Watch(ctx, id, process.WatchOptions{Interval: 100 * time.Millisecond}) {
			if err != nil {
				return err
			}
			last = info
			busy := info.Status == process.Running
			for _, a := range info.Actions {
				busy = busy || a == "started"
			}
			if !busy {
				break
			}
		}
		line := fmt.Sprintf("vibe: launched %s (%s) %s", id, last.Process, last.Status)
		if last.Status == process.Waiting && last.Waiting != nil {
			line += " for a person's answer to " + last.Waiting.Chunk + " (vibe answer " + id + " J)"
		}
		if last.Error != nil {
			line += ": " + *last.Error
		}
		fmt.Fprintln(io.err, line)
	}
	return nil
}

// printResult prints what a finished request did: each call on stderr, and
// the decision, the calls, the states and the usage as JSON.
func printResult(io stdio, res *request.Info) error {
	if res.Replayed {
		fmt.Fprintln(io.err, "vibe: the decision was replayed from a recording")
	}
	failed := 0
	for _, c := range res.Calls {
		line := fmt.Sprintf("vibe: %d. %s", c.Index+1, c.Tool)
		if c.Instance != "" {
			line += " [" + c.Instance + "]"
		}
		if c.Error != "" {
			failed++
			line += ": " + c.Error
		} else if c.Skipped != "" {
			line += ": skipped: " + c.Skipped
		} else if c.Output != "" {
			line += " → " + c.Output
		}
		if c.Run != "" {
			line += " (delegated: run " + c.Run + ")"
		}
		fmt.Fprintln(io.err, line)
	}
	if len(res.Unanswered) > 0 {
		fmt.Fprintf(io.err, "vibe: %d instance(s) without a call: %s\n", len(res.Unanswered), strings.Join(res.Unanswered, ", "))
	}
	out := jsonv.NewObject(10)
	out.Set("request", jsonv.StringValue(res.ID))
	out.Set("decision", res.Decision)
	out.Set("calls", callSummaries(res.Calls))
	out.Set("states", res.States)
	out.Set("usage", jsonv.ObjectValue(
		jsonv.Member{Name: "promptTokens", Value: jsonv.IntValue(res.Usage.PromptTokens)},
		jsonv.Member{Name: "completionTokens", Value: jsonv.IntValue(res.Usage.CompletionTokens)}))
	// What the HTTP API says of the decision beside its calls, when there
	// is any of it, in the API's order.
	if len(res.FollowUps) > 0 {
		out.Set("followUps", jsonv.ArrayValue(res.FollowUps...))
	}
	if len(res.Repairs) > 0 {
		out.Set("repairs", jsonv.ArrayValue(res.Repairs...))
	}
	if len(res.Replaced) > 0 {
		out.Set("replaced", callSummaries(res.Replaced))
	}
	if len(res.Unanswered) > 0 {
		out.Set("unanswered", schema.StringArray(res.Unanswered))
	}
	if len(res.Parts) > 0 {
		out.Set("parts", schema.StringArray(res.Parts))
	}
	err := writeJSON(io, out.Value())
	if err == nil && failed > 0 {
		err = fmt.Errorf("%d of %d calls failed", failed, len(res.Calls))
	}
	return err
}

// callSummaries is what calls did (CallResult.Summary), each with the run
// of its delegate.
func callSummaries(calls []vessel.CallResult) jsonv.Value {
	out := make([]jsonv.Value, len(calls))
	for i, c := range calls {
		out[i] = c.Summary()
		if c.Run != "" {
			out[i].Object().Set("run", jsonv.StringValue(c.Run))
		}
	}
	return jsonv.ArrayValue(out...)
}

// delegateBounds bound a request's delegation.
type delegateBounds struct{ depth, fanOut int }

func (b *delegateBounds) add(cmd *cobra.Command) {
	b.depth, b.fanOut = vessel.DefaultMaxDepth, vessel.DefaultMaxFanOut
	cmd.Flags().Var((*countFlag)(&b.depth), "delegate-depth", "how deep delegates may nest")
	cmd.Flags().Var((*countFlag)(&b.fanOut), "delegate-fanout", "how many delegate calls one request (and each sub-request) may make")
}

// countFlag is an int flag of at least 1: a bound that a zero or a
// negative number would not bound, refused when the flags are read.
type countFlag int

func (f *countFlag) String() string { return strconv.Itoa(int(*f)) }
func (f *countFlag) Type() string   { return "int" }
func (f *countFlag) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return fmt.Errorf("want a whole number of at least 1")
	}
	*f = countFlag(n)
	return nil
}

// asked are the bounds given on the command line, 0 for those left at
// their defaults: a server applies its own unless asked for others.
func (b *delegateBounds) asked(cmd *cobra.Command) (depth, fanOut int) {
	if cmd.Flags().Changed("delegate-depth") {
		depth = b.depth
	}
	if cmd.Flags().Changed("delegate-fanout") {
		fanOut = b.fanOut
	}
	return depth, fanOut
}
