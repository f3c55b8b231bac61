package vibe

import (
	"cmp"
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

// The HTTP server's timeouts (ServeOptions' defaults). A request body is at
// most process.MaxPayloadSize (2 MiB): ReadTimeout lets it arrive over a
// slow but honest link (about 35 KB/s, a poor mobile one) and cuts a
// client that trickles it (a slowloris) at a minute; the header, which is
// small, gets less.
const (
	// ReadHeaderTimeout bounds reading a request's header.
	ReadHeaderTimeout = 10 * time.Second
	// ReadTimeout bounds reading a whole request, header and body.
	ReadTimeout = time.Minute
	// WriteTimeout bounds a request from the end of its header to the end
	// of its answer: reading the body, the handler's work (compiling and
	// starting a process, waiting for an answer to be taken) and writing.
	// No handler streams today. One that does — a server-sent event stream
	// of a process — must lift its own deadline with
	// http.NewResponseController(w).SetWriteDeadline, per write.
	WriteTimeout = 2 * time.Minute
	// IdleTimeout bounds a kept-alive connection between requests: longer
	// than Go's client keeps one idle (90 s), so that clients, not the
	// server, close them, and a request is never sent on a connection the
	// server is closing.
	IdleTimeout = 2 * time.Minute
)

// ServeOptions configures Serve. The zero value listens on 127.0.0.1:8080
// with the timeouts above.
type ServeOptions struct {
	// Addr is the address to listen on; "" means 127.0.0.1:8080.
	Addr string
	// Listener, when set, is served instead of listening on Addr: a
	// caller that must know the address before serving (to link to it)
	// listens itself. Serve closes it.
	Listener net.Listener
	// DataDir, when set, gets the listening address in DataDir/AddrFile
	// once it listens; the file is removed when Serve returns.
	DataDir string
	// Ready, when set, is called with the address once it listens.
	Ready func(net.Addr)
	// The timeouts of http.Server; 0 means the constant of the same name.
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
}

// Serve serves h until ctx ends, then shuts down gracefully (at most five
// seconds).
func Serve(ctx context.Context, h http.Handler, opts ServeOptions) error {
	ln := opts.Listener
	if ln == nil {
		addr := cmp.Or(opts.Addr, "127.0.0.1:8080")
		var err error
		if ln, err = net.Listen("tcp", addr); err != nil {
			return fmt.Errorf("listen on %s: %w", addr, err)
		}
	}
	srv := opts.httpServer(h)
	if opts.DataDir != "" {
		path := filepath.Join(opts.DataDir, AddrFile)
		if err := os.WriteFile(path, []byte(ln.Addr().String()+"\n"), 0o600); err != nil {
			ln.Close()
			return fmt.Errorf("write %s: %w", path, err)
		}
		defer os.Remove(path)
	}
	if opts.Ready != nil {
		opts.Ready(ln.Addr())
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

func (opts ServeOptions) httpServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: cmp.Or(opts.ReadHeaderTimeout, ReadHeaderTimeout),
		ReadTimeout:       cmp.Or(opts.ReadTimeout, ReadTimeout),
		WriteTimeout:      cmp.Or(opts.WriteTimeout, WriteTimeout),
		IdleTimeout:       cmp.Or(opts.IdleTimeout, IdleTimeout),
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
