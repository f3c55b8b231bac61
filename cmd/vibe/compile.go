package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/diagram"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
)

func newCompileCmd(io stdio) *cobra.Command {
	var (
		regDir, pipeline, actions string
		actionsFile               string
		batch                     int
		explain, inline, strict   bool
		dot, svg, budget          bool
		llmSpec, baseURL          string
		bf                        budgetFlags
	)
	cmd := &cobra.Command{
		Use:   "compile FILE|URI|- | compile --pipeline EXPR",
		Short: "Compile a process or a pipeline into chunks",
		Long: `Compile splits a process schema — a file, an aug: URI in --registry
(aug:processes/schedule-meeting) or "-" for standard input — or, with
--pipeline, a pipeline expression (or @FILE that holds one) into chunks by where each step runs — LLM,
SERVER, USER — resolves every step's references, and prints the compiled process: the input plus "$defs" with one
definition per chunk in execution order, and the entry point.

  --actions-file F the registered server actions, named by the actions file
                   vibe run and vibe serve take; or --actions a,b by name: a
                   step named for one of them (without "output") is
                   fire-and-forget, and every blocking step must match one
  --explain        print a table of the chunks instead
  --dot            print the process as a Graphviz graph: a cluster per chunk
                   in execution order, a node per step, an edge per reference
  --svg            print the same picture as SVG, laid out by vibe itself (the
                   console's process page draws it too)
  --batch N        print the multiplexed LLM chunk(s) for N items: one object
                   per call, within the provider limits (32 items per call)
  --budget         print each LLM chunk's prompt tokens (system text, schema,
                   text, the largest context its references can bring) and
                   its answer's expected tokens, against the limits of the
                   model --llm names; with --batch K, of a call of K items.
                   A chunk that cannot fit the model is refused (exit 1),
                   saying what to do

On bad input it prints every error, one per line, as FILE: /json/path: message,
and exits with status 1.`,
		Example: `  vibe compile --explain --registry examples/schedule-meeting/registry aug:processes/schedule-meeting
  vibe compile --registry DIR --pipeline 'prompt | Assess | Decide'
  vibe compile --budget --llm openai:gpt-4o-mini --batch 32 --registry DIR aug:processes/moderate`,
		Args:              fileOrPipeline,
		ValidArgsFunction: completeSchema(&regDir, "processes"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var outputs []string
			for _, f := range []string{"explain", "dot", "svg", "batch", "budget"} {
				if cmd.Flags().Changed(f) && !(f == "batch" && budget) {
					outputs = append(outputs, "--"+f)
				}
			}
			if len(outputs) > 1 {
				return usageError{fmt.Errorf("%s: give one of them", strings.Join(outputs, ", "))}
			}
			reg, err := openRegistry(regDir)
			if err != nil {
				return err
			}
			opts := compile.Options{Registry: reg}
			if cmd.Flags().Changed("actions") {
				opts.Actions = splitList(actions)
				if err := checkActionNames(opts.Actions); err != nil {
					return err
				}
			}
			if actionsFile != "" {
				names, err := actionNames(actionsFile)
				if err != nil {
					return err
				}
				opts.Actions = append(opts.Actions, names...)
			}
			var p *compile.Process
			if cmd.Flags().Changed("pipeline") {
				expr, file, perr := readPipeline(pipeline)
				if perr != nil {
					return perr
				}
				p, err = compile.CompilePipeline(cmd.Context(), expr, opts)
				err = inPipelineFile(err, file)
			} else {
				var (
					doc  jsonv.Value
					file string
				)
				if file, doc, err = readSchema(io, args[0], reg); err == nil {
					p, err = compile.Compile(cmd.Context(), file, doc, opts)
				}
			}
			if err != nil {
				return err
			}
			switch {
			case budget:
				prog := p.Program()
				models, sizes, err := bf.load(prog)
				if err != nil {
					return err
				}
				model, strictForm := budgetModel(llmSpec, baseURL)
				b, err := llm.NewBudget(prog, llm.BudgetOptions{Model: model, Models: models, K: batch, Prompt: p.Prompt,
					Strict: strictForm || strict, Inline: inline, Sizes: sizes})
				if err != nil {
					return usageError{err}
				}
				if err := printBudget(io.out, b, batch); err != nil {
					return err
				}
				return b.Err()
			case explain:
				return p.Explain(io.out)
			case dot:
				return diagram.DOT(io.out, p.Program())
			case svg:
				return diagram.SVG(io.out, p.Program(), diagram.Marks{})
			case cmd.Flags().Changed("batch"):
				calls, err := batches(p, batch, compile.ProjectOptions{Strict: strict}, compile.MultiplexOptions{Inline: inline})
				if err != nil {
					return usageError{err}
				}
				return writeJSON(io, calls)
			}
			return writeJSON(io, p.Document)
		},
	}
	registryFlag(cmd, &regDir)
	cmd.Flags().StringVar(&pipeline, "pipeline", "", "compile this pipeline expression (or @FILE) instead of a file")
	cmd.Flags().StringVar(&actions, "actions", "", "comma-separated names of the registered server actions")
	cmd.Flags().StringVar(&actionsFile, "actions-file", "", "the registered server actions: the names of an actions `FILE` (as vibe run takes)")
	cmd.Flags().BoolVar(&explain, "explain", false, "print a readable table of the chunks")
	cmd.Flags().BoolVar(&dot, "dot", false, "print the process as a Graphviz (DOT) graph")
	cmd.Flags().BoolVar(&svg, "svg", false, "print the process as an SVG picture")
	cmd.Flags().IntVar(&batch, "batch", 0, "print the multiplexed LLM chunks for `N` items")
	cmd.Flags().BoolVar(&inline, "inline", false, "with --batch or --budget: every schema whole, without $defs + $ref")
	cmd.Flags().BoolVar(&strict, "strict", false, "with --batch or --budget: the strict-mode projection (every property required, additionalProperties false)")
	cmd.Flags().BoolVar(&budget, "budget", false, "print each LLM chunk's prompt and output tokens against the model's limits; refuse a chunk that cannot fit")
	cmd.Flags().StringVar(&llmSpec, "llm", os.Getenv("VIBE_LLM"), "with --budget: the model, openai:MODEL or anthropic:MODEL (default $VIBE_LLM)")
	cmd.Flags().StringVar(&baseURL, "llm-base-url", os.Getenv("VIBE_LLM_BASE_URL"), "with --budget: an OpenAI-compatible server's endpoint, which gets the schema as written, not in OpenAI's strict form")
	bf.add(cmd)
	return cmd
}

// actionNames are the names of the actions an actions file declares; the
// file is read whole, so that its mistakes are told here as vibe run
// would tell them.
func actionNames(file string) ([]string, error) {
	acts, err := action.Load(file, nil)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(acts))
	for i, a := range acts {
		names[i] = a.Name
	}
	return names, nil
}

// actionNamesRegistry is the actions of file by name only, to resolve
// steps to them (action.Registry.Resolve) in a command that runs none of
// them: no action of it runs, and none asks an MCP server its input
// schema.
func actionNamesRegistry(file string) (*action.Registry, error) {
	names, err := actionNames(file)
	if err != nil {
		return nil, err
	}
	return namesRegistry(names), nil
}

// namesRegistry is actions of those names that run nowhere here (see
// actionNamesRegistry).
func namesRegistry(names []string) *action.Registry {
	reg := &action.Registry{}
	for _, name := range names {
		reg.Register(action.Action{Name: name, Run: func(context.Context, jsonv.Value) (jsonv.Value, error) {
			return jsonv.Value{}, fmt.Errorf("action %s runs on the serve's workers, not in this command", name)
		}})
	}
	return reg
}

func splitList(s string) []string {
	out := []string{}
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// batches prints the calls that run every LLM chunk over n items: each
// call's chunk, its items (1-based, inclusive) and the schema it sends.
func batches(p *compile.Process, n int, popts compile.ProjectOptions, mopts compile.MultiplexOptions) (jsonv.Value, error) {
	calls, err := p.BatchCalls(n, compile.Limits{}, popts, mopts)
	if err != nil {
		return jsonv.Value{}, fmt.Errorf("--batch: %w", err)
	}
	out := make([]jsonv.Value, len(calls))
	for i, c := range calls {
		o := jsonv.NewObject(4)
		o.Set("chunk", jsonv.StringValue(c.Chunk))
		o.Set("items", jsonv.ArrayValue(jsonv.IntValue(int64(c.First+1)), jsonv.IntValue(int64(c.First+c.Count))))
		o.Set("schema", c.Schema)
		if len(c.Notes) > 0 {
			// Strict mode's: they go in the system text.
			o.Set("notes", jsonv.StringValue(compile.NotesText(c.Notes)))
		}
		out[i] = o.Value()
	}
	return jsonv.ArrayValue(out...), nil
}
