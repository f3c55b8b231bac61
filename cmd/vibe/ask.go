package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/compose"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
)

func newAskCmd(io stdio) *cobra.Command {
	var (
		regDir, prompt, system string
		showPrompt, raw        bool
		lf                     llmFlags
	)
	cmd := &cobra.Command{
		Use:   "ask FILE|- --prompt TEXT",
		Short: "Fill one instruction with a model and print the output",
		Long: `Ask composes one instruction (FILE, "-" for standard input), sends it to the
model with the prompt, validates the answer against the schema (asking again with
the errors when it breaks it), and prints the output without "_" thinking fields
and "$" metrics. This is the one-shot path a Vessel uses for a simple instruction.

  --show-prompt   print exactly what would be sent (system, messages, schema) and
                  send nothing
  --raw           print the whole answer: {"output", "thinking", "metrics", "usage"}

The model is chosen with --llm openai:MODEL | anthropic:MODEL | replay:FILE
($VIBE_LLM), --llm-base-url URL ($VIBE_LLM_BASE_URL); the key comes from
$VIBE_LLM_API_KEY, else $OPENAI_API_KEY / $ANTHROPIC_API_KEY.
$VIBE_LLM_RECORD=FILE records every answer, for replay:FILE later.`,
		Example: `  vibe ask instruction.json --prompt "Meet Alice and Bob on Friday" --llm openai:gpt-4o-mini
  vibe ask instruction.json --prompt "…" --llm openai:llama3.1 --llm-base-url http://localhost:11434/v1
  vibe ask instruction.json --prompt "…" --show-prompt`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			reg, err := openRegistry(regDir)
			if err != nil {
				return err
			}
			doc, err := readInput(io, args[0])
			if err != nil {
				return err
			}
			flat, err := compile.Instruction(cmd.Context(), inputName(args[0]), doc, compile.Options{Registry: reg})
			if err != nil {
				return err
			}
			// The file's name names the task: titles are prose, often not ASCII.
			name := strings.TrimSuffix(filepath.Base(args[0]), ".json")
			if args[0] == "-" {
				name = "instruction"
			}
			t := llm.Task{
				Name:   llm.WireName(name),
				System: system,
				Prompt: prompt,
				Schema: compile.ForModel(compile.Project(flat, compile.ProjectOptions{}).Schema),
			}
			if showPrompt {
				return writeJSON(io, requestJSON(llm.NewRequest(t)))
			}
			if prompt == "" {
				fmt.Fprintln(io.err, "vibe: no --prompt: the model fills the instruction without a request to fill it for (give --prompt TEXT)")
			}
			p, err := lf.provider(io)
			if err != nil {
				return err
			}
			res, err := llm.Fill(cmd.Context(), p, t, llm.Options{Logger: quietLogger()})
			if err != nil {
				return err
			}
			if res.Replayed {
				fmt.Fprintf(io.err, "vibe: the answer above was replayed from a recording\n")
			}
			if !raw {
				return writeJSON(io, res.Output)
			}
			return writeJSON(io, rawResult(res))
		},
	}
	registryFlag(cmd, &regDir)
	cmd.Flags().StringVar(&prompt, "prompt", "", "the request to fill the instruction for")
	cmd.Flags().StringVar(&system, "system", "", "the system text (default: Vibe's, which explains the _ and $ fields)")
	cmd.Flags().BoolVar(&showPrompt, "show-prompt", false, "print what would be sent and send nothing")
	cmd.Flags().BoolVar(&raw, "raw", false, "also print thinking fields, metrics and usage")
	lf.add(cmd)
	return cmd
}

// requestJSON is a request as --show-prompt prints it: the schema as the
// JSON it is, not a string.
func requestJSON(r *llm.Request) jsonv.Value {
	msgs := make([]jsonv.Value, len(r.Messages))
	for i, m := range r.Messages {
		msgs[i] = jsonv.ObjectValue(
			jsonv.Member{Name: "role", Value: jsonv.StringValue(string(m.Role))},
			jsonv.Member{Name: "content", Value: jsonv.StringValue(m.Content)})
	}
	schema, _ := jsonv.Parse(r.Schema)
	return jsonv.ObjectValue(
		jsonv.Member{Name: "name", Value: jsonv.StringValue(r.Name)},
		jsonv.Member{Name: "system", Value: jsonv.StringValue(r.System)},
		jsonv.Member{Name: "messages", Value: jsonv.ArrayValue(msgs...)},
		jsonv.Member{Name: "schema", Value: schema})
}

func rawResult(res *llm.Result) jsonv.Value {
	fields := func(fs []compose.Field) jsonv.Value {
		o := jsonv.NewObject(len(fs))
		for _, f := range fs {
			o.Set(string(f.Path), f.Value)
		}
		return o.Value()
	}
	return jsonv.ObjectValue(
		jsonv.Member{Name: "output", Value: res.Output},
		jsonv.Member{Name: "thinking", Value: fields(res.Thinking)},
		jsonv.Member{Name: "metrics", Value: fields(res.Metrics)},
		jsonv.Member{Name: "usage", Value: jsonv.ObjectValue(
			jsonv.Member{Name: "model", Value: jsonv.StringValue(res.Model)},
			jsonv.Member{Name: "promptTokens", Value: jsonv.IntValue(res.Usage.PromptTokens)},
			jsonv.Member{Name: "completionTokens", Value: jsonv.IntValue(res.Usage.CompletionTokens)},
			jsonv.Member{Name: "requests", Value: jsonv.IntValue(int64(res.Requests))},
			jsonv.Member{Name: "latencyMs", Value: jsonv.IntValue(res.Latency.Milliseconds())},
			jsonv.Member{Name: "replayed", Value: jsonv.BoolValue(res.Replayed)})})
}
