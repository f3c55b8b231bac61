package vibe

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/engine"
)

// AddrFile, in the data directory, holds the address of the API of the
// server that has that directory, so that other commands talk to it: a
// line HOST:PORT over HTTP; over HTTPS a line https://HOST:PORT and one
// sha256:HEX, the SHA-256 of the certificate served (see Endpoint); then,
// when the server says it, a line model:QUEUE, the task queue of the
// model calls of what it starts (Endpoint.ModelQueue), and a line
// action:NAME per action its workers run (Endpoint.Actions).
const AddrFile = "api.addr"

// The HTTP server's timeouts (ServeOptions' defaults). A request body is at
// most durable.MaxPayloadSize (2 MiB): ReadTimeout lets it arrive over a
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
	// ModelQueue, when set, is written in DataDir/AddrFile beside the
	// address: the task queue of the model calls of the processes the
	// server starts (process.Client.ModelQueue), so that the commands that
	// start work on its engine themselves (vibe batch) schedule their
	// model calls where its model's workers take them.
	ModelQueue string
	// Actions, when set, are written in DataDir/AddrFile too: the names of
	// the actions the server's workers run, so that a command that
	// compiles a process for its engine itself (vibe batch) makes the
	// steps they name actions and routes their calls to the workers that
	// have them (process.Client.Registered).
	Actions []string
	// Ready, when set, is called with the address once it listens.
	Ready func(net.Addr)
	// TLS, when set, serves HTTPS with it (its Certificates or
	// GetCertificate) instead of HTTP; TLS 1.2 at least, whatever its
	// MinVersion. ServerTLS makes one from a certificate and key file.
	TLS *tls.Config
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
		line := ln.Addr().String() + "\n"
		if opts.TLS != nil {
			line = "https://" + line
			if len(opts.TLS.Certificates) > 0 && len(opts.TLS.Certificates[0].Certificate) > 0 {
				sum := sha256.Sum256(opts.TLS.Certificates[0].Certificate[0])
				line += "sha256:" + hex.EncodeToString(sum[:]) + "\n"
			}
		}
		if opts.ModelQueue != "" {
			line += "model:" + opts.ModelQueue + "\n"
		}
		for _, a := range opts.Actions {
			if action.CheckName(a) == nil { // a name is one word, no line break
				line += "action:" + a + "\n"
			}
		}
		if err := os.WriteFile(path, []byte(line), 0o600); err != nil {
			ln.Close()
			return fmt.Errorf("write %s: %w", path, err)
		}
		defer os.Remove(path)
	}
	if opts.Ready != nil {
		opts.Ready(ln.Addr())
	}
	errc := make(chan error, 1)
	go func() {
		if srv.TLSConfig != nil {
			errc <- srv.ServeTLS(ln, "", "")
			return
		}
		errc <- srv.Serve(ln)
	}()
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
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: cmp.Or(opts.ReadHeaderTimeout, ReadHeaderTimeout),
		ReadTimeout:       cmp.Or(opts.ReadTimeout, ReadTimeout),
		WriteTimeout:      cmp.Or(opts.WriteTimeout, WriteTimeout),
		IdleTimeout:       cmp.Or(opts.IdleTimeout, IdleTimeout),
	}
	if opts.TLS != nil {
		srv.TLSConfig = opts.TLS.Clone()
		srv.TLSConfig.MinVersion = max(srv.TLSConfig.MinVersion, tls.VersionTLS12)
	}
	return srv
}

// ServerTLS is a TLS configuration for ServeOptions.TLS that serves the
// certificate in certFile (PEM: the server's certificate first, then any
// intermediate ones) with the private key in keyFile (PEM), TLS 1.2 at
// least. An error names the file at fault; an expired certificate is one.
func ServerTLS(certFile, keyFile string) (*tls.Config, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("key: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("certificate %s with key %s: %w", certFile, keyFile, err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("certificate %s: %w", certFile, err)
	}
	if now := time.Now(); now.After(leaf.NotAfter) {
		return nil, fmt.Errorf("certificate %s expired on %s", certFile, leaf.NotAfter.UTC().Format(time.DateOnly))
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// Endpoint is where a running server serves its API, as its data
// directory's AddrFile says.
type Endpoint struct {
	// URL is the API's base URL: http://HOST:PORT or https://HOST:PORT.
	URL string
	// Pin, over HTTPS, is the SHA-256 of the certificate the server
	// serves; nil over HTTP.
	Pin []byte
	// ModelQueue is the task queue of the model calls of what the server
	// starts (ServeOptions.ModelQueue); "" when it does not say (a server
	// from before it said).
	ModelQueue string
	// Actions are the names of the actions the server's workers run
	// (ServeOptions.Actions); nil when it has none or does not say.
	Actions []string
}

// HTTPClient returns a client of the endpoint with that timeout. Over
// HTTPS it trusts the pinned certificate, and no other, whatever names it
// is for: the address in AddrFile is the one listened on (0.0.0.0:8443,
// say), which a certificate seldom names, and the pin came from the
// server's own file on this machine.
func (e Endpoint) HTTPClient(timeout time.Duration) *http.Client {
	c := &http.Client{Timeout: timeout}
	if e.Pin == nil {
		return c
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	pin := e.Pin
	t.TLSClientConfig = &tls.Config{
		MinVersion: tls.VersionTLS12,
		// The pin is checked instead of the names and the CA, below.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the server presented no certificate")
			}
			if sum := sha256.Sum256(cs.PeerCertificates[0].Raw); subtle.ConstantTimeCompare(sum[:], pin) != 1 {
				return fmt.Errorf("the server's certificate is not the one in %s", AddrFile)
			}
			return nil
		},
	}
	c.Transport = t
	return c
}

// RunningEndpoint returns where the server that has dataDir serves its
// API, if one does: it reads dataDir/AddrFile and believes it only while
// the directory's engine runs (engine.RunningAddr), so a file left by a
// killed server does not count.
func RunningEndpoint(dataDir string) (Endpoint, bool) {
	e, ok := readEndpoint(dataDir)
	if !ok {
		return Endpoint{}, false
	}
	if _, alive := engine.RunningAddr(dataDir); !alive {
		return Endpoint{}, false
	}
	return e, true
}

// readEndpoint reads dataDir/AddrFile.
func readEndpoint(dataDir string) (Endpoint, bool) {
	b, err := os.ReadFile(filepath.Join(dataDir, AddrFile))
	if err != nil {
		return Endpoint{}, false
	}
	lines := strings.Fields(string(b))
	if len(lines) == 0 {
		return Endpoint{}, false
	}
	var e Endpoint
	for _, l := range lines[1:] {
		if q, ok := strings.CutPrefix(l, "model:"); ok {
			e.ModelQueue = q
		}
		if a, ok := strings.CutPrefix(l, "action:"); ok {
			e.Actions = append(e.Actions, a)
		}
	}
	if addr, ok := strings.CutPrefix(lines[0], "https://"); ok {
		e.URL = "https://" + addr
		if len(lines) > 1 && !strings.HasPrefix(lines[1], "model:") && !strings.HasPrefix(lines[1], "action:") {
			pin, err := hex.DecodeString(strings.TrimPrefix(lines[1], "sha256:"))
			if err != nil || len(pin) != sha256.Size {
				return Endpoint{}, false
			}
			e.Pin = pin
		}
		return e, true
	}
	e.URL = "http://" + lines[0]
	return e, true
}

// RunningAPI returns the API address (HOST:PORT) of the server that has
// dataDir, if one does (see RunningEndpoint, which also says whether it
// serves HTTPS).
func RunningAPI(dataDir string) (string, bool) {
	e, ok := RunningEndpoint(dataDir)
	if !ok {
		return "", false
	}
	_, addr, _ := strings.Cut(e.URL, "://")
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
