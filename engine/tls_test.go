package engine

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/metrics"
	"go.temporal.io/server/common/primitives"
	"go.temporal.io/server/common/rpc/encryption"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// TestFrontendRequiresClientCert calls the embedded frontend directly over
// gRPC, without the SDK's retries, with and without the right certificate.
func TestFrontendRequiresClientCert(t *testing.T) {
	t.Parallel()
	e := startEngine(t, Options{})
	own := clientTLS(t, e)

	// A client certificate from another CA, presented to a client that
	// otherwise trusts the engine.
	other, err := setupTLS(filepath.Join(t.TempDir(), "tls"), serverNames(""), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	foreign := own.Clone()
	foreign.Certificates = []tls.Certificate{other.client}
	noCert := own.Clone()
	noCert.Certificates = nil

	// What the server's own clients use: its SDK clients (system workflows)
	// and its admin client of the current cluster (scanner, batcher), which
	// dials the frontend as if it were a remote cluster.
	provider, err := encryption.NewTLSConfigProviderFromConfig(
		(&engineTLS{dir: filepath.Join(e.dataDir, tlsDir)}).rootTLS(loopback),
		metrics.NoopMetricsHandler, log.NewNoopLogger(), nil)
	if err != nil {
		t.Fatal(err)
	}
	systemWorker, err := provider.GetFrontendClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	adminClient, err := provider.GetRemoteClusterClientConfig(loopback)
	if err != nil || adminClient == nil {
		t.Fatalf("remote cluster client config for %s: %v, %v", loopback, adminClient, err)
	}

	tests := []struct {
		name  string
		creds credentials.TransportCredentials
		ok    bool
	}{
		{"plain text", insecure.NewCredentials(), false},
		{"TLS without a client certificate", credentials.NewTLS(noCert), false},
		{"client certificate from another CA", credentials.NewTLS(foreign), false},
		{"the data dir's client certificate", credentials.NewTLS(own), true},
		{"the server's system worker", credentials.NewTLS(systemWorker), true},
		{"the server's admin client", credentials.NewTLS(adminClient), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			conn, err := grpc.NewClient(e.HostPort(), grpc.WithTransportCredentials(tt.creds))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			ws := workflowservice.NewWorkflowServiceClient(conn)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, descErr := ws.DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: DefaultNamespace})
			_, listErr := ws.ListWorkflowExecutions(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: DefaultNamespace})
			for call, err := range map[string]error{"DescribeNamespace": descErr, "ListWorkflowExecutions": listErr} {
				switch {
				case tt.ok && err != nil:
					t.Errorf("%s: %v", call, err)
				case !tt.ok && err == nil:
					t.Errorf("%s succeeded, want it refused", call)
				case !tt.ok && status.Code(err) != codes.Unavailable:
					t.Errorf("%s: %v, want a refused connection (Unavailable)", call, err)
				}
			}
		})
	}
}

func TestAttachAndRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	if _, err := Attach(ctx, Options{DataDir: dir, Logger: testLogger(t)}); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Attach before Start: error %v, want ErrNotRunning", err)
	}

	a, err := Start(ctx, Options{DataDir: dir, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	w := newGreetWorker(t, a.Client())

	b, err := Attach(ctx, Options{DataDir: dir, Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("Attach: %v", err)
	}
	if b.Embedded() || b.HostPort() != a.HostPort() {
		t.Errorf("attached engine: Embedded() = %v, HostPort() = %q; want false, %q", b.Embedded(), b.HostPort(), a.HostPort())
	}
	runGreet(t, b.Client(), "attached")
	if err := b.Close(); err != nil {
		t.Fatalf("close attached engine: %v", err)
	}
	runGreet(t, a.Client(), "still here")

	if _, err := Attach(ctx, Options{DataDir: dir, HostPort: a.HostPort()}); err == nil || !strings.Contains(err.Error(), "must be empty") {
		t.Errorf("Attach with HostPort: error %v, want one saying it must be empty", err)
	}

	// A client certificate copied before a restart still works after it:
	// the restart reuses the CA, and the client certificate too.
	copied := clientTLS(t, a)
	before := readTLSFiles(t, dir)
	w.Stop()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Attach(ctx, Options{DataDir: dir}); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Attach after Close: error %v, want ErrNotRunning", err)
	}
	a2 := startEngine(t, Options{DataDir: dir})
	startWorker(t, a2.Client(), []any{Greet}, []any{Hello})
	after := readTLSFiles(t, dir)
	for name, b := range before {
		if !bytes.Equal(b, after[name]) {
			t.Errorf("restart changed tls/%s", name)
		}
	}
	remote := startEngine(t, Options{HostPort: a2.HostPort(), TLS: copied})
	runGreet(t, remote.Client(), "after restart")
}

// newGreetWorker starts a Greet worker on c; the caller stops it, before
// closing the engine of c.
func newGreetWorker(t *testing.T, c client.Client) worker.Worker {
	t.Helper()
	w := worker.New(c, taskQueue, worker.Options{})
	w.RegisterWorkflow(Greet)
	w.RegisterActivity(Hello)
	if err := w.Start(); err != nil {
		t.Fatalf("start worker: %v", err)
	}
	return w
}

// readTLSFiles returns the contents of the files in dir/tls by name.
func readTLSFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	for _, name := range []string{caCertFile, caKeyFile, serverCertFile, serverKeyFile, clientCertFile, clientKeyFile} {
		b, err := os.ReadFile(filepath.Join(dir, tlsDir, name))
		if err != nil {
			t.Fatal(err)
		}
		files[name] = b
	}
	return files
}

func TestPrivateFiles(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	e, err := Start(ctx, Options{DataDir: dir, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "restricted the data dir to its owner") {
		t.Errorf("no log line about the tightened data dir; logs:\n%s", logs.String())
	}
	runGreetOn(t, e)
	// While running: the database's -wal and -shm files are there too.
	checkPrivate(t, dir, dbFile+"-wal", dbFile+"-shm", addrFile)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	checkPrivate(t, dir)

	// What an earlier Vibe left: everything readable by others.
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.Chmod(path, 0o755)
		}
		return os.Chmod(path, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	logs.Reset()
	startEngine(t, Options{DataDir: dir, Logger: logger})
	if !strings.Contains(logs.String(), "restricted files in the data dir") {
		t.Errorf("no log line about tightened files; logs:\n%s", logs.String())
	}
	checkPrivate(t, dir, addrFile)
}

// runGreetOn runs one Greet workflow on e with a worker of its own.
func runGreetOn(t *testing.T, e *Engine) {
	t.Helper()
	w := newGreetWorker(t, e.Client())
	defer w.Stop()
	runGreet(t, e.Client(), "private")
}

// checkPrivate fails unless dir and dir/tls are 0700 and every regular
// file in them is 0600, and unless the files named in want exist.
func checkPrivate(t *testing.T, dir string, want ...string) {
	t.Helper()
	want = append(want, dbFile, logFile, lockFile,
		filepath.Join(tlsDir, caCertFile), filepath.Join(tlsDir, caKeyFile),
		filepath.Join(tlsDir, serverCertFile), filepath.Join(tlsDir, serverKeyFile),
		filepath.Join(tlsDir, clientCertFile), filepath.Join(tlsDir, clientKeyFile))
	var seen []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		switch {
		case d.IsDir() && fi.Mode().Perm() != 0o700:
			t.Errorf("dir %s has mode %v, want 0700", rel, fi.Mode().Perm())
		case fi.Mode().IsRegular() && fi.Mode().Perm() != 0o600:
			t.Errorf("file %s has mode %v, want 0600", rel, fi.Mode().Perm())
		}
		seen = append(seen, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range want {
		if !slices.Contains(seen, name) {
			t.Errorf("no %s in the data dir (have %v)", name, seen)
		}
	}
}

// syncBuffer is a bytes.Buffer for a logger used from several goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *syncBuffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Reset()
}

// canBind reports whether this machine can listen on ip (127.0.0.2 is
// loopback on Linux, not on macOS without an alias).
func canBind(ip string) bool {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

func TestListenHost(t *testing.T) {
	t.Parallel()
	if !canBind("127.0.0.2") {
		t.Skip("cannot listen on 127.0.0.2, which these tests use as a second interface")
	}
	hostname, _ := os.Hostname()
	tests := []struct {
		name       string
		listenHost string
		wantHost   string   // of HostPort
		wantNames  []string // in the server certificate, besides the loopback names
	}{
		{"default", "", "127.0.0.1", nil},
		{"loopback", "127.0.0.1", "127.0.0.1", nil},
		{"one interface", "127.0.0.2", "127.0.0.2", []string{"127.0.0.2"}},
		{"every interface", "0.0.0.0", "127.0.0.1", []string{hostname}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			e := startEngine(t, Options{DataDir: dir, ListenHost: tt.listenHost})
			host, port, err := net.SplitHostPort(e.HostPort())
			if err != nil || host != tt.wantHost {
				t.Errorf("HostPort() = %q, want host %s", e.HostPort(), tt.wantHost)
			}
			names := certNames(t, filepath.Join(dir, tlsDir, serverCertFile))
			for _, want := range append([]string{"localhost", "127.0.0.1", "::1"}, tt.wantNames...) {
				if want != "" && !slices.Contains(names, want) {
					t.Errorf("server certificate names %v lack %s", names, want)
				}
			}
			if addr, ok := RunningAddr(dir); !ok || addr != e.HostPort() {
				t.Errorf("RunningAddr = %q, %v; want %q", addr, ok, e.HostPort())
			}
			// The second process's path dials HostPort and checks the
			// server certificate against it.
			b := attach(t, dir)
			if _, err := b.Client().WorkflowService().DescribeNamespace(context.Background(),
				&workflowservice.DescribeNamespaceRequest{Namespace: DefaultNamespace}); err != nil {
				t.Errorf("DescribeNamespace through Attach: %v", err)
			}
			// 127.0.0.2 reaches a frontend on every interface, and only that.
			reached := dialable(net.JoinHostPort("127.0.0.2", port))
			if want := tt.listenHost == "0.0.0.0" || tt.listenHost == "127.0.0.2"; reached != want {
				t.Errorf("frontend reachable at 127.0.0.2: %v, want %v", reached, want)
			}
		})
	}
}

// attach attaches to the engine on dir until the test ends.
func attach(t *testing.T, dir string) *Engine {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := Attach(ctx, Options{DataDir: dir, Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("Attach: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// dialable reports whether a TCP connection to addr succeeds.
func dialable(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func TestListenHostChangeRenewsServerCert(t *testing.T) {
	t.Parallel()
	if !canBind("127.0.0.2") {
		t.Skip("cannot listen on 127.0.0.2")
	}
	dir := t.TempDir()
	e := startEngine(t, Options{DataDir: dir})
	before := readTLSFiles(t, dir)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	startEngine(t, Options{DataDir: dir, ListenHost: "127.0.0.2"})
	after := readTLSFiles(t, dir)
	for name, changed := range map[string]bool{caCertFile: false, caKeyFile: false, clientCertFile: false, serverCertFile: true} {
		if got := !bytes.Equal(before[name], after[name]); got != changed {
			t.Errorf("tls/%s changed: %v, want %v", name, got, changed)
		}
	}
	if names := certNames(t, filepath.Join(dir, tlsDir, serverCertFile)); !slices.Contains(names, "127.0.0.2") {
		t.Errorf("server certificate names %v lack 127.0.0.2", names)
	}
	attach(t, dir)
}

func TestBadListenHost(t *testing.T) {
	t.Parallel()
	_, err := Start(context.Background(), Options{DataDir: t.TempDir(), ListenHost: "localhost", Logger: testLogger(t)})
	if err == nil || !strings.Contains(err.Error(), `listen host "localhost" is not an IP address`) {
		t.Errorf("error = %v, want one naming the listen host", err)
	}
}

// TestServerConfigListenHost: only the frontend leaves loopback, and the
// server's own clients dial it where clients do.
func TestServerConfigListenHost(t *testing.T) {
	t.Parallel()
	fh, err := parseListenHost("0.0.0.0")
	if err != nil {
		t.Fatal(err)
	}
	ports := map[primitives.ServiceName]int{
		primitives.FrontendService: 7233, primitives.HistoryService: 7234,
		primitives.MatchingService: 7235, primitives.WorkerService: 7239,
	}
	cfg := serverConfig("temporal.db", fh, ports)
	for svc, s := range cfg.Services {
		want := loopback
		if svc == string(primitives.FrontendService) {
			want = "0.0.0.0"
		}
		if s.RPC.BindOnIP != want {
			t.Errorf("%s binds on %s, want %s", svc, s.RPC.BindOnIP, want)
		}
	}
	if got := cfg.PublicClient.HostPort; got != "127.0.0.1:7233" {
		t.Errorf("PublicClient.HostPort = %q, want 127.0.0.1:7233", got)
	}
}

// certNames returns the DNS names and IP addresses of the certificate in path.
func certNames(t *testing.T, path string) []string {
	t.Helper()
	c := parseCert(t, path)
	names := slices.Clone(c.DNSNames)
	for _, ip := range c.IPAddresses {
		names = append(names, ip.String())
	}
	return names
}

func parseCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatalf("%s: no PEM block", path)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSetupTLS covers what a start does with the tls directory it finds,
// without starting a server.
func TestSetupTLS(t *testing.T) {
	t.Parallel()
	names := serverNames("")
	tests := []struct {
		name    string
		damage  func(t *testing.T, dir string) // to a complete tls dir
		wantErr string                         // empty: setupTLS succeeds
		changed []string                       // files setupTLS must replace
	}{
		{name: "complete", damage: func(*testing.T, string) {}},
		{
			name:    "server certificate lacks a name",
			damage:  func(t *testing.T, dir string) { reissue(t, dir, []string{"localhost"}) },
			changed: []string{serverCertFile, serverKeyFile},
		},
		{
			name:    "server certificate missing",
			damage:  func(t *testing.T, dir string) { remove(t, dir, serverCertFile) },
			changed: []string{serverCertFile, serverKeyFile},
		},
		{
			name: "client certificate from another CA",
			damage: func(t *testing.T, dir string) {
				other := filepath.Join(t.TempDir(), "tls")
				if _, err := setupTLS(other, names, testLogger(t)); err != nil {
					t.Fatal(err)
				}
				for _, f := range []string{clientCertFile, clientKeyFile} {
					b, err := os.ReadFile(filepath.Join(other, f))
					if err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
						t.Fatal(err)
					}
				}
			},
			changed: []string{clientCertFile, clientKeyFile},
		},
		{
			name:    "CA key missing",
			damage:  func(t *testing.T, dir string) { remove(t, dir, caKeyFile) },
			wantErr: "read engine CA key",
		},
		{
			name:    "CA certificate missing",
			damage:  func(t *testing.T, dir string) { remove(t, dir, caCertFile) },
			wantErr: caCertFile + " is missing but client.pem, issued by it, exists",
		},
		{
			name: "CA certificate corrupt",
			damage: func(t *testing.T, dir string) {
				if err := os.WriteFile(filepath.Join(dir, caCertFile), []byte("junk"), 0o600); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: caCertFile + " with key",
		},
		{
			// A start that died after writing the CA key: nothing was
			// issued, so a new CA is safe.
			name:    "only the CA key",
			damage:  func(t *testing.T, dir string) { remove(t, dir, caCertFile, serverCertFile, clientCertFile) },
			changed: []string{caCertFile, caKeyFile, serverCertFile, serverKeyFile, clientCertFile, clientKeyFile},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "tls")
			if _, err := setupTLS(dir, names, testLogger(t)); err != nil {
				t.Fatal(err)
			}
			tt.damage(t, dir)
			before := readDir(t, dir)
			_, err := setupTLS(dir, names, testLogger(t))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				if !strings.Contains(err.Error(), dir) {
					t.Errorf("error %q does not name the file", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			after := readDir(t, dir)
			for name, b := range after {
				changed := !bytes.Equal(before[name], b)
				if want := slices.Contains(tt.changed, name); changed != want {
					t.Errorf("%s changed: %v, want %v", name, changed, want)
				}
			}
		})
	}
}

// reissue replaces dir's server certificate by one for names only.
func reissue(t *testing.T, dir string, names []string) {
	t.Helper()
	ca, key, _, err := loadOrCreateCA(dir, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	remove(t, dir, serverCertFile)
	tmpl := &x509.Certificate{ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, DNSNames: names}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	if _, _, err := loadOrIssue(dir, serverCertFile, serverKeyFile, tmpl, ca, key, roots, nil); err != nil {
		t.Fatal(err)
	}
}

func remove(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, n := range names {
		if err := os.Remove(filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
}

// readDir returns the contents of dir's files by name.
func readDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = b
	}
	return files
}

func TestLoadClientTLS(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "tls")
	if _, err := setupTLS(dir, serverNames(""), testLogger(t)); err != nil {
		t.Fatal(err)
	}
	cert, key, ca := filepath.Join(dir, clientCertFile), filepath.Join(dir, clientKeyFile), filepath.Join(dir, caCertFile)
	missing := filepath.Join(dir, "missing.pem")
	tests := []struct {
		name                 string
		cert, key, ca        string
		wantErr              string // empty: no error
		wantCert, wantRootCA bool
	}{
		{name: "client certificate and CA", cert: cert, key: key, ca: ca, wantCert: true, wantRootCA: true},
		{name: "system roots", cert: cert, key: key, wantCert: true},
		{name: "no client certificate", ca: ca, wantRootCA: true},
		{name: "missing certificate", cert: missing, key: key, ca: ca, wantErr: missing},
		{name: "missing key", cert: cert, key: missing, ca: ca, wantErr: missing},
		{name: "missing CA", cert: cert, key: key, ca: missing, wantErr: missing},
		{name: "certificate without key", cert: cert, wantErr: cert + " given without its key"},
		{name: "key without certificate", key: key, wantErr: key + " given without its certificate"},
		{name: "key of another certificate", cert: cert, key: filepath.Join(dir, serverKeyFile), ca: ca, wantErr: "client certificate " + cert},
		{name: "CA file is not PEM", cert: cert, key: key, ca: filepath.Join(dir, "..", "junk"), wantErr: "junk: no PEM certificate"},
	}
	if err := os.WriteFile(filepath.Join(dir, "..", "junk"), []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := LoadClientTLS(tt.cert, tt.key, tt.ca)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := len(cfg.Certificates) == 1; got != tt.wantCert {
				t.Errorf("client certificate loaded: %v, want %v", got, tt.wantCert)
			}
			if got := cfg.RootCAs != nil; got != tt.wantRootCA {
				t.Errorf("RootCAs set: %v, want %v", got, tt.wantRootCA)
			}
		})
	}
}
