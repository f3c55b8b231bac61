package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/augceo/vibe/api"
	"github.com/augceo/vibe/internal/tlstest"
	"github.com/augceo/vibe/process"
)

// testToken is a token strong enough for a server off loopback.
const testToken = "vibe-test-token-7f3a9c2e41b85d06"

// TestTokenStrength: off loopback, serve takes only a token of at least 32
// visible ASCII characters, 8 of them different, not a shorter string
// repeated; what openssl rand -hex 32 or base64 of 32 random bytes give
// passes.
func TestTokenStrength(t *testing.T) {
	random := make([]byte, 32)
	rand.Read(random)
	for _, tok := range []string{testToken, hex.EncodeToString(random), base64.RawURLEncoding.EncodeToString(random), hex.EncodeToString(random[:16])} {
		if why := weakToken(tok); why != "" {
			t.Errorf("%q: %s", tok, why)
		}
	}
	for tok, want := range map[string]string{
		"":                                    "its length is 0",
		" ":                                   "its length is 1",
		"a":                                   "its length is 1",
		"s3cret":                              "its length is 6",
		strings.Repeat(" ", 32):               `it holds ' ' at byte 0`,
		testToken + "\n":                      `it holds '\n' at byte 32`,
		"vibe test token 7f3a9c2e41b85d06xx":  `it holds ' ' at byte 4`,
		"vibe-test-token-7f3a9c2e41b85dé":     "it holds a character past ASCII at byte 30",
		strings.Repeat("a", 40):               "it has only 1 different characters",
		strings.Repeat("password", 4):         "it has only 7 different characters",
		strings.Repeat("0123456789abcdef", 2): `it is "0123456789abcdef" repeated`,
		strings.Repeat("abcdefgh", 4) + "ab":  `it is "abcdefgh" repeated`,
	} {
		if why := weakToken(tok); why != want {
			t.Errorf("%q: %q, want %q", tok, why, want)
		}
	}
}

// TestServeFlags: an off-loopback serve with a weak token, from --token or
// $VIBE_TOKEN, is refused before anything starts, the rule said; so is an
// --https-cert without --https-key, or a file that is not there, by name.
func TestServeFlags(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.pem")
	for _, tt := range []struct {
		env  string
		args []string
		want string
	}{
		{"", []string{"--token", " "}, "--addr 0.0.0.0:0 is not on loopback, and the token (--token or $VIBE_TOKEN) is too weak to guard it: its length is 1; a token must be at least 32 visible ASCII characters (no space), at least 8 of them different, and not one shorter string repeated: make one with: openssl rand -hex 32"},
		{"a", nil, "is too weak to guard it: its length is 1"},
		{strings.Repeat("x", 32), nil, "is too weak to guard it: it has only 1 different characters"},
		{"", []string{"--token", testToken, "--https-cert", missing}, "--https-cert needs --https-key"},
		{"", []string{"--token", testToken, "--https-key", missing}, "--https-key needs --https-cert"},
		{"", []string{"--token", testToken, "--https-cert", missing, "--https-key", missing}, "--https-cert/--https-key: certificate: open " + missing},
	} {
		t.Setenv("VIBE_TOKEN", tt.env)
		status, stdout, stderr := run(t, "", append([]string{"serve", "--addr", "0.0.0.0:0", "--data", t.TempDir()}, tt.args...)...)
		if status != 2 || stdout != "" || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v (VIBE_TOKEN %q): %d %s, want %q", tt.args, tt.env, status, stderr, tt.want)
		}
	}
}

// TestServeHTTPS: vibe serve --https-cert --https-key, off loopback,
// serves the API and the console over HTTPS only, to a client that trusts
// the certificate, and says so without the cleartext warning; the
// console's session cookie is Secure; vibe ps with the same --data reaches
// it by the certificate's pin, though the certificate does not name the
// address.
func TestServeHTTPS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts vibe serve")
	}
	certFile, keyFile, cert := tlstest.SelfSigned(t, t.TempDir(), time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour))
	data := t.TempDir()
	_, port, _ := net.SplitHostPort(freeAddr(t))
	_, out := child(t, "serve", "--data", data, "--addr", "0.0.0.0:"+port, "--token", testToken, "--https-cert", certFile, "--https-key", keyFile, "--ui-listen", "")
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	trusting := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "vibe.test"}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	base := "https://127.0.0.1:" + port
	c := &api.Client{BaseURL: base, Token: testToken, HTTP: trusting}
	waitUntil(t, "vibe serve", time.Minute, func() bool { _, err := c.List(context.Background(), process.ListOptions{Limit: 1}); return err == nil })
	if s := out.String(); !strings.Contains(s, "vibe: serving https://") || !strings.Contains(s, ":"+port+" (embedded engine") || !strings.Contains(s, "vibe: the console is at https://") || strings.Contains(s, "without TLS") {
		t.Errorf("serve says:\n%s", s)
	}
	// Plain HTTP is not served.
	if resp, err := http.Get("http://127.0.0.1:" + port + "/v1/processes"); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("plain HTTP: %d", resp.StatusCode)
		}
	}
	// A client that does not trust the certificate does not get through.
	if _, err := http.Get(base + "/v1/processes"); err == nil {
		t.Error("a client without the certificate got through")
	}
	// The console signs in over HTTPS with a Secure cookie.
	resp, err := trusting.PostForm(base+"/signin", url.Values{"token": {testToken}, "next": {"/inbox"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var session *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == "vibe_session" {
			session = ck
		}
	}
	if resp.StatusCode != http.StatusSeeOther || session == nil || !session.Secure || !session.HttpOnly {
		t.Errorf("signing in: %d %+v", resp.StatusCode, session)
	}
	// Another command on the same data directory finds the server, over
	// HTTPS, by its pin.
	if status, stdout, stderr := run(t, "", "ps", "--data", data, "--token", testToken); status != 0 {
		t.Errorf("vibe ps: %d\n%s%s\n%s", status, stdout, stderr, out)
	}
}

// TestServeAddressInUse: an address another program listens on is told
// before the engine starts — nothing is created in the data directory —
// with the flag that picks another.
func TestServeAddressInUse(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--addr", addr}, "vibe: --addr " + addr + ": the address is in use (by another vibe serve, or another program): give --addr HOST:PORT to pick another\n"},
		{[]string{"--addr", "127.0.0.1:0", "--ui-listen", addr}, "vibe: --ui-listen " + addr + ": the address is in use (by another vibe serve, or another program): give --ui-listen HOST:PORT to pick another\n"},
	} {
		data := filepath.Join(t.TempDir(), "data")
		status, stdout, stderr := run(t, "", append([]string{"serve", "--data", data}, tt.args...)...)
		if status != 1 || stdout != "" || stderr != tt.want {
			t.Errorf("%v: %d %q\n%s\nwant %q", tt.args, status, stdout, stderr, tt.want)
		}
		if _, err := os.Stat(data); !os.IsNotExist(err) {
			t.Errorf("%v: the engine started in %s (%v)", tt.args, data, err)
		}
	}
}
