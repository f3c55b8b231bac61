package action

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

// What an actions file may not do, checked when it is loaded: a URL that
// can never be dialled (a port past 65535) is refused at once rather than
// retried for hours; a URL of a cloud's metadata service — the address
// every virtual machine reaches, which hands out the machine's credentials
// — or of any link-local address is refused unless the entry allows it
// ("allowLinkLocal": true), and an HTTP action's connections are refused
// there too when a host name resolves to one; a header may not replace the
// call's idempotency key, and a $VARIABLE a value names must be set.

// metadataHosts are the names of cloud metadata services.
var metadataHosts = []string{"metadata.google.internal", "metadata.goog", "metadata", "instance-data", "instance-data.ec2.internal"}

// metadataAddrs are metadata services' addresses outside the link-local
// ranges: AWS's IPv6 one, Alibaba's, Oracle's.
var metadataAddrs = []netip.Addr{netip.MustParseAddr("fd00:ec2::254"), netip.MustParseAddr("100.100.100.200"), netip.MustParseAddr("192.0.0.192")}

// linkLocal says what addr is when it is a link-local or metadata
// address ("" when it is neither).
func linkLocal(addr netip.Addr) string {
	addr = addr.Unmap()
	for _, m := range metadataAddrs {
		if addr == m {
			return "a cloud metadata service's address"
		}
	}
	if addr.IsLinkLocalUnicast() || addr.IsLinkLocalMulticast() {
		return "a link-local address (169.254.0.0/16, fe80::/10), where cloud metadata services answer"
	}
	return ""
}

// forbiddenHost says why host may not be called without allowLinkLocal,
// or "" when it may.
func forbiddenHost(host string) string {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	for _, m := range metadataHosts {
		if h == m {
			return "a cloud metadata service"
		}
	}
	if addr, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil {
		return linkLocal(addr)
	}
	return ""
}

// checkURL reports a URL that is not http(s), has no host or a port that
// is no port, or names a link-local or metadata address that the entry
// does not allow.
func checkURL(errs *schema.ErrorList, path string, at jsonv.Pointer, name, raw string, allow bool) bool {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs.Add(path, at, "action %q needs an http(s) URL, not %q", name, raw)
		return false
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			errs.Add(path, at, "action %q: %q has the port %s: a port is 1 to 65535", name, raw, p)
			return false
		}
	} else if strings.HasSuffix(u.Host, ":") {
		errs.Add(path, at, "action %q: %q has an empty port", name, raw)
		return false
	}
	if why := forbiddenHost(u.Hostname()); why != "" && !allow {
		errs.Add(path, at, "action %q: %s is %s; an action may call it only with \"allowLinkLocal\": true in its entry", name, u.Hostname(), why)
		return false
	}
	return true
}

// reservedHeaders are headers an actions file may not set: Vibe's own.
var reservedHeaders = []string{"Idempotency-Key"}

// checkValue reports a header or environment value that names a
// $VARIABLE which is not set: it would be sent empty.
func checkValue(errs *schema.ErrorList, path string, at jsonv.Pointer, value string) {
	var unset []string
	os.Expand(value, func(v string) string {
		if _, ok := os.LookupEnv(v); !ok {
			unset = append(unset, "$"+v)
		}
		return ""
	})
	if len(unset) > 0 {
		errs.Add(path, at, "names %s, which is not set in the environment: set it, or write the value out", strings.Join(unset, ", "))
	}
}

// checkHeader reports a header name an actions file may not set.
func checkHeader(errs *schema.ErrorList, path string, at jsonv.Pointer, name string) bool {
	for _, r := range reservedHeaders {
		if strings.EqualFold(name, r) {
			errs.Add(path, at, "the header %s is Vibe's: each call carries its own idempotency key there, the same on every retry", r)
			return false
		}
	}
	return true
}

// errLinkLocal is the error of a connection refused by guardedClient.
var errLinkLocal = errors.New("a link-local or metadata address, which an action may call only with \"allowLinkLocal\": true")

// guardedClient is an HTTP client that refuses to connect to link-local
// and metadata addresses, whatever name resolved to them; timeout bounds
// a request (0: 30 s).
func guardedClient(timeout time.Duration) *http.Client {
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err == nil && linkLocal(ap.Addr()) != "" {
			return fmt.Errorf("%s: %w", address, errLinkLocal)
		}
		return nil
	}}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		return d.DialContext(ctx, network, addr)
	}
	return &http.Client{Timeout: timeout, Transport: t}
}
