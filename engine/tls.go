package engine

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"go.temporal.io/server/common/config"
)

// Files in DataDir/tls; see the package documentation.
const (
	tlsDir         = "tls"
	caCertFile     = "ca.pem"
	caKeyFile      = "ca-key.pem"
	serverCertFile = "server.pem"
	serverKeyFile  = "server-key.pem"
	clientCertFile = "client.pem"
	clientKeyFile  = "client-key.pem"
)

const (
	// caValidity is long because replacing the CA means copying a new
	// client certificate to every remote worker.
	caValidity = 20 * 365 * 24 * time.Hour
	// leafValidity is that of the server and client certificates. They are
	// checked at every start, so it could be shorter; it is long so that a
	// client certificate copied to a remote worker keeps working.
	leafValidity = 10 * 365 * 24 * time.Hour
	// renewBefore: a server or client certificate expiring sooner than this
	// is replaced at start.
	renewBefore = 30 * 24 * time.Hour
	// clockSkew backdates new certificates, for peers whose clock is behind.
	clockSkew = time.Hour
)

// ClientCertFiles returns the paths of the client certificate, its private
// key and the CA certificate in dataDir/tls (empty dataDir means
// DefaultDataDir). They are what a client needs to reach the embedded engine
// of dataDir: [Attach] loads them, and a worker on another machine uses
// copies of them through [LoadClientTLS] and Options.TLS. The Temporal CLI
// takes them as --tls-cert-path, --tls-key-path and --tls-ca-path.
//
// The files exist once an embedded engine has started on dataDir. Whoever
// holds the client key has full access to the engine: copy it only to
// machines that run workers, and keep it private there.
func ClientCertFiles(dataDir string) (certFile, keyFile, caFile string) {
	if dataDir == "" {
		dataDir = DefaultDataDir
	}
	dir := filepath.Join(dataDir, tlsDir)
	return filepath.Join(dir, clientCertFile), filepath.Join(dir, clientKeyFile), filepath.Join(dir, caCertFile)
}

// LoadClientTLS returns a TLS configuration for Options.TLS from PEM files:
// the client certificate and its private key (PKCS #8, PKCS #1 or SEC 1),
// presented to the server for mutual TLS, and the CA certificates that the
// server's certificate must chain to.
//
// An empty caFile means the system's roots, as for Temporal Cloud. Empty
// certFile and keyFile mean no client certificate, for a cluster that
// authenticates clients another way; one without the other is an error.
//
// The server name checked against the server's certificate is the host the
// client dials. Set ServerName on the result when that host is not among the
// certificate's names, e.g. a worker dialing through a tunnel.
func LoadClientTLS(certFile, keyFile, caFile string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	switch {
	case certFile != "" && keyFile != "":
		certPEM, err := os.ReadFile(certFile)
		if err != nil {
			return nil, fmt.Errorf("read client certificate: %w", err)
		}
		keyPEM, err := os.ReadFile(keyFile)
		if err != nil {
			return nil, fmt.Errorf("read client key: %w", err)
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("client certificate %s with key %s: %w", certFile, keyFile, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	case certFile != "":
		return nil, fmt.Errorf("client certificate %s given without its key file", certFile)
	case keyFile != "":
		return nil, fmt.Errorf("client key %s given without its certificate file", keyFile)
	}
	if caFile != "" {
		caPEM, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("read CA certificate: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, fmt.Errorf("CA certificate %s: no PEM certificate found", caFile)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

// engineTLS is the embedded engine's certificate material in DataDir/tls,
// all issued by one private CA.
type engineTLS struct {
	dir    string            // DataDir/tls
	ca     *x509.Certificate // trusted by the server for clients, by clients for the server
	client tls.Certificate   // presented by the engine's own SDK client
}

// path returns the path of a file in the tls directory.
func (t *engineTLS) path(name string) string { return filepath.Join(t.dir, name) }

// clientConfig returns the TLS configuration of an SDK client of the
// engine. The server name is left to gRPC, which takes the dialed host: an
// IP address or name that the server certificate lists.
func (t *engineTLS) clientConfig() *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(t.ca)
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{t.client},
		RootCAs:      pool,
	}
}

// rootTLS returns the server's TLS settings: every gRPC listener requires a
// client certificate issued by the CA, and every connection the server
// makes to itself presents one. dialHost is the host of the frontend address
// the server's own clients dial.
func (t *engineTLS) rootTLS(dialHost string) config.RootTLS {
	ca := []string{t.path(caCertFile)}
	server := config.ServerTLS{
		CertFile:          t.path(serverCertFile),
		KeyFile:           t.path(serverKeyFile),
		ClientCAFiles:     ca,
		RequireClientAuth: true,
	}
	// ServerName stays empty: gRPC checks the dialed host, which is always
	// one of the server certificate's names.
	trustCA := config.ClientTLS{RootCAFiles: ca}
	return config.RootTLS{
		// History, matching and the worker service, and their calls to each
		// other. As a client each presents the server certificate, which is
		// also issued for client authentication.
		Internode: config.GroupTLS{Server: server, Client: trustCA},
		// What Vibe's and everyone else's clients reach.
		Frontend: config.GroupTLS{Server: server, Client: trustCA},
		// The server's own SDK clients (system workflows, the scanner) dial
		// the frontend at PublicClient.HostPort with the client certificate.
		SystemWorker: config.WorkerTLS{
			CertFile: t.path(clientCertFile),
			KeyFile:  t.path(clientKeyFile),
			Client:   trustCA,
		},
		// The admin client of the current cluster (used by the worker
		// service's scanner, among others) dials the cluster's RPCAddress,
		// the frontend, as a "remote cluster"; without this entry it would
		// dial in plain text and be refused.
		RemoteClusters: map[string]config.GroupTLS{
			dialHost: {Server: server, Client: trustCA},
		},
	}
}

// serverNames returns the names the server certificate must hold for a
// frontend listening on listenHost (an IP address, or empty for loopback):
// the loopback names, which the other services and local clients dial, and
// the names remote clients may dial. For a wildcard listen host (0.0.0.0,
// ::) those are the machine's host name and the addresses of its
// interfaces when the certificate is made; a start that finds one missing
// makes a new server certificate.
func serverNames(listenHost string) []string {
	names := []string{"localhost", "127.0.0.1", "::1"}
	ip := net.ParseIP(listenHost)
	if ip == nil || ip.IsLoopback() {
		if ip != nil {
			names = append(names, ip.String())
		}
		return dedupe(names)
	}
	if h, err := os.Hostname(); err == nil && isHostName(h) {
		names = append(names, h)
	}
	if !ip.IsUnspecified() {
		return dedupe(append(names, ip.String()))
	}
	addrs, _ := net.InterfaceAddrs() // without them, local names still work
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLinkLocalUnicast() {
			names = append(names, n.IP.String())
		}
	}
	return dedupe(names)
}

// isHostName reports whether h can be a DNS name in a certificate.
func isHostName(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for _, r := range h {
		if !(r == '-' || r == '.' || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z') {
			return false
		}
	}
	return true
}

// dedupe returns names without repeats, in their first order.
func dedupe(names []string) []string {
	var out []string
	for _, n := range names {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// setupTLS loads the engine's certificates from dir (DataDir/tls), creating
// what is missing or unusable. The CA is created only when nothing issued by
// a previous one can be around (neither ca.pem nor client.pem exists): a
// remote worker may hold a copy of the client certificate, and a new CA
// would lock it out, so a damaged CA is an error rather than replaced. The
// server and client certificates are replaced when missing, not issued by
// the CA, expiring within renewBefore, or (server) lacking one of names;
// that is harmless, since clients trust the CA, not a certificate. The
// caller holds the data directory's lock.
func setupTLS(dir string, names []string, logger *slog.Logger) (*engineTLS, error) {
	if _, err := makePrivateDir(dir); err != nil {
		return nil, err
	}
	ca, caKey, newCA, err := loadOrCreateCA(dir, logger)
	if err != nil {
		return nil, err
	}
	var made []string // file (why), for one log line
	if newCA {
		made = append(made, caCertFile+" (no CA yet)")
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)

	serverTmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "vibe engine"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			serverTmpl.IPAddresses = append(serverTmpl.IPAddresses, ip)
		} else {
			serverTmpl.DNSNames = append(serverTmpl.DNSNames, n)
		}
	}
	serverOK := func(c *x509.Certificate) string {
		for _, n := range names {
			if c.VerifyHostname(n) != nil {
				return "it lacks the name " + n
			}
		}
		return ""
	}
	_, why, err := loadOrIssue(dir, serverCertFile, serverKeyFile, serverTmpl, ca, caKey, roots, serverOK)
	if err != nil {
		return nil, err
	}
	if why != "" {
		made = append(made, serverCertFile+" ("+why+")")
	}

	clientTmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "vibe client"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	client, why, err := loadOrIssue(dir, clientCertFile, clientKeyFile, clientTmpl, ca, caKey, roots, nil)
	if err != nil {
		return nil, err
	}
	if why != "" {
		made = append(made, clientCertFile+" ("+why+")")
	}
	if len(made) > 0 {
		logger.Info("made the engine's TLS certificates", "dir", dir, "files", made)
	}
	return &engineTLS{dir: dir, ca: ca, client: client}, nil
}

// loadOrCreateCA returns the CA of dir, creating it if nothing issued by a
// CA is there (and then reporting created); see setupTLS.
func loadOrCreateCA(dir string, logger *slog.Logger) (_ *x509.Certificate, _ *ecdsa.PrivateKey, created bool, _ error) {
	certPath, keyPath := filepath.Join(dir, caCertFile), filepath.Join(dir, caKeyFile)
	certPEM, err := os.ReadFile(certPath)
	if errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(filepath.Join(dir, clientCertFile)); err == nil {
			return nil, nil, false, fmt.Errorf("%s is missing but %s, issued by it, exists: restore %s and %s, or remove %s to make a new CA (then copy the new %s, %s and %s to every remote worker)",
				certPath, clientCertFile, caCertFile, caKeyFile, dir, clientCertFile, clientKeyFile, caCertFile)
		}
		ca, key, err := createCA(certPath, keyPath)
		return ca, key, err == nil, err
	}
	if err != nil {
		return nil, nil, false, fmt.Errorf("read engine CA: %w", err)
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, nil, false, fmt.Errorf("read engine CA key (the CA in %s needs it; remove %s to make a new CA): %w", certPath, dir, err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, nil, false, fmt.Errorf("engine CA %s with key %s: %w", certPath, keyPath, err)
	}
	key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
	if !ok || !pair.Leaf.IsCA {
		return nil, nil, false, fmt.Errorf("engine CA %s: not an ECDSA CA certificate", certPath)
	}
	if now := time.Now(); now.After(pair.Leaf.NotAfter) {
		return nil, nil, false, fmt.Errorf("engine CA %s expired on %s: remove %s to make a new CA (then copy the new %s, %s and %s to every remote worker)",
			certPath, pair.Leaf.NotAfter.Format(time.DateOnly), dir, clientCertFile, clientKeyFile, caCertFile)
	} else if pair.Leaf.NotAfter.Sub(now) < renewBefore {
		logger.Warn("the engine CA expires soon; remove the tls directory to make a new one, and copy the new client certificate to remote workers",
			"file", certPath, "expires", pair.Leaf.NotAfter)
	}
	return pair.Leaf, key, false, nil
}

// createCA makes a new CA and writes it to certPath and keyPath.
func createCA(certPath, keyPath string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate CA key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "vibe engine CA"},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(caValidity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true, // it signs leaves only
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	if tmpl.SerialNumber, err = serialNumber(); err != nil {
		return nil, nil, err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("create CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("parse new CA certificate: %w", err)
	}
	// The key first: a ca.pem without its key is an error at the next
	// start, a key without ca.pem is overwritten.
	if err := writeKeyAndCert(keyPath, certPath, key, der); err != nil {
		return nil, nil, err
	}
	return cert, key, nil
}

// loadOrIssue returns the certificate in certName and keyName of dir if it
// is usable, and otherwise issues one from tmpl, writes it there and says
// why. A certificate is usable if it is issued by ca for tmpl's first
// extended key usage, does not expire within renewBefore, and check (if not
// nil) returns no reason to replace it.
func loadOrIssue(dir, certName, keyName string, tmpl *x509.Certificate, ca *x509.Certificate, caKey *ecdsa.PrivateKey,
	roots *x509.CertPool, check func(*x509.Certificate) string) (_ tls.Certificate, issuedBecause string, _ error) {
	certPath, keyPath := filepath.Join(dir, certName), filepath.Join(dir, keyName)
	reason := "it does not exist"
	if pair, err := loadPair(certPath, keyPath); err == nil {
		_, verr := pair.Leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: tmpl.ExtKeyUsage[:1]})
		switch {
		case verr != nil:
			reason = "it is not valid with the engine CA: " + verr.Error()
		case time.Until(pair.Leaf.NotAfter) < renewBefore:
			reason = "it expires on " + pair.Leaf.NotAfter.Format(time.DateOnly)
		case check != nil:
			reason = check(pair.Leaf)
		default:
			reason = ""
		}
		if reason == "" {
			return pair, "", nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		reason = err.Error()
	}

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, "", fmt.Errorf("generate key for %s: %w", certPath, err)
	}
	t := *tmpl
	now := time.Now()
	t.NotBefore = now.Add(-clockSkew)
	t.NotAfter = now.Add(leafValidity)
	if t.NotAfter.After(ca.NotAfter) {
		t.NotAfter = ca.NotAfter
	}
	t.KeyUsage = x509.KeyUsageDigitalSignature
	if t.SerialNumber, err = serialNumber(); err != nil {
		return tls.Certificate{}, "", err
	}
	der, err := x509.CreateCertificate(rand.Reader, &t, ca, &key.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, "", fmt.Errorf("create certificate %s: %w", certPath, err)
	}
	if err := writeKeyAndCert(keyPath, certPath, key, der); err != nil {
		return tls.Certificate{}, "", err
	}
	pair, err := loadPair(certPath, keyPath)
	return pair, reason, err
}

// loadPair reads a certificate and its key; Leaf is set.
func loadPair(certPath, keyPath string) (tls.Certificate, error) {
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return tls.Certificate{}, err
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return tls.Certificate{}, err
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%s with key %s: %w", certPath, keyPath, err)
	}
	return pair, nil
}

// writeKeyAndCert writes key (PKCS #8) and then the certificate der as PEM
// files private to their owner.
func writeKeyAndCert(keyPath, certPath string, key *ecdsa.PrivateKey, der []byte) error {
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("encode key for %s: %w", certPath, err)
	}
	if err := writeFileAtomic(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})); err != nil {
		return fmt.Errorf("write %s: %w", keyPath, err)
	}
	if err := writeFileAtomic(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})); err != nil {
		return fmt.Errorf("write %s: %w", certPath, err)
	}
	return nil
}

// serialNumber returns a random 128-bit certificate serial number.
func serialNumber() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("certificate serial number: %w", err)
	}
	return n, nil
}
