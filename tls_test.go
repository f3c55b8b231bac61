package vibe

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/augceo/vibe/internal/tlstest"
)

// TestServeTLS: with ServeOptions.TLS, Serve speaks HTTPS only, TLS 1.2 at
// least, to a client that trusts the certificate; the address file says
// https and pins the certificate, and the pinned client of Endpoint reaches
// the server by its IP (which the certificate does not name) and no
// server with another certificate.
func TestServeTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, cert := tlstest.SelfSigned(t, dir, time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	cfg, err := ServerTLS(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	addr := serveForTest(t, readAll, ServeOptions{TLS: cfg, DataDir: data})

	roots := x509.NewCertPool()
	roots.AddCert(cert)
	dial := func(tc *tls.Config) (*http.Response, error) {
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
		return c.Get("https://" + addr + "/")
	}
	resp, err := dial(&tls.Config{RootCAs: roots, ServerName: "vibe.test"})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.TrimSpace(string(body)) != "read it all" || resp.TLS == nil {
		t.Errorf("over HTTPS: %d %q", resp.StatusCode, body)
	}
	if _, err := dial(&tls.Config{RootCAs: x509.NewCertPool(), ServerName: "vibe.test"}); err == nil {
		t.Error("a client that does not trust the certificate got through")
	}
	if _, err := dial(&tls.Config{RootCAs: roots, ServerName: "vibe.test", MaxVersion: tls.VersionTLS11}); err == nil {
		t.Error("TLS 1.1 was served")
	}
	// Plain HTTP gets Go's 400, never the handler.
	if resp, err := http.Get("http://" + addr + "/"); err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || strings.Contains(string(body), "read it all") {
			t.Errorf("plain HTTP: %d %q", resp.StatusCode, body)
		}
	}

	e, ok := readEndpoint(data)
	sum := sha256.Sum256(cert.Raw)
	if !ok || e.URL != "https://"+addr || string(e.Pin) != string(sum[:]) {
		t.Fatalf("the address file gives %+v %v", e, ok)
	}
	resp, err = e.HTTPClient(10 * time.Second).Get(e.URL + "/")
	if err != nil {
		t.Fatalf("the pinned client: %v", err)
	}
	resp.Body.Close()
	other := e
	other.Pin = make([]byte, sha256.Size)
	if _, err := other.HTTPClient(10 * time.Second).Get(e.URL + "/"); err == nil || !strings.Contains(err.Error(), "not the one in "+AddrFile) {
		t.Errorf("another pin: %v", err)
	}
}

// TestServerTLSErrors: what is wrong names its file.
func TestServerTLSErrors(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, _ := tlstest.SelfSigned(t, dir, time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	other := t.TempDir()
	_, otherKey, _ := tlstest.SelfSigned(t, other, time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	old := t.TempDir()
	oldCert, oldKey, _ := tlstest.SelfSigned(t, old, time.Now().Add(-48*time.Hour), time.Now().Add(-24*time.Hour))
	missing := filepath.Join(dir, "missing.pem")
	for _, tt := range []struct{ cert, key, want string }{
		{missing, keyFile, "certificate: open " + missing},
		{certFile, missing, "key: open " + missing},
		{keyFile, keyFile, "certificate " + keyFile + " with key " + keyFile},
		{certFile, otherKey, "certificate " + certFile + " with key " + otherKey + ": tls: private key does not match public key"},
		{oldCert, oldKey, "certificate " + oldCert + " expired on "},
	} {
		if _, err := ServerTLS(tt.cert, tt.key); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ServerTLS(%s, %s): %v, want %q", tt.cert, tt.key, err, tt.want)
		}
	}
}
