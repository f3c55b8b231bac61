package api

import (
	"crypto/subtle"
	"fmt"
	"net/http"
	"time"

	"github.com/augceo/vibe/internal/origin"
	"github.com/augceo/vibe/internal/throttle"
)

// Sessions is a way in for browsers, which send no bearer header with a
// link or a form. A handler in Options.Mounts that implements it admits
// requests by its own sign-in — the console's HttpOnly, SameSite=Strict
// cookie, got by giving the token once — when the server has a token; the
// API's own routes (/v1/…) and the other mounts still take the bearer
// header only.
type Sessions interface {
	// Admit reports whether r may be served without the bearer header: it
	// carries a valid session, or asks for what getting one needs (the
	// sign-in page).
	Admit(r *http.Request) bool
	// Refuse answers a request that has neither the bearer header nor a
	// session (the console sends a browser to its sign-in page).
	Refuse(w http.ResponseWriter, r *http.Request)
}

// guarded admits the requests the server answers. With a token, the bearer
// header is the guard: nothing a browser sends on its own can carry it
// (a mount that implements Sessions also admits its own signed-in
// sessions, see Sessions). A client that sends wrong ones is throttled
// (s.tries): five, then one every two seconds, every request of it
// refused with 429 meanwhile, the right token too. Without one the server listens on loopback
// only, and a browser is the way in for someone else: a page on any site
// can send requests to 127.0.0.1 (cross-site request forgery), and a name
// the attacker controls can be made to resolve to 127.0.0.1 (DNS
// rebinding). So a tokenless server answers only requests addressed to a
// loopback name, from no page or from a page of its own origin.
func (s *server) guarded(mounts *http.ServeMux, next http.Handler) http.Handler {
	if s.opts.Token != "" {
		want := []byte("Bearer " + s.opts.Token)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if got, ok := r.Header["Authorization"]; ok {
				right, wait := s.tries.Guess(throttle.Client(r), time.Now(), func() bool {
					return len(got) == 1 && subtle.ConstantTimeCompare([]byte(got[0]), want) == 1
				})
				if wait > 0 {
					w.Header().Set("Retry-After", throttle.RetryAfter(wait))
					writeError(w, http.StatusTooManyRequests, &apiError{Error: "too many wrong tokens from your address: try again in " + throttle.RetryAfter(wait) + " s"})
					return
				}
				if right {
					next.ServeHTTP(w, r)
					return
				}
			}
			if sessions := s.sessions(mounts, r); sessions != nil {
				if sessions.Admit(r) {
					next.ServeHTTP(w, r)
				} else {
					sessions.Refuse(w, r)
				}
				return
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="vibe"`)
			writeError(w, http.StatusUnauthorized, &apiError{Error: "missing or wrong token: send Authorization: Bearer <token>"})
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

// sessions returns the mount that serves r when it admits sessions of its
// own, else nil.
func (s *server) sessions(mounts *http.ServeMux, r *http.Request) Sessions {
	if isAPIPath(r.URL.Path) {
		return nil
	}
	_, pattern := mounts.Handler(r)
	sessions, _ := s.opts.Mounts[pattern].(Sessions)
	return sessions
}

// crossSite says why a request to a tokenless server may come from
// someone else through a browser, or "" when it does not.
func crossSite(r *http.Request) string {
	if !origin.LoopbackHost(r.Host) {
		return fmt.Sprintf("the request is addressed to %q, not to a loopback address (localhost, 127.0.0.1, [::1])", r.Host)
	}
	return origin.CrossSite(r)
}
