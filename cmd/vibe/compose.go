package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/augceo/vibe/compose"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/schema"
)

func newComposeCmd(io stdio) *cobra.Command {
	var regDir, pipeline string
	cmd := &cobra.Command{
		Use:   "compose FILE|URI|- | compose --pipeline EXPR",
		Short: "Print a schema with its macros, mixins and references resolved",
		Long: `Compose prints the plain schema an Instruction composes to: every $ref resolved
(local pointers, aug: registry URIs, #name fragments) and every allOf of mixins
folded, property order kept. FILE "-" reads standard input; an aug: URI
(aug:processes/schedule-meeting) reads the document from --registry.

With --pipeline it composes a pipeline expression instead (@FILE reads it from
a file):
  vibe compose --registry DIR --pipeline '"Schedule a meeting" | IdentifyParticipants | FetchAvailability'
  vibe compose --registry DIR --pipeline 'FetchAvailability(IdentifyParticipants(prompt))'

On bad input it prints every error, one per line, as FILE: /json/path: message
(or FILE:LINE:COLUMN: message for a pipeline expression), and exits with status 1.`,
		Example: `  vibe compose --registry examples/schedule-meeting/registry examples/schedule-meeting/tool.json
  vibe compose --registry DIR --pipeline 'IdentifyParticipants | FetchAvailability'`,
		Args:              fileOrPipeline,
		ValidArgsFunction: completeSchema(&regDir, "instructions", "processes"),
		RunE: func(cmd *cobra.Command, args []string) error {
			reg, err := openRegistry(regDir)
			if err != nil {
				return err
			}
			opts := compose.Options{Registry: reg}
			var out jsonv.Value
			if cmd.Flags().Changed("pipeline") {
				expr, file, perr := readPipeline(pipeline)
				if perr != nil {
					return perr
				}
				out, err = compose.Pipeline(cmd.Context(), expr, opts)
				err = inPipelineFile(err, file)
			} else {
				out, err = composeFile(cmd.Context(), io, args[0], opts)
			}
			if err != nil {
				return err
			}
			return writeJSON(io, out)
		},
	}
	registryFlag(cmd, &regDir)
	cmd.Flags().StringVar(&pipeline, "pipeline", "", "compose this pipeline expression (or @FILE) instead of a file")
	return cmd
}

func composeFile(ctx context.Context, io stdio, name string, opts compose.Options) (jsonv.Value, error) {
	file, doc, err := readSchema(io, name, opts.Registry)
	if err != nil {
		return jsonv.Value{}, err
	}
	return compose.Flatten(ctx, file, doc, opts)
}

// readSchema reads the schema name: an aug: registry URI (a fragment, as
// aug:processes/schedule-meeting#llmContext1, is kept as a $ref for the
// flattening to resolve), a JSON file, or standard input for "-". file is
// how errors name it.
func readSchema(io stdio, name string, reg *registry.Registry) (file string, doc jsonv.Value, err error) {
	if !registry.IsURI(name) {
		doc, err = readInput(io, name)
		return inputName(name), doc, err
	}
	if reg == nil {
		return "", jsonv.Value{}, usageError{fmt.Errorf("cannot read %s: %w", name, registry.ErrNoRegistry)}
	}
	u, err := registry.ParseURI(name)
	if err != nil {
		return "", jsonv.Value{}, err
	}
	if u.Fragment != "" {
		if _, err := reg.Resolve(name); err != nil {
			return "", jsonv.Value{}, fmt.Errorf("cannot read %s: %w", name, err)
		}
		return name, jsonv.ObjectValue(jsonv.Member{Name: "$ref", Value: jsonv.StringValue(name)}), nil
	}
	d, err := reg.Document(name)
	if err != nil {
		return "", jsonv.Value{}, fmt.Errorf("cannot read %s: %w", name, err)
	}
	return d.File, d.Value, nil
}

// readInput reads a JSON file, or standard input for "-".
func readInput(io stdio, name string) (jsonv.Value, error) {
	if name == "-" {
		return schema.Read(inputName(name), io.in)
	}
	return schema.ReadFile(name)
}

// inputName is how errors name an input: "<stdin>" for "-".
func inputName(name string) string {
	if name == "-" {
		return "<stdin>"
	}
	return name
}

// writeJSON prints v with a 2-space indent and a final newline.
func writeJSON(io stdio, v jsonv.Value) error {
	b := jsonv.MarshalIndent(v, "  ")
	_, err := io.out.Write(append(b, '\n'))
	return err
}

// readPipeline reads the value of --pipeline: an expression, or @FILE for
// the expression FILE holds (as --input and --answer read @FILE). file is
// how errors name it: compose.PipelineFile, or FILE.
func readPipeline(flag string) (expr, file string, err error) {
	name, ok := strings.CutPrefix(flag, "@")
	if !ok {
		return flag, compose.PipelineFile, nil
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return "", "", fmt.Errorf("--pipeline @%s: %w", name, err)
	}
	return string(b), name, nil
}

// inPipelineFile is err with its errors located in a pipeline expression
// (compose.PipelineFile) named by file, which the expression was read
// from; other errors are left as they are.
func inPipelineFile(err error, file string) error {
	var list schema.ErrorList
	var located *schema.Error
	if file == compose.PipelineFile || !errors.As(err, &list) && !errors.As(err, &located) {
		return err
	}
	var out schema.ErrorList
	for _, e := range schema.Errors(err, "") {
		if e.File == compose.PipelineFile {
			c := *e
			c.File = file
			e = &c
		}
		out = append(out, e)
	}
	return out
}

// fileOrPipeline accepts one FILE argument, or none with --pipeline.
func fileOrPipeline(cmd *cobra.Command, args []string) error {
	if cmd.Flags().Changed("pipeline") {
		return exactArgs(0)(cmd, args)
	}
	return exactArgs(1)(cmd, args)
}
