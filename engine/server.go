package engine

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/membership/static"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
	"go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/protobuf/types/known/durationpb"
)

// clusterName is the name of the embedded single-node cluster. It is stored
// in the database on first start and must never change afterwards.
const clusterName = "active"

// loopback is where every service of the embedded server listens, except
// the frontend when Options.ListenHost says otherwise.
const loopback = "127.0.0.1"

// frontendHost is where the embedded frontend listens and where its
// clients, the server's own included, dial it.
type frontendHost struct {
	bind string // IP address the frontend listens on
	dial string // IP address clients dial: bind, or loopback for a wildcard
}

// parseListenHost checks Options.ListenHost.
func parseListenHost(listenHost string) (frontendHost, error) {
	if listenHost == "" {
		return frontendHost{bind: loopback, dial: loopback}, nil
	}
	ip := net.ParseIP(listenHost)
	switch {
	case ip == nil:
		return frontendHost{}, fmt.Errorf("listen host %q is not an IP address", listenHost)
	case ip.IsUnspecified() && ip.To4() != nil:
		return frontendHost{bind: ip.String(), dial: loopback}, nil
	case ip.IsUnspecified():
		return frontendHost{bind: ip.String(), dial: "::1"}, nil
	}
	return frontendHost{bind: ip.String(), dial: ip.String()}, nil
}

// embedded is a configured, not yet started, in-process Temporal server.
type embedded struct {
	server   temporal.Server
	hostPort string   // frontend
	logOut   *logSink // DataDir/temporal.log, closed by the caller after Stop
}

// logSink is the server's log file. Temporal v1.32 leaves goroutines
// running after Stop (the parent-close-policy processor's SDK worker, for
// one, has no Stop) and they keep logging failed polls. After Close their
// lines are dropped, instead of zap reporting each failed write on stderr.
type logSink struct {
	mu sync.Mutex
	f  *os.File // nil once closed
}

// Write writes p to the file, or drops it once the sink is closed.
func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return len(p), nil
	}
	return s.f.Write(p)
}

// Sync flushes the file; zap calls it on fatal log entries.
func (s *logSink) Sync() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	return s.f.Sync()
}

// Close closes the file; later writes are dropped.
func (s *logSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}

// newServer prepares the SQLite file (schema on a new file, the namespace)
// and builds the server. The caller holds the data directory's lock.
func newServer(opts Options, fh frontendHost, certs *engineTLS) (_ *embedded, err error) {
	frontendPort := opts.FrontendPort
	if frontendPort != 0 {
		// The server would log.Fatal the whole process on a taken port.
		if err := checkPortFree(fh.bind, frontendPort); err != nil {
			return nil, err
		}
	} else if frontendPort, err = freePort(fh.bind); err != nil {
		return nil, err
	}
	ports := map[primitives.ServiceName]int{primitives.FrontendService: frontendPort}
	for _, svc := range []primitives.ServiceName{primitives.HistoryService, primitives.MatchingService, primitives.WorkerService} {
		if ports[svc], err = freePort(loopback); err != nil {
			return nil, err
		}
	}

	f, err := os.OpenFile(filepath.Join(opts.DataDir, logFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, privateFileMode)
	if err != nil {
		return nil, fmt.Errorf("open server log: %w", err)
	}
	logOut := &logSink{f: f}
	defer func() {
		if err != nil {
			logOut.Close()
		}
	}()
	level := opts.ServerLogLevel
	if level == "" {
		level = "warn"
	}
	zl, err := fileLogger(logOut, level)
	if err != nil {
		return nil, err
	}

	cfg := serverConfig(filepath.Join(opts.DataDir, dbFile), fh, ports)
	cfg.Global.TLS = certs.rootTLS(fh.dial)
	sqlCfg := cfg.Persistence.DataStores[sqliteplugin.PluginName].SQL
	if err := prepareDB(sqlCfg, opts); err != nil {
		return nil, err
	}

	hosts := make(map[primitives.ServiceName]static.Hosts, len(ports))
	for svc, port := range ports {
		hosts[svc] = static.SingleLocalHost(joinHostPort(loopback, port))
	}
	frontend := joinHostPort(fh.dial, frontendPort)
	hosts[primitives.FrontendService] = static.SingleLocalHost(frontend)
	services := temporal.DefaultServices
	if opts.NoSystemWorkers {
		services = slices.DeleteFunc(slices.Clone(services), func(s string) bool { return s == string(primitives.WorkerService) })
	}
	srv, err := temporal.NewServer(
		temporal.WithConfig(cfg),
		temporal.ForServices(services),
		temporal.WithStaticHosts(hosts),
		temporal.WithLogger(zl),
		temporal.WithDynamicConfigClient(dynamicConfig(opts.NoSystemWorkers)),
	)
	if err != nil {
		return nil, fmt.Errorf("create temporal server: %w", err)
	}
	return &embedded{server: srv, hostPort: frontend, logOut: logOut}, nil
}

// serverConfig is the configuration of a single-node server on one SQLite
// file with one history shard, every service on loopback but the frontend,
// which listens on fh.bind. TLS is left to the caller.
func serverConfig(dbPath string, fh frontendHost, ports map[primitives.ServiceName]int) *config.Config {
	sqlCfg := &config.SQL{
		PluginName:   sqliteplugin.PluginName,
		DatabaseName: dbPath,
		ConnectAttributes: map[string]string{
			"mode":         "rwc",
			"journal_mode": "wal",    // readers do not block the writer
			"synchronous":  "NORMAL", // durable across process crashes; WAL makes it safe
			"busy_timeout": "5000",   // ms; connections of one pool wait for each other
		},
	}
	frontend := joinHostPort(fh.dial, ports[primitives.FrontendService])
	services := make(map[string]config.Service, len(ports))
	for svc, port := range ports {
		// With static hosts there is no membership ring, so no
		// MembershipPort: it is read only by ringpop.
		bind := loopback
		if svc == primitives.FrontendService {
			bind = fh.bind
		}
		services[string(svc)] = config.Service{RPC: config.RPC{GRPCPort: port, BindOnIP: bind}}
	}
	return &config.Config{
		Global: config.Global{
			Membership: config.Membership{MaxJoinDuration: 30 * time.Second, BroadcastAddress: loopback},
			// Metrics nil: no Prometheus listener. PProf port 0: none.
		},
		Persistence: config.Persistence{
			DefaultStore:     sqliteplugin.PluginName,
			VisibilityStore:  sqliteplugin.PluginName,
			NumHistoryShards: 1, // fixed forever once the file exists
			DataStores: map[string]config.DataStore{
				sqliteplugin.PluginName: {SQL: sqlCfg},
			},
		},
		ClusterMetadata: &cluster.Config{
			EnableGlobalNamespace:    false,
			FailoverVersionIncrement: 10,
			MasterClusterName:        clusterName,
			CurrentClusterName:       clusterName,
			ClusterInformation: map[string]cluster.ClusterInformation{
				clusterName: {Enabled: true, InitialFailoverVersion: 1, RPCAddress: frontend},
			},
		},
		DCRedirectionPolicy: config.DCRedirectionPolicy{Policy: "noop"},
		Services:            services,
		Archival: config.Archival{
			History:    config.HistoryArchival{State: "disabled"},
			Visibility: config.VisibilityArchival{State: "disabled"},
		},
		NamespaceDefaults: config.NamespaceDefaults{
			Archival: config.ArchivalNamespaceDefaults{
				History:    config.HistoryArchivalNamespaceDefaults{State: "disabled"},
				Visibility: config.VisibilityArchivalNamespaceDefaults{State: "disabled"},
			},
		},
		// The server's own worker service (system workflows) dials this.
		PublicClient: config.PublicClient{HostPort: frontend},
	}
}

// HistoryCacheSize is how many workflows' state the embedded engine keeps
// in memory: enough for the workflows a busy worker has in flight (a batch
// has C groups in flight, its items inside them).
const HistoryCacheSize = 256

// dynamicConfig overrides server defaults that suit clusters with many
// history shards but not our single one.
func dynamicConfig(noSystemWorkers bool) dynamicconfig.StaticClient {
	dc := dynamicconfig.StaticClient{
		// A shard's transfer queue, which dispatches every workflow and
		// activity task, is read at most this often a second (default 20).
		// With one shard that capped back-to-back one-activity workflows at
		// ten a second: each workflow task waited about 45 ms for dispatch
		// and a bare step took 100 ms instead of 20-30 ms.
		dynamicconfig.TransferProcessorMaxPollRPS.Key(): 1000,
		// How long a history long poll (waiting for a workflow's result, an
		// update's outcome) waits before returning empty and being re-issued.
		// The server drops a notification when the waiter has not consumed
		// the previous one yet, so a result that comes quickly after another
		// event can be missed until the poll expires: with the faster
		// dispatch above, about one result in 200 took 20 s (the default)
		// to reach run.Get instead of milliseconds. A half-second poll bounds
		// that delay at little cost: a waiting client re-polls twice a
		// second, answered from the server's cache.
		dynamicconfig.HistoryLongPollExpirationInterval.Key(): 500 * time.Millisecond,
		// The history service keeps the state of up to this many workflows
		// in memory (default 128,000, for a host among many). A batch's
		// items are workflows that finish and are not touched again: with
		// the default an embedded engine's memory grew with every item.
		dynamicconfig.HistoryCacheHostLevelMaxSize.Key(): HistoryCacheSize,
		// Lists and counts of workflows (visibility) are limited to 10 a
		// second per namespace (default), a guard for a cluster's shared
		// database: past it the frontend refuses, and the SDK tries again
		// after a back-off, so one list in five of a client listing 70
		// times a second took 0.4-0.5 s instead of 3 ms. The embedded
		// engine serves one user on its own file.
		dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Key(): 1000,
	}
	if noSystemWorkers {
		// A parent that closes with ten children or more open hands their
		// close policies to a system workflow, which only the worker
		// service runs: without it, the history service applies them.
		dc[dynamicconfig.EnableParentClosePolicyWorker.Key()] = false
	}
	return dc
}

// prepareDB checks an existing database file (checkDB) or creates the
// schema in a new one, and creates the namespace with Vibe's search
// attributes if it does not exist. All must happen before the server
// starts: the server neither creates a schema nor sees a namespace
// inserted behind its back until its cache refreshes.
func prepareDB(sqlCfg *config.SQL, opts Options) error {
	isNew, err := createDBFile(sqlCfg.DatabaseName)
	if err != nil {
		return err
	}
	if isNew {
		if err := emptyDB(sqlCfg.DatabaseName); err != nil {
			return err
		}
		if err := writeSchema(sqlCfg.DatabaseName); err != nil {
			return fmt.Errorf("create the engine's database %s: %w", sqlCfg.DatabaseName, err)
		}
	} else if err := checkDB(sqlCfg.DatabaseName); err != nil {
		return err
	}
	if err := markDB(sqlCfg.DatabaseName); err != nil {
		return err
	}

	ns, err := sqlite.NewNamespaceConfig(clusterName, opts.Namespace, false, searchAttributeTypes(opts.SearchAttributes))
	if err != nil {
		return fmt.Errorf("namespace %q config: %w", opts.Namespace, err)
	}
	retention := opts.Retention
	if retention == 0 {
		retention = 24 * time.Hour
	}
	ns.Detail.Config.Retention = durationpb.New(retention)
	if err := sqlite.CreateNamespaces(sqlCfg, ns); err != nil { // no-op if it exists
		return fmt.Errorf("create namespace %q: %w", opts.Namespace, err)
	}
	return nil
}

// createDBFile creates an empty database file private to its owner, if
// there is none, and reports whether the file is new (empty: a start killed
// before it made the schema leaves an empty file). SQLite would otherwise
// create it 0644 (less the umask), and it gives temporal.db-wal and -shm
// the permissions of temporal.db.
func createDBFile(path string) (isNew bool, err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, privateFileMode)
	if err != nil {
		return false, fmt.Errorf("open database: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("stat database: %w", err)
	}
	return fi.Size() == 0, nil
}

// fileLogger returns a server logger writing JSON lines to w.
func fileLogger(w zapcore.WriteSyncer, level string) (log.Logger, error) {
	var lvl zapcore.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("server log level %q: %w", level, err)
	}
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	core := zapcore.NewCore(zapcore.NewJSONEncoder(enc), w, lvl)
	return log.NewZapLogger(zap.New(core, zap.AddCaller())), nil
}

// joinHostPort returns host:port.
func joinHostPort(host string, port int) string {
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// hostPort returns the loopback address with port.
func hostPort(port int) string { return joinHostPort(loopback, port) }

// checkPortFree reports an error naming port if it cannot be listened on at
// host.
func checkPortFree(host string, port int) error {
	l, err := net.Listen("tcp", joinHostPort(host, port))
	if err != nil {
		return fmt.Errorf("frontend port %d is not available: %w", port, err)
	}
	return l.Close()
}

// freePort returns a port nothing listens on at host. Like the server's own
// test helper (common/testing/freeport) it connects to the port and closes
// the accepted side first, which leaves the port in TIME_WAIT: Linux then
// does not hand it out again as an ephemeral port for a while, but the
// server can still bind it (SO_REUSEADDR). That keeps parallel engines from
// being given the same port between this call and the server's listen.
func freePort(host string) (int, error) {
	l, err := net.Listen("tcp", joinHostPort(host, 0))
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	addr := *l.Addr().(*net.TCPAddr)
	if addr.IP.IsUnspecified() { // a wildcard listener is reached on loopback
		addr.IP = net.ParseIP(loopback)
	}
	c, err := net.DialTCP("tcp", nil, &addr)
	if err != nil {
		return addr.Port, nil
	}
	if s, err := l.Accept(); err == nil {
		s.Close()
	}
	c.Close()
	return addr.Port, nil
}
