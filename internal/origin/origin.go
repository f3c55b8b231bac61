// Package origin tells where a web request comes from and where it is
// addressed: the checks that keep a page on another site (cross-site
// request forgery) or a name rebound to 127.0.0.1 (DNS rebinding) from
// reaching a local server through the person's browser. The API's guard,
// the console's forms and Temporal's UI share them.
package origin

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// LoopbackHost reports whether a Host header names loopback: localhost or
// a loopback IP, with any port.
func LoopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	} else {
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CrossSite says why a request may have been sent by a page of another
// origin through the person's browser, or "" when it was not: its
// Sec-Fetch-Site (which browsers set on every request) is other than
// same-origin or none, or its Origin is not the server's own.
func CrossSite(r *http.Request) string {
	// same-site includes another port of the same host (another local
	// web app), so only same-origin and none (typed by the person) pass.
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "", "same-origin", "none":
	default:
		return fmt.Sprintf("Sec-Fetch-Site is %q", site)
	}
	origin, ok := r.Header["Origin"]
	if !ok {
		return ""
	}
	if len(origin) != 1 || !Same(origin[0], r) {
		return fmt.Sprintf("the request comes from the web page origin %q, not this server's", strings.Join(origin, ", "))
	}
	return ""
}

// Same reports whether origin is the server's own: its scheme and the
// request's Host, default ports filled in.
func Same(origin string, r *http.Request) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.User != nil {
		return false
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return strings.EqualFold(u.Scheme, scheme) && strings.EqualFold(withPort(u.Host, scheme), withPort(r.Host, scheme))
}

func withPort(host, scheme string) string {
	if _, _, err := net.SplitHostPort(host); err == nil {
		return host
	}
	if scheme == "https" {
		return net.JoinHostPort(strings.Trim(host, "[]"), "443")
	}
	return net.JoinHostPort(strings.Trim(host, "[]"), "80")
}
