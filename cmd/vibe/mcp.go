package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/augceo/vibe/mcpserve"
	"github.com/augceo/vibe/registry"
)

func newMCPCmd(io stdio) *cobra.Command {
	var (
		ef        engineFlags
		wf        workerFlags
		regDir    string
		processes []string
	)
	cmd := &cobra.Command{
		Use:   "mcp --registry DIR [--processes URI,…] [--data DIR] [--actions-file F] [--llm …]",
		Short: "Serve processes to an MCP client over stdio",
		Long: `Mcp is an MCP server on standard input and output, for MCP clients (Claude
Desktop, Claude Code, IDEs, agent hosts) to start as a command. Each process of
the registry (or of --processes) is a tool: its input is the prompt and the
input, its result the process's output with its id. When a process waits for a
person, the person is asked in the client's form (an elicitation) when the
chunk fits one; otherwise the result says "waiting", and the tool
answer_process continues the process later. list_processes, show_process,
answer_process and cancel_process read and drive processes; the resources
vibe://processes and vibe://processes/{id} hold their state.

It uses the vibe serve that has --data if one runs (give it the same
--registry); otherwise it starts the embedded engine and a worker itself, with
--llm and --actions-file. vibe serve offers the same server over streamable
HTTP at /mcp.`,
		Example: `  vibe mcp --registry examples/schedule-meeting/registry --llm openai:gpt-4o-mini
  claude mcp add vibe -- vibe mcp --registry "$PWD/registry" --data "$PWD/.vibe"`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			reg, err := openRegistry(regDir)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			p, done, err := connect(ctx, io, &ef, &wf, reg)
			if err != nil {
				return err
			}
			defer done()
			srv, err := newMCPServer(ctx, p, reg, processes, serverLogger())
			if err != nil {
				return err
			}
			// Standard output is the protocol's: everything else goes to
			// standard error.
			return srv.Run(ctx, mcpserve.StdioTransport(io.in, io.out))
		},
	}
	ef.add(cmd)
	wf.add(cmd)
	registryFlag(cmd, &regDir)
	processesFlag(cmd, &processes, &regDir)
	return cmd
}

// processesFlag adds --processes: which processes MCP clients see as tools.
func processesFlag(cmd *cobra.Command, list *[]string, regDir *string) {
	cmd.Flags().StringSliceVar(list, "processes", nil, "the processes MCP clients see as tools, as registry URIs (default: every process in the registry)")
	cmd.RegisterFlagCompletionFunc("processes", completeProcessURIs(regDir))
}

// newMCPServer is the MCP server of the processes p runs.
func newMCPServer(ctx context.Context, p processes, reg *registry.Registry, list []string, logger *slog.Logger) (*mcpserve.Server, error) {
	mp, ok := p.(mcpserve.Processes)
	if !ok {
		return nil, fmt.Errorf("internal error: %T cannot cancel processes", p)
	}
	return mcpserve.New(ctx, mp, mcpserve.Options{Registry: reg, Processes: list, Logger: logger})
}
