package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/engine"
)

func newDoctorCmd(io stdio) *cobra.Command {
	var ef engineFlags
	cmd := &cobra.Command{
		Use:   "doctor --temporal HOST:PORT [--namespace NS] [--tls-cert F --tls-key F --tls-ca F]",
		Short: "Check a Temporal cluster before Vibe uses it",
		Long: `Doctor checks the Temporal cluster of --temporal (or, without it, the embedded
engine of the vibe serve that has --data): that it answers, how the client
connects (TLS), that the namespace exists, that Vibe's search attributes are
registered, and that a worker polls the task queue vibe. It changes nothing;
for what is missing it prints the command that adds it. The exit status is 0
when every check passes, 1 otherwise.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, err := ef.options(quietLogger())
			if err != nil {
				return err
			}
			if ef.temporal == "" {
				addr, ok := engine.RunningAddr(ef.data)
				if !ok {
					return usageError{fmt.Errorf("no cluster to check: give --temporal HOST:PORT, or run vibe serve with --data %s first", ef.data)}
				}
				cfg, err := engine.LoadClientTLS(engine.ClientCertFiles(ef.data))
				if err != nil {
					return err
				}
				opts.HostPort, opts.TLS = addr, cfg
			}
			checks, err := engine.Diagnose(cmd.Context(), opts, durable.TaskQueue)
			if err != nil {
				return err
			}
			failed := 0
			for _, c := range checks {
				mark := "ok  "
				if !c.OK {
					mark = "FAIL"
					failed++
				}
				fmt.Fprintf(io.out, "%s  %s: %s\n", mark, c.Name, c.Detail)
				if c.Fix != "" {
					fmt.Fprintf(io.out, "      fix: %s\n", c.Fix)
				}
			}
			if failed > 0 {
				return fmt.Errorf("%d of %d checks failed", failed, len(checks))
			}
			return nil
		},
	}
	ef.add(cmd)
	return cmd
}
