package main

import (
	"errors"
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

// buildVersions are the versions a binary was built with: Vibe's, Go's and
// those of versionModules. vibe version --json prints them.
type buildVersions struct {
	// Vibe is the module's version, or "(devel)" and the commit it was
	// built from.
	Vibe    string          `json:"vibe"`
	Go      string          `json:"go"`
	Modules []moduleVersion `json:"modules"`
}

type moduleVersion struct {
	Path    string `json:"path"`
	Version string `json:"version"`
	What    string `json:"what"`
}

// versions reads the binary's build information; ok is false when it has
// none.
func versions() (v buildVersions, ok bool) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v, false
	}
	v.Vibe, v.Go, v.Modules = bi.Main.Version, bi.GoVersion, []moduleVersion{}
	if v.Vibe == "" || v.Vibe == "(devel)" {
		v.Vibe = "(devel)"
		settings := map[string]string{}
		for _, s := range bi.Settings {
			settings[s.Key] = s.Value
		}
		if rev := settings["vcs.revision"]; rev != "" {
			v.Vibe += " " + rev[:min(12, len(rev))]
			if settings["vcs.modified"] == "true" {
				v.Vibe += "+modified"
			}
		}
	}
	deps := map[string]string{}
	for _, d := range bi.Deps {
		if d.Replace != nil {
			d = d.Replace
		}
		deps[d.Path] = d.Version
	}
	for _, m := range versionModules {
		if dv, ok := deps[m.path]; ok {
			v.Modules = append(v.Modules, moduleVersion{Path: m.path, Version: dv, What: m.what})
		}
	}
	return v, true
}

// version is what vibe version and vibe --version print: Vibe's version
// (the module's, or the commit it was built from), the Go release, and the
// versions of versionModules, from the binary's build information.
func version() string {
	v, ok := versions()
	if !ok {
		return "vibe (no build information)\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "vibe %s (%s)\n", v.Vibe, v.Go)
	for _, m := range v.Modules {
		fmt.Fprintf(&b, "  %-40s %-10s %s\n", m.Path, m.Version, m.What)
	}
	return b.String()
}

func newVersionCmd(io stdio) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "version [--json]",
		Short:   "Print Vibe's version and those of Temporal and the model SDKs",
		Args:    exactArgs(0),
		Example: "  vibe version\n  vibe --version\n  vibe version --json | jq -r .vibe",
		RunE: func(cmd *cobra.Command, args []string) error {
			if !asJSON {
				_, err := fmt.Fprint(io.out, version())
				return err
			}
			v, ok := versions()
			if !ok {
				return errors.New("the binary has no build information")
			}
			return writeAny(io, v)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"vibe", "go", "modules": [{"path", "version", "what"}]}`)
	return cmd
}
