//go:build unix

package clustertest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Services are the Temporal services, each run as a process of its own.
var Services = []string{"history", "matching", "frontend", "worker"}

// Cluster is a running Temporal cluster on PostgreSQL. Its methods are
// safe for concurrent use.
type Cluster struct {
	// HostPort is the frontend's address, for --temporal.
	HostPort string
	// Version is the Temporal server's module version.
	Version string

	t      testing.TB
	dir    string // config.yaml, dynamicconfig.yaml, <service>.log
	bins   binaries
	pg     *postgres
	mu     sync.Mutex
	procs  map[string]*serviceProc
	client client.Client
}

// serviceProc is one running service's process.
type serviceProc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// Start starts a cluster for t and stops it when t ends: PostgreSQL with
// the databases temporal and temporal_visibility set up by
// temporal-sql-tool, then the four services. It returns once the frontend
// answers and the cluster can register namespaces. It skips t when
// PostgreSQL is not installed, and in -short mode.
func Start(t testing.TB) *Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a Temporal cluster on PostgreSQL")
	}
	pgBin, err := findPostgres()
	if err != nil {
		t.Skip(err.Error())
	}
	t0 := time.Now()
	bins, err := build()
	if err != nil {
		t.Fatal(err)
	}
	tBuild := time.Since(t0)
	pg, err := startPostgres(pgBin, freePort(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pg.stop)
	c := &Cluster{t: t, dir: t.TempDir(), bins: bins, pg: pg, Version: bins.version, procs: map[string]*serviceProc{}}
	for _, db := range []struct{ name, schema string }{{"temporal", "temporal"}, {"temporal_visibility", "visibility"}} {
		versioned := filepath.Join(bins.moduleDir, "schema", "postgresql", "v12", db.schema, "versioned")
		for _, args := range [][]string{
			{"create-database"},
			{"setup-schema", "-v", "0.0"},
			{"update-schema", "-d", versioned},
		} {
			if err := c.sqlTool(db.name, args...); err != nil {
				t.Fatalf("%v\npostgres:\n%s", err, pg.log())
			}
		}
	}
	tSchema := time.Since(t0)
	ports := map[string]int{}
	for _, s := range Services {
		// The membership table keeps ports as a smallint: below 32768.
		ports[s+".grpc"], ports[s+".membership"] = freePort(t), freeLowPort(t)
	}
	ports["frontend.http"] = freePort(t)
	c.HostPort = fmt.Sprintf("127.0.0.1:%d", ports["frontend.grpc"])
	if err := c.writeConfig(ports); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.stop)
	// The first service to start writes the cluster's metadata; services
	// started with it race to write it and the losers exit. A cluster's
	// supervisor would restart them; here the others wait for the record.
	c.StartService(Services[0])
	waitFor(t, "the cluster's metadata", time.Minute, func() bool {
		if name, exited := c.exited(); exited {
			t.Fatalf("temporal %s exited:\n%s", name, c.Log(name))
		}
		n, err := pg.query("temporal", "SELECT count(*) FROM cluster_metadata_info")
		return err == nil && n != "0"
	})
	for _, s := range Services[1:] {
		c.StartService(s)
	}
	c.client, err = client.NewLazyClient(client.Options{HostPort: c.HostPort, Namespace: "temporal-system", Logger: quiet{}})
	if err != nil {
		t.Fatal(err)
	}
	c.WaitReady(time.Minute)
	t.Logf("Temporal %s cluster on PostgreSQL at %s: binaries %s, schema %s, services ready %s",
		bins.version, c.HostPort, tBuild.Round(time.Millisecond), (tSchema - tBuild).Round(time.Millisecond),
		(time.Since(t0) - tSchema).Round(time.Millisecond))
	return c
}

// sqlTool runs temporal-sql-tool on database db.
func (c *Cluster) sqlTool(db string, args ...string) error {
	all := append([]string{"--plugin", "postgres12", "--ep", "127.0.0.1", "-p", strconv.Itoa(c.pg.port), "-u", "temporal", "--db", db}, args...)
	out, err := exec.Command(c.bins.sqlTool, all...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("temporal-sql-tool %v: %w\n%s", all, err, out)
	}
	return nil
}

// StartService starts one service (again, after Kill), on the ports it had.
func (c *Cluster) StartService(name string) {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.procs[name]; ok {
		select {
		case <-p.done:
		default:
			c.t.Fatalf("temporal %s is running already", name)
		}
	}
	logf, err := os.OpenFile(filepath.Join(c.dir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(c.bins.server, "--config-file", filepath.Join(c.dir, "config.yaml"), "--allow-no-auth", "start", "--service", name)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = procAttr(nil)
	if err := cmd.Start(); err != nil {
		c.t.Fatalf("start temporal %s: %v", name, err)
	}
	p := &serviceProc{cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(p.done) }()
	c.procs[name] = p
}

// Kill SIGKILLs one service and waits for its process to end.
func (c *Cluster) Kill(name string) {
	c.t.Helper()
	c.mu.Lock()
	p, ok := c.procs[name]
	c.mu.Unlock()
	if !ok {
		c.t.Fatalf("no temporal service %q", name)
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Log is the tail of a service's log (its last 60 lines), for a failing
// test to show.
func (c *Cluster) Log(name string) string {
	b, _ := os.ReadFile(filepath.Join(c.dir, name+".log"))
	return tail(string(b), 60)
}

// WaitReady waits until the frontend answers and the history service
// serves (a namespace can be described), failing t after timeout.
func (c *Cluster) WaitReady(timeout time.Duration) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var err error
	for {
		_, err = c.client.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: "temporal-system"})
		if err == nil {
			return
		}
		if name, exited := c.exited(); exited {
			c.t.Fatalf("temporal %s exited:\n%s", name, c.Log(name))
		}
		select {
		case <-ctx.Done():
			c.t.Fatalf("the Temporal cluster at %s did not become ready: %v\nfrontend:\n%s\nhistory:\n%s", c.HostPort, err, c.Log("frontend"), c.Log("history"))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// exited names a service whose process has ended.
func (c *Cluster) exited() (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, p := range c.procs {
		select {
		case <-p.done:
			return name, true
		default:
		}
	}
	return "", false
}

// CreateNamespace registers a namespace with its retention, as `temporal
// operator namespace create --namespace NAME --retention R` does (the same
// call), and waits until the frontend knows it.
func (c *Cluster) CreateNamespace(name string, retention time.Duration) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := c.client.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace:                        name,
		WorkflowExecutionRetentionPeriod: durationpb.New(retention),
	})
	if err != nil {
		c.t.Fatalf("register namespace %s: %v", name, err)
	}
	for {
		_, err = c.client.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: name})
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			c.t.Fatalf("namespace %s: %v", name, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// stop kills every service: nothing of the cluster outlives the test, and
// a graceful stop (the frontend drains for seconds) would only slow it.
func (c *Cluster) stop() {
	if c.client != nil {
		c.client.Close()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.procs {
		p.cmd.Process.Kill()
		<-p.done
	}
}

// waitFor polls cond until it holds, failing t after timeout.
func waitFor(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// freePort is a loopback port free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// freeLowPort is a loopback port below 32768 (the kernel's ephemeral ports
// start above it) free a moment ago.
func freeLowPort(t testing.TB) int {
	t.Helper()
	for range 100 {
		port := 20000 + rand.IntN(12000)
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			ln.Close()
			return port
		}
	}
	t.Fatal("no free port below 32768")
	return 0
}

// quiet drops the SDK client's logs.
type quiet struct{}

func (quiet) Debug(string, ...any) {}
func (quiet) Info(string, ...any)  {}
func (quiet) Warn(string, ...any)  {}
func (quiet) Error(string, ...any) {}

// Pids are the process ids of the running services, by name, and of
// PostgreSQL's postmaster as "postgres" (its backends are its children),
// for a benchmark to read their CPU time from /proc. A service that has
// exited is left out.
func (c *Cluster) Pids() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	pids := map[string]int{"postgres": c.pg.cmd.Process.Pid}
	for name, p := range c.procs {
		select {
		case <-p.done:
		default:
			pids[name] = p.cmd.Process.Pid
		}
	}
	return pids
}
