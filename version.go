package vibe

import "github.com/augceo/vibe/internal/version"

// Version returns Vibe's version: the module version the program was
// built with (v1.4.0 for go install github.com/augceo/vibe/cmd/vibe@v1.4.0,
// or the one a program's go.mod requires), or "devel" with the commit for
// a build from a clone. The MCP server's serverInfo.version says the same.
func Version() string { return version.Vibe() }

// ModuleVersion returns the version of a module Vibe is built with
// (ModuleVersion("go.temporal.io/sdk") is "v1.50.0"), or "" when the
// program does not contain it.
func ModuleVersion(path string) string { return version.Module(path) }
