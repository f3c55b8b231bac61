package vibe

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// serveForTest runs Serve with opts on a free loopback port and returns
// its address; it stops when the test ends.
func serveForTest(t *testing.T, h http.Handler, opts ServeOptions) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	opts.Addr = "127.0.0.1:0"
	opts.Ready = func(a net.Addr) { addr <- a.String() }
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, h, opts) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	select {
	case a := <-addr:
		return a
	case err := <-done:
		t.Fatalf("Serve: %v", err)
	}
	return ""
}

// readAll is a handler that reads the whole body, as the API's do.
var readAll = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	if _, err := io.ReadAll(r.Body); err != nil {
		http.Error(w, "the request body came too slowly", http.StatusRequestTimeout)
		return
	}
	fmt.Fprintln(w, "read it all")
})

// TestSlowClientsAreCut: a client that sends its body at one byte a second,
// or its header that slowly, is cut off within the read timeouts, long
// before it is done.
func TestSlowClientsAreCut(t *testing.T) {
	if testing.Short() {
		t.Skip("trickles bytes for seconds")
	}
	const readTimeout = time.Second
	addr := serveForTest(t, readAll, ServeOptions{ReadHeaderTimeout: readTimeout, ReadTimeout: readTimeout})
	tests := []struct {
		name    string
		header  string // sent at once
		trickle string // then one byte a second
	}{
		{"a slow body", "POST /v1/processes HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 30\r\n\r\n", `{"process":"aug:processes/x"}` + "\n"},
		{"a slow header (slowloris)", "GET /v1/processes HTTP/1.1\r\n", "Host: 127.0.0.1\r\nX-Slow: 1234567890\r\n\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, tt.header); err != nil {
				t.Fatal(err)
			}
			sent := make(chan int, 1)
			go func() {
				n := 0
				for ; n < len(tt.trickle); n++ {
					if _, err := conn.Write([]byte{tt.trickle[n]}); err != nil {
						break
					}
					time.Sleep(time.Second)
				}
				sent <- n
			}()
			// The server answers or closes the connection; reading stops
			// either way. The client, left alone, would take 30 s or more.
			conn.SetReadDeadline(time.Now().Add(20 * time.Second))
			start := time.Now()
			got, err := io.ReadAll(conn)
			took := time.Since(start)
			conn.Close()
			n := <-sent
			// A close with the client's bytes unread is a reset: a cut too.
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("the server did not cut the client: %v after %s", err, took)
			}
			if n >= len(tt.trickle) || strings.Contains(string(got), "read it all") {
				t.Fatalf("the client sent all %d bytes and was answered: %q", n, got)
			}
			// Within the read timeout, with a second of slack for the byte
			// in flight and a busy machine.
			if n > 3 {
				t.Errorf("cut only after %d bytes at one a second (took %s), want within the %s read timeout", n, took, readTimeout)
			}
			if resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(string(got))), nil); err == nil && resp.StatusCode < 400 {
				t.Errorf("answered %d", resp.StatusCode)
			}
		})
	}
}

// TestServeDefaults: the zero options give the production timeouts, and
// the address file is written while it serves and removed after.
func TestServeDefaults(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var srvAddr net.Addr
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, readAll, ServeOptions{Addr: "127.0.0.1:0", DataDir: dir, Ready: func(a net.Addr) { srvAddr = a; close(ready) }})
	}()
	<-ready
	b, err := os.ReadFile(filepath.Join(dir, AddrFile))
	if err != nil || strings.TrimSpace(string(b)) != srvAddr.String() {
		t.Errorf("address file %q, %v; serving on %s", b, err, srvAddr)
	}
	resp, err := http.Post("http://"+srvAddr.String()+"/", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, AddrFile)); !os.IsNotExist(err) {
		t.Errorf("the address file is left: %v", err)
	}
	srv := ServeOptions{}.httpServer(readAll)
	if srv.ReadHeaderTimeout != ReadHeaderTimeout || srv.ReadTimeout != ReadTimeout || srv.WriteTimeout != WriteTimeout || srv.IdleTimeout != IdleTimeout {
		t.Errorf("the zero options give %s %s %s %s", srv.ReadHeaderTimeout, srv.ReadTimeout, srv.WriteTimeout, srv.IdleTimeout)
	}
	if srv := (ServeOptions{ReadTimeout: time.Second}).httpServer(readAll); srv.ReadTimeout != time.Second || srv.WriteTimeout != WriteTimeout {
		t.Errorf("ReadTimeout set: %s %s", srv.ReadTimeout, srv.WriteTimeout)
	}
	for name, d := range map[string]time.Duration{"ReadHeaderTimeout": ReadHeaderTimeout, "ReadTimeout": ReadTimeout, "WriteTimeout": WriteTimeout, "IdleTimeout": IdleTimeout} {
		if d < 10*time.Second {
			t.Errorf("%s is %s: too short for a production server", name, d)
		}
	}
	if WriteTimeout <= ReadTimeout {
		t.Errorf("WriteTimeout %s must exceed ReadTimeout %s: it runs from the header, the body's reading included", WriteTimeout, ReadTimeout)
	}
}

// TestEndpointModelQueue: a server given its model calls' queue and its
// actions writes them in the address file, and the endpoint read back has
// them, over HTTP and over HTTPS with its pin; a file without them (a
// server from before) gives none.
func TestEndpointModelQueue(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, readAll, ServeOptions{Addr: "127.0.0.1:0", DataDir: dir, ModelQueue: "vibe.model.0123456789abcdef", Actions: []string{"SendDraft", "notify,ops"}, Ready: func(a net.Addr) { ready <- a }})
	}()
	a := <-ready
	if e, ok := readEndpoint(dir); !ok || e.URL != "http://"+a.String() || e.ModelQueue != "vibe.model.0123456789abcdef" || e.Pin != nil ||
		!slices.Equal(e.Actions, []string{"SendDraft", "notify,ops"}) {
		t.Errorf("over HTTP: %+v %v", e, ok)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	pin := strings.Repeat("ab", 32)
	for file, want := range map[string]Endpoint{
		"https://127.0.0.1:8443\nsha256:" + pin + "\nmodel:vibe.model\n": {URL: "https://127.0.0.1:8443", ModelQueue: "vibe.model"},
		"https://127.0.0.1:8443\nmodel:vibe.model\n":                     {URL: "https://127.0.0.1:8443", ModelQueue: "vibe.model"},
		"https://127.0.0.1:8443\naction:Send\n":                          {URL: "https://127.0.0.1:8443", Actions: []string{"Send"}},
		"https://127.0.0.1:8443\nsha256:" + pin + "\n":                   {URL: "https://127.0.0.1:8443"},
		"127.0.0.1:8080\n": {URL: "http://127.0.0.1:8080"},
	} {
		if err := os.WriteFile(filepath.Join(dir, AddrFile), []byte(file), 0o600); err != nil {
			t.Fatal(err)
		}
		e, ok := readEndpoint(dir)
		if !ok || e.URL != want.URL || e.ModelQueue != want.ModelQueue || (e.Pin != nil) != strings.Contains(file, "sha256:") ||
			!slices.Equal(e.Actions, want.Actions) {
			t.Errorf("%q: %+v %v, want %+v", file, e, ok, want)
		}
	}
}
