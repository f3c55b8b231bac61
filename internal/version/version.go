// Package version says which Vibe a program runs, and which versions of
// the modules it is built with, from the build information the Go
// toolchain writes into every binary (runtime/debug.ReadBuildInfo).
//
// It is internal so that every surface that shows a version — vibe
// version, the MCP handshake's serverInfo, the API — reads the same one;
// package vibe exports it as vibe.Version.
package version

import (
	"runtime/debug"
	"strings"
)

// Path is Vibe's module path.
const Path = "github.com/augceo/vibe"

// override, when set at link time (-ldflags "-X
// github.com/augceo/vibe/internal/version.override=v1.2.3"), is the
// version: a release built from a work tree has no module version of its
// own.
var override string

// Vibe returns Vibe's version: the link-time override if any; else the
// module version the binary was built at (v1.4.0 for go install
// github.com/augceo/vibe/cmd/vibe@v1.4.0, or Vibe's version in the go.mod
// of a program that imports it); else "devel", with the commit and
// "+dirty" when the build recorded them (a build from a clone).
func Vibe() string {
	if override != "" {
		return override
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := moduleVersion(bi, Path); v != "" {
		return v
	}
	v := "devel"
	var rev string
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev != "" {
		v += " " + rev[:min(12, len(rev))]
		if dirty {
			v += "+dirty"
		}
	}
	return v
}

// Module returns the version of module path the binary was built with
// ("v1.50.0" for go.temporal.io/sdk), or "" when it was built without it.
// A replaced module reports its replacement's version, or the replacement
// directory when it is a local one.
func Module(path string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	return moduleVersion(bi, path)
}

func moduleVersion(bi *debug.BuildInfo, path string) string {
	mods := append([]*debug.Module{&bi.Main}, bi.Deps...)
	for _, m := range mods {
		if m.Path != path {
			continue
		}
		if m.Replace != nil {
			m = m.Replace
			if m.Version == "" {
				return m.Path // a local directory
			}
		}
		if m.Version == "" || m.Version == "(devel)" || strings.HasPrefix(m.Version, "v0.0.0-00010101000000") {
			return ""
		}
		return m.Version
	}
	return ""
}
