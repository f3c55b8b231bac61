package version

import (
	"runtime/debug"
	"testing"
)

func TestModuleVersion(t *testing.T) {
	bi := &debug.BuildInfo{
		Main: debug.Module{Path: "example.com/app", Version: "(devel)"},
		Deps: []*debug.Module{
			{Path: Path, Version: "v1.4.0"},
			{Path: "go.temporal.io/sdk", Version: "v1.50.0", Replace: &debug.Module{Path: "../sdk"}},
			{Path: "go.temporal.io/api", Version: "v1.63.5", Replace: &debug.Module{Path: "go.temporal.io/api", Version: "v1.63.6"}},
		},
	}
	for path, want := range map[string]string{
		Path:                 "v1.4.0",
		"example.com/app":    "",
		"go.temporal.io/sdk": "../sdk",
		"go.temporal.io/api": "v1.63.6",
		"missing":            "",
	} {
		if got := moduleVersion(bi, path); got != want {
			t.Errorf("%s: %q, want %q", path, got, want)
		}
	}
}

func TestVibe(t *testing.T) {
	// A test binary is Vibe's own main module at "(devel)": no version.
	if v := Vibe(); v == "" || v == "(devel)" {
		t.Errorf("Vibe() = %q", v)
	}
	defer func(o string) { override = o }(override)
	override = "v9.9.9"
	if v := Vibe(); v != "v9.9.9" {
		t.Errorf("with the link-time override: %q", v)
	}
}
