package api

import (
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// guarded admits the requests the server answers. With a token, the bearer
// header is the guard: nothing else a browser sends on its own (cookies
// are not used) can carry it. Without one the server listens on loopback
// only, and a browser is the way in for someone else: a page on any site
// can send requests to 127.0.0.1 (cross-site request forgery), and a name
// the attacker controls can be made to resolve to 127.0.0.1 (DNS
// rebinding). So a tokenless server answers only requests addressed to a
// loopback name, from no page or from a page of its own origin.
func (s *server) guarded(next http.Handler) http.Handler {
	if s.opts.Token != "" {
		want := []byte("Bearer " + s.opts.Token)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got := []byte(r.Header.Get("Authorization"))
			if subtle.ConstantTimeCompare(got, want) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="vibe"`)
				writeError(w, http.StatusUnauthorized, &apiError{Error: "missing or wrong token: send Authorization: Bearer <token>"})
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if why := crossSite(r); why != "" {
			writeError(w, http.StatusForbidden, &apiError{Error: "refused: " + why + "; a server without a token answers only requests to a loopback address from no web page or from its own origin"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// crossSite says why a request to a tokenless server may come from
// someone else through a browser, or "" when it does not.
func crossSite(r *http.Request) string {
	if !isLoopbackHost(r.Host) {
		return fmt.Sprintf("the request is addressed to %q, not to a loopback address (localhost, 127.0.0.1, [::1])", r.Host)
	}
	// Sec-Fetch-Site is set by browsers on every request: same-site
	// includes another port of the same host (another local web app), so
	// only same-origin and none (typed by the person) pass.
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "", "same-origin", "none":
	default:
		return fmt.Sprintf("Sec-Fetch-Site is %q", site)
	}
	origin, ok := r.Header["Origin"]
	if !ok {
		return ""
	}
	if len(origin) != 1 || !sameOrigin(origin[0], r) {
		return fmt.Sprintf("the request comes from the web page origin %q, not this server's", strings.Join(origin, ", "))
	}
	return ""
}

// isLoopbackHost reports whether a Host header names loopback: localhost
// or a loopback IP, with any port.
func isLoopbackHost(host string) bool {
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

// sameOrigin reports whether origin is the server's own: its scheme and
// the request's Host, default ports filled in.
func sameOrigin(origin string, r *http.Request) bool {
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
