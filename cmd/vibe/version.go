package main

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// versionModules are the modules whose versions say what a vibe binary
// runs: the engine, the Temporal SDK, the model providers' SDKs.
var versionModules = []struct{ path, what string }{
	{"go.temporal.io/server", "Temporal server (the embedded engine)"},
	{"go.temporal.io/sdk", "Temporal Go SDK"},
	{"github.com/openai/openai-go/v3", "OpenAI Go SDK"},
	{"github.com/anthropics/anthropic-sdk-go", "Anthropic Go SDK"},
	{"github.com/modelcontextprotocol/go-sdk", "MCP Go SDK"},
}

// version is what vibe version and vibe --version print: Vibe's version
// (the module's, or the commit it was built from), the Go release, and the
// versions of versionModules, from the binary's build information.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "vibe (no build information)\n"
	}
	var b strings.Builder
	v := bi.Main.Version
	if v == "" || v == "(devel)" {
		v = "(devel)"
		settings := map[string]string{}
		for _, s := range bi.Settings {
			settings[s.Key] = s.Value
		}
		if rev := settings["vcs.revision"]; rev != "" {
			v += " " + rev[:min(12, len(rev))]
			if settings["vcs.modified"] == "true" {
				v += "+modified"
			}
		}
	}
	fmt.Fprintf(&b, "vibe %s (%s)\n", v, bi.GoVersion)
	deps := map[string]string{}
	for _, d := range bi.Deps {
		if d.Replace != nil {
			d = d.Replace
		}
		deps[d.Path] = d.Version
	}
	for _, m := range versionModules {
		if v, ok := deps[m.path]; ok {
			fmt.Fprintf(&b, "  %-40s %-10s %s\n", m.path, v, m.what)
		}
	}
	return b.String()
}

func newVersionCmd(io stdio) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print Vibe's version and those of Temporal and the model SDKs",
		Args:    exactArgs(0),
		Example: "  vibe version\n  vibe --version",
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := fmt.Fprint(io.out, version())
			return err
		},
	}
}
