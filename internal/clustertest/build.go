package clustertest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

// The packages of the binaries, listed as tools in go.mod.
const (
	serverPkg  = "go.temporal.io/server/cmd/server"
	sqlToolPkg = "go.temporal.io/server/cmd/tools/sql"
)

// binaries are the built Temporal server and schema tool, and the module
// directory whose schema/ the tool reads.
type binaries struct {
	server, sqlTool, moduleDir, version string
}

var (
	buildOnce sync.Once
	built     binaries
	buildErr  error
)

// build builds the server and the schema tool once per process, and reuses
// those an earlier process left in the cache directory.
func build() (binaries, error) {
	buildOnce.Do(func() { built, buildErr = buildBinaries() })
	return built, buildErr
}

func buildBinaries() (binaries, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}} {{.Dir}}", "go.temporal.io/server").Output()
	if err != nil {
		return binaries{}, fmt.Errorf("go list -m go.temporal.io/server: %w", err)
	}
	version, dir, ok := strings.Cut(strings.TrimSpace(string(out)), " ")
	if !ok || dir == "" {
		return binaries{}, fmt.Errorf("go list -m go.temporal.io/server: %q", out)
	}
	// Keyed by the server's version and the toolchain that builds it (the
	// one that built this test binary, as GOTOOLCHAIN picks it).
	cache := filepath.Join(os.TempDir(), "vibe-clustertest", version+"-"+runtime.Version()+"-"+runtime.GOOS+"-"+runtime.GOARCH)
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return binaries{}, err
	}
	b := binaries{server: filepath.Join(cache, "temporal-server"), sqlTool: filepath.Join(cache, "temporal-sql-tool"),
		moduleDir: dir, version: version}
	for path, pkg := range map[string]string{b.server: serverPkg, b.sqlTool: sqlToolPkg} {
		if _, err := os.Stat(path); err == nil {
			continue
		}
		// Built beside its final name and renamed into place, so that a
		// test process running at the same time never runs half a file.
		tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
		cmd := exec.Command("go", "build", "-o", tmp, pkg)
		if out, err := cmd.CombinedOutput(); err != nil {
			os.Remove(tmp)
			return binaries{}, fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
		}
		if err := os.Rename(tmp, path); err != nil {
			return binaries{}, err
		}
	}
	return b, nil
}
