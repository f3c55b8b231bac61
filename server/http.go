package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/augceo/vibe/engine"
)

// AddrFile, in the data directory, holds the address of the API of the
// server that has that directory, so that other commands talk to it.
const AddrFile = "api.addr"

// Serve serves h on addr until ctx ends, then shuts down gracefully (at
// most five seconds). With dataDir set, it writes the listening address to
// dataDir/AddrFile once it listens and removes it when it stops. ready,
// when set, is called with the address once it listens.
func Serve(ctx context.Context, addr, dataDir string, h http.Handler, ready func(net.Addr)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	if dataDir != "" {
		path := filepath.Join(dataDir, AddrFile)
		if err := os.WriteFile(path, []byte(ln.Addr().String()+"\n"), 0o600); err != nil {
			ln.Close()
			return fmt.Errorf("write %s: %w", path, err)
		}
		defer os.Remove(path)
	}
	if ready != nil {
		ready(ln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(sctx)
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	}
}

// RunningAPI returns the API address of the server that has dataDir, if
// one does: it reads dataDir/AddrFile and believes it only while the
// directory's engine runs (engine.RunningAddr), so a file left by a killed
// server does not count.
func RunningAPI(dataDir string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(dataDir, AddrFile))
	if err != nil {
		return "", false
	}
	addr := strings.TrimSpace(string(b))
	if _, alive := engine.RunningAddr(dataDir); addr == "" || !alive {
		return "", false
	}
	return addr, true
}

// IsLoopback reports whether addr (host:port) listens on loopback only.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
