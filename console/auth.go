package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/augceo/vibe/internal/origin"
	"github.com/augceo/vibe/internal/throttle"
)

// The console's cookies.
const (
	// sessionCookie is a signed-in browser's session: its expiry and a
	// random nonce, signed with a key derived from the token and from a
	// secret of this server's run. It proves the browser was given the
	// token, without holding it; a new token, a restart or signing out
	// ends it.
	sessionCookie = "vibe_session"
	// csrfCookie binds the forms of a server without a token to the
	// browser that got them (with a token, the session does).
	csrfCookie = "vibe_csrf"
	// csrfField is the form field that carries the CSRF token.
	csrfField = "csrf"
)

// sessionFor is how long a session lasts.
const sessionFor = 12 * time.Hour

// revokedCap bounds the sessions signed out before their expiry that a
// server remembers. Only someone with the token can sign in, so only
// they can fill it; past it every session ends (auth.notBefore), which
// is safe.
const revokedCap = 4096

// auth signs sessions and CSRF tokens, and remembers the sessions signed
// out.
type auth struct {
	token string
	// sessionKey signs sessions, csrfKey the CSRF tokens. With a token
	// both are derived from it; the session key also from a random secret
	// of this run, so that a restart ends every session (the sessions
	// signed out are remembered in memory only: were the key to outlive
	// the run, a cookie signed out before a restart would open the console
	// again after it). Without a token csrfKey is random (and there are no
	// sessions).
	sessionKey, csrfKey []byte

	mu sync.Mutex
	// revoked holds the nonces of the sessions signed out, with their
	// expiry (Unix seconds); an expired one is dropped when room is
	// needed.
	revoked map[string]int64
	// notBefore, when set, ends every session made at or before it (Unix
	// seconds): what revoked's overflow does.
	notBefore int64
}

func newAuth(token string) (*auth, error) {
	a := &auth{token: token, revoked: map[string]int64{}}
	if token != "" {
		run := make([]byte, 32)
		if _, err := rand.Read(run); err != nil {
			return nil, err
		}
		a.sessionKey = mac([]byte(token), "vibe console session", string(run))
		a.csrfKey = mac([]byte(token), "vibe console csrf")
		return a, nil
	}
	a.csrfKey = make([]byte, 32)
	_, err := rand.Read(a.csrfKey)
	return a, err
}

func mac(key []byte, parts ...string) []byte {
	h := hmac.New(sha256.New, key)
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return h.Sum(nil)
}

var b64 = base64.RawURLEncoding

// maxName bounds the name a person gives at sign-in, in bytes.
const maxName = 64

// newSession makes a session cookie's value: its expiry, a random nonce,
// and the name the person gave at sign-in ("" for none), which the
// console records with their answers.
func (a *auth) newSession(now time.Time, name string) string {
	payload := make([]byte, 8+16, 8+16+len(name))
	binary.BigEndian.PutUint64(payload, uint64(now.Add(sessionFor).Unix()))
	rand.Read(payload[8:])
	payload = append(payload, name...)
	p := b64.EncodeToString(payload)
	return p + "." + b64.EncodeToString(mac(a.sessionKey, p))
}

// cleanName is a name given at sign-in as it is kept: printable, on one
// line, at most maxName bytes.
func cleanName(s string) string {
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) || unicode.IsSpace(r) }), " ")
	for len(s) > maxName {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	return s
}

// session reports whether r carries a session cookie that is valid at now
// (the console's clock, the one newSession dated it by): signed by this
// run, not expired, not signed out.
func (a *auth) session(r *http.Request, now time.Time) bool {
	ck, err := r.Cookie(sessionCookie)
	if err != nil {
		return false
	}
	s, ok := a.verify(ck.Value, now)
	if !ok {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	_, revoked := a.revoked[s.nonce]
	return !revoked && s.expiry-int64(sessionFor.Seconds()) > a.notBefore
}

// sessionInfo is what a session cookie carries.
type sessionInfo struct {
	nonce  string
	expiry int64 // Unix seconds
	name   string
}

// label names a session for the audit of answers: the person's name
// when they gave one, and a short id of the session (not the secret
// cookie: a few bytes of its nonce, which sign nothing).
func (s sessionInfo) label() string {
	id := fmt.Sprintf("console session %x", s.nonce[:4])
	if s.name == "" {
		return id
	}
	return s.name + " (" + id + ")"
}

// verify returns what a session cookie's value carries, when this run
// signed it and it has not expired at now.
func (a *auth) verify(value string, now time.Time) (sessionInfo, bool) {
	if a.token == "" {
		return sessionInfo{}, false
	}
	p, sig, ok := strings.Cut(value, ".")
	if !ok {
		return sessionInfo{}, false
	}
	got, err := b64.DecodeString(sig)
	if err != nil || !hmac.Equal(got, mac(a.sessionKey, p)) {
		return sessionInfo{}, false
	}
	payload, err := b64.DecodeString(p)
	if err != nil || len(payload) < 24 || len(payload) > 24+maxName {
		return sessionInfo{}, false
	}
	s := sessionInfo{expiry: int64(binary.BigEndian.Uint64(payload)), nonce: string(payload[8:24]), name: string(payload[24:])}
	if now.Unix() >= s.expiry {
		return sessionInfo{}, false
	}
	return s, true
}

// revoke ends the session r carries, if it has a valid one: the same
// cookie, sent again, opens nothing.
func (a *auth) revoke(r *http.Request, now time.Time) {
	ck, err := r.Cookie(sessionCookie)
	if err != nil {
		return
	}
	s, ok := a.verify(ck.Value, now)
	if !ok {
		return
	}
	nonce, expiry := s.nonce, s.expiry
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.revoked) >= revokedCap {
		for n, exp := range a.revoked {
			if now.Unix() >= exp {
				delete(a.revoked, n)
			}
		}
	}
	if len(a.revoked) >= revokedCap {
		// Too many live sessions signed out to remember each: end them
		// all (everyone signs in again).
		a.notBefore = now.Unix()
		clear(a.revoked)
		return
	}
	a.revoked[nonce] = expiry
}

// bearer reports whether r carries the token as a bearer header: a client,
// not a browser, which needs no CSRF token.
func (a *auth) bearer(r *http.Request) bool {
	return a.token != "" && subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte("Bearer "+a.token)) == 1
}

// binding is what a request's CSRF token is bound to: its session, or
// without a token the browser's CSRF cookie; "" when it has none.
func (a *auth) binding(r *http.Request) string {
	name := csrfCookie
	if a.token != "" {
		name = sessionCookie
	}
	if ck, err := r.Cookie(name); err == nil {
		return ck.Value
	}
	return ""
}

// csrfToken is the token the page's forms carry. Without a server token, a
// browser without a CSRF cookie is given one first.
func (a *auth) csrfToken(w http.ResponseWriter, r *http.Request) string {
	bind := a.binding(r)
	if bind == "" && a.token == "" {
		b := make([]byte, 18)
		rand.Read(b)
		bind = b64.EncodeToString(b)
		http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: bind, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
		// The request's own forms are drawn with it.
		r.AddCookie(&http.Cookie{Name: csrfCookie, Value: bind})
	}
	if bind == "" {
		return ""
	}
	return b64.EncodeToString(mac(a.csrfKey, bind))
}

// checkPost says why a form post may be forged, or "" when it is the
// console's own: it comes from the console's origin (or from no page),
// and carries the token bound to its session. A client that sends the
// bearer header is no browser, and needs neither.
func (a *auth) checkPost(r *http.Request) string {
	if a.bearer(r) {
		return ""
	}
	if why := origin.CrossSite(r); why != "" {
		return why
	}
	bind := a.binding(r)
	if bind == "" {
		return "the form carries no session: load the page again"
	}
	want := b64.EncodeToString(mac(a.csrfKey, bind))
	if subtle.ConstantTimeCompare([]byte(r.PostFormValue(csrfField)), []byte(want)) != 1 {
		return "the form's CSRF token is missing or stale: load the page again"
	}
	return ""
}

// who says who sent r, for the audit of a person's answer: the signed-in
// session (with the name given at sign-in), a client with the token, or
// — without a token — a browser on loopback.
func (c *console) who(r *http.Request) string {
	switch {
	case c.auth.bearer(r):
		return "a client with the token (bearer header)"
	case c.opts.Token == "":
		return "the console on loopback (no sign-in)"
	}
	if ck, err := r.Cookie(sessionCookie); err == nil {
		if s, ok := c.auth.verify(ck.Value, c.now()); ok {
			return s.label()
		}
	}
	return "the console (no session)"
}

// public reports whether anyone may ask for r: what signing in needs.
func public(r *http.Request) bool {
	p := path.Clean(r.URL.Path)
	return p == "/signin" || strings.HasPrefix(p, "/static/")
}

// Admit lets the API's guard admit the console's signed-in browsers and
// anyone to the sign-in page (api.Sessions).
func (c *console) Admit(r *http.Request) bool {
	return public(r) || c.auth.session(r, c.now())
}

// Session reports whether r carries a valid session of the console's
// sign-in (a browser sends its cookie to every port of the host): what
// Temporal's UI, served on a port of its own, admits besides the token.
func (c *console) Session(r *http.Request) bool { return c.auth.session(r, c.now()) }

// Refuse sends a browser without a session to the sign-in page, and back
// to where it was going once signed in; what is not a page is refused
// outright.
func (c *console) Refuse(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && !strings.HasPrefix(r.URL.Path, "/events/") {
		http.Redirect(w, r, "/signin?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
		return
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="vibe"`)
	http.Error(w, "sign in first (/signin), or send Authorization: Bearer <token>", http.StatusUnauthorized)
}

// signinData is the sign-in page.
type signinData struct {
	Next, Name string
	Problem    string
}

func (signinData) title() string { return "Sign in" }

func (c *console) signinPage(w http.ResponseWriter, r *http.Request) {
	if c.opts.Token == "" {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	c.render(w, r, http.StatusOK, "signin", signinData{Next: localPath(r.URL.Query().Get("next"))})
}

func (c *console) signin(w http.ResponseWriter, r *http.Request) {
	if c.opts.Token == "" {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if why := origin.CrossSite(r); why != "" {
		c.fail(w, r, &pageError{status: http.StatusForbidden, msg: "refused: " + why})
		return
	}
	next, token, name := localPath(r.PostFormValue("next")), r.PostFormValue("token"), cleanName(r.PostFormValue("name"))
	right, wait := c.tries.Guess(throttle.Client(r), c.now(), func() bool {
		return subtle.ConstantTimeCompare([]byte(token), []byte(c.opts.Token)) == 1
	})
	if wait > 0 {
		w.Header().Set("Retry-After", throttle.RetryAfter(wait))
		c.render(w, r, http.StatusTooManyRequests, "signin", signinData{Next: next, Name: name,
			Problem: fmt.Sprintf("Too many wrong tokens from your address: try again in %s s.", throttle.RetryAfter(wait))})
		return
	}
	if !right {
		c.render(w, r, http.StatusUnauthorized, "signin", signinData{Next: next, Name: name, Problem: "That is not the server's token."})
		return
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: c.auth.newSession(c.now(), name), Path: "/", MaxAge: int(sessionFor.Seconds()),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (c *console) signout(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if why := c.auth.checkPost(r); why != "" {
		c.fail(w, r, &pageError{status: http.StatusForbidden, msg: "refused: " + why})
		return
	}
	c.auth.revoke(r, c.now())
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	http.Redirect(w, r, "/signin", http.StatusSeeOther)
}

// localPath is next when it is a path of this server, else "/": a sign-in
// link must not send the browser elsewhere.
func localPath(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
		return "/"
	}
	u, err := url.Parse(next)
	if err != nil || u.Host != "" || u.Scheme != "" {
		return "/"
	}
	return next
}
