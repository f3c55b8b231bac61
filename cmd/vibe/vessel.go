package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/augceo/vibe/engine"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/request"
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
each call did, and each instance's state.

A tool with "_delegate" runs its call in an isolated sub-request (SPEC §8): the
delegate's own context (a stored Request from the registry, a file, an http(s)
URL on a --delegate-allow host, or "anonymous"), the parent data its "_scopes"
select, and an input message with the call's parameters. Its result is the
call's result; the sub-request runs as a child workflow, printed as "run".

--context holds the request's messages: a JSON array (or {"context": [...]}) of
system, input, state, data and plan messages; any may carry "_instance".`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			reg, err := openRegistry(regDir)
			if err != nil {
				return err
			}
			ts, err := buildToolset(args[0], reg, &wf)
			if err != nil {
				return err
			}
			msgs := jsonv.ArrayValue()
			file := "request"
			if ctxFile != "" {
				if msgs, err = readContext(io, ctxFile); err != nil {
					return err
				}
				file = inputName(ctxFile)
			}
			req, err := vessel.NewRequest(ts, msgs, vessel.RequestOptions{Prompt: prompt, File: file, MaxDepth: bounds.depth, MaxFanOut: bounds.fanOut})
			if err != nil {
				return err
			}
			if showPrompt {
				return writeJSON(io, jsonv.ObjectValue(
					jsonv.Member{Name: "system", Value: jsonv.StringValue(req.System())},
					jsonv.Member{Name: "prompt", Value: jsonv.StringValue(req.Text())},
					jsonv.Member{Name: "schema", Value: ts.DecisionSchema()}))
			}
			return runRequest(cmd.Context(), io, &ef, &wf, reg, req)
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
  --dot       print the plan as a Graphviz graph`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			reg, err := openRegistry(regDir)
			if err != nil {
				return err
			}
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
			ts, err := buildToolset(vfile, reg, &wf)
			if err != nil {
				return err
			}
			at := jsonv.Pointer("")
			if doc.Object() != nil {
				at = "/context"
			}
			parsed, err := vessel.ParseContext(file, at, msgs)
			if err != nil {
				return err
			}
			g, err := vessel.AssemblePlan(file, parsed, ts)
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
			req, err := vessel.NewRequest(ts, msgs, vessel.RequestOptions{File: file, MaxDepth: bounds.depth, MaxFanOut: bounds.fanOut})
			if err != nil {
				return err
			}
			return runRequest(cmd.Context(), io, &ef, &wf, reg, req)
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
	acts, err := wf.actions()
	if err != nil {
		return nil, err
	}
	// The Vessel's delegate files are read from its directory, here and
	// by the worker this command starts.
	wf.delegateRoots = append(wf.delegateRoots, filepath.Dir(file))
	return vessel.Build(context.Background(), v, vessel.BuildOptions{Registry: reg, Actions: acts.Names(), Loader: wf.loader(reg)})
}

// readContext reads messages: an array, or {"context": [...]}.
func readContext(io stdio, name string) (jsonv.Value, error) {
	doc, err := readInput(io, name)
	if err != nil {
		return jsonv.Value{}, err
	}
	if c, ok := doc.Get("context"); ok {
		return c, nil
	}
	return doc, nil
}

// runRequest runs a request on the vibe serve's engine when one has the
// data directory, else on the embedded engine with a worker here, and
// prints what it did.
func runRequest(ctx context.Context, io stdio, ef *engineFlags, wf *workerFlags, reg *registry.Registry, in *vessel.Request) error {
	if ef.temporal == "" {
		// A vibe serve runs on the data directory: its worker does the work.
		eng, err := ef.attach(ctx, quietLogger())
		switch {
		case err == nil:
			defer eng.Close()
			_, err := printResult(ctx, io, eng, in)
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
	res, err := printResult(ctx, io, l.eng, in)
	if res != nil {
		// The worker is this command's: keep it up until what the request
		// launched has run as far as it can without a person.
		if serr := settle(ctx, io, l.client, launched(in, res)); err == nil {
			err = serr
		}
	}
	return err
}

// launched lists the ids of the processes a request's calls launched.
func launched(in *vessel.Request, res *vessel.Result) []string {
	var ids []string
	for _, c := range res.Calls {
		if t := in.Toolset.Tool(c.Tool); t != nil && t.Kind == vessel.Launch && c.Error == "" {
			ids = append(ids, c.Result.Lookup("id").Str())
		}
	}
	return ids
}

// settle waits until each process has completed, failed or waits for a
// person, with its fire-and-forget actions done, saying so.
func settle(ctx context.Context, io stdio, p processes, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	fmt.Fprintf(io.err, "vibe: keeping the engine up until the %d launched process(es) finish or wait for a person (Ctrl-C leaves them, durably, to the next worker on this data directory)\n", len(ids))
	for _, id := range ids {
		for {
			info, err := p.Get(ctx, id)
			if err != nil {
				return err
			}
			busy := info.Status == process.Running
			for _, a := range info.Actions {
				busy = busy || a == "started"
			}
			if !busy {
				line := fmt.Sprintf("vibe: launched %s (%s) %s", id, info.Process, info.Status)
				if info.Status == process.Waiting && info.Waiting != nil {
					line += " for a person's answer to " + info.Waiting.Chunk + " (vibe answer " + id + " J)"
				}
				if info.Error != nil {
					line += ": " + *info.Error
				}
				fmt.Fprintln(io.err, line)
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

func printResult(ctx context.Context, io stdio, eng *engine.Engine, in *vessel.Request) (*vessel.Result, error) {
	res, id, err := request.Run(ctx, eng.Client(), in)
	if err != nil {
		return nil, fmt.Errorf("request %s: %w", id, err)
	}
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
		} else if c.Output != "" {
			line += " → " + c.Output
		}
		if c.Run != "" {
			line += " (delegated: run " + c.Run + ")"
		}
		fmt.Fprintln(io.err, line)
	}
	states := jsonv.NewObject(len(res.States))
	if g, ok := res.States[""]; ok && g.Len() > 0 {
		states.Set("", g)
	}
	for _, m := range in.Instances {
		states.Set(m, res.States[m])
	}
	calls := make([]jsonv.Value, len(res.Calls))
	for i, c := range res.Calls {
		calls[i] = c.Summary()
		if c.Run != "" {
			calls[i].Object().Set("run", jsonv.StringValue(c.Run))
		}
	}
	err = writeJSON(io, jsonv.ObjectValue(
		jsonv.Member{Name: "request", Value: jsonv.StringValue(id)},
		jsonv.Member{Name: "decision", Value: res.Decision},
		jsonv.Member{Name: "calls", Value: jsonv.ArrayValue(calls...)},
		jsonv.Member{Name: "states", Value: states.Value()},
		jsonv.Member{Name: "usage", Value: jsonv.ObjectValue(
			jsonv.Member{Name: "promptTokens", Value: jsonv.IntValue(res.Usage.PromptTokens)},
			jsonv.Member{Name: "completionTokens", Value: jsonv.IntValue(res.Usage.CompletionTokens)})}))
	if err == nil && failed > 0 {
		err = fmt.Errorf("%d of %d calls failed", failed, len(res.Calls))
	}
	return res, err
}

// delegateBounds bound a request's delegation.
type delegateBounds struct{ depth, fanOut int }

func (b *delegateBounds) add(cmd *cobra.Command) {
	cmd.Flags().IntVar(&b.depth, "delegate-depth", vessel.DefaultMaxDepth, "how deep delegates may nest")
	cmd.Flags().IntVar(&b.fanOut, "delegate-fanout", vessel.DefaultMaxFanOut, "how many delegate calls one request (and each sub-request) may make")
}
