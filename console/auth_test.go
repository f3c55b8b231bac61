package console

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/augceo/vibe/api"
)

// consoleURLs are every page and stream of a console with requests and
// batches, and its one form post.
var consoleURLs = []string{"/", "/processes", "/processes?status=waiting", "/processes/schedule-meeting-0000aaaa", "/inbox",
	"/requests", "/requests/vessel-accountant-0000aaaa", "/batches", "/batches/batch-1",
	"/events/processes", "/events/processes/schedule-meeting-0000aaaa", "/static/../processes", "/nowhere"}

// tokenServer is vibe serve's handler with a token: the API with the
// console mounted at "/", on a test server whose Host is not loopback.
func tokenServer(t *testing.T) (*httptest.Server, *fakeProcesses) {
	h, f, _ := tokenHandler(t)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, f
}

// tokenHandler is tokenServer's handler. A request's X-Test-Client header,
// when set, is the address it comes from (the test's clients all come from
// 127.0.0.1).
func tokenHandler(t *testing.T) (http.Handler, *fakeProcesses, *console) {
	f := meetingFixture(t)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	c := newTestConsole(t, Options{Token: "s3cret", Processes: f, Requests: fakeRequestsFixture(), Batches: fakeBatchesFixture()})
	h := api.Handler(f, api.Options{Token: "s3cret", Logger: quiet, Mounts: map[string]http.Handler{"/": c}})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Host = "vibe.example.com:8080" // off loopback
		if client := r.Header.Get("X-Test-Client"); client != "" {
			r.RemoteAddr = client
		}
		h.ServeHTTP(w, r)
	}), f, c
}

// TestRefusedWithoutToken: off loopback, without the token, every console
// URL is refused — a page sends the browser to sign in, anything else is
// 401 — and shows nothing of a process; a forged or stale session cookie
// is no better. Only the sign-in page and its stylesheet answer.
func TestRefusedWithoutToken(t *testing.T) {
	srv, f := tokenServer(t)
	forged := &http.Cookie{Name: sessionCookie, Value: "e30.AAAA"}
	other, _ := newAuth("another token")
	stale := &http.Cookie{Name: sessionCookie, Value: other.newSession(testNow, "")}
	for _, cookie := range []*http.Cookie{nil, forged, stale} {
		for _, path := range consoleURLs {
			for _, method := range []string{"GET", "POST"} {
				req, _ := http.NewRequest(method, srv.URL+path, nil)
				if cookie != nil {
					req.AddCookie(cookie)
				}
				resp, err := http.DefaultTransport.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				want := http.StatusUnauthorized
				if method == "GET" && !strings.HasPrefix(path, "/events/") {
					want = http.StatusSeeOther
				}
				if resp.StatusCode != want || strings.Contains(string(body), "USER_userContext") || strings.Contains(string(body), "alice@") {
					t.Errorf("%s %s (cookie %v): %d, want %d\n%s", method, path, cookie, resp.StatusCode, want, body)
				}
				if want == http.StatusSeeOther && !strings.HasPrefix(resp.Header.Get("Location"), "/signin?next=") {
					t.Errorf("%s %s: Location %q", method, path, resp.Header.Get("Location"))
				}
			}
		}
	}
	resp, body := do(t, browser(t), "POST", srv.URL+"/processes/schedule-meeting-0000aaaa/answer", url.Values{"/confirmInvitation/decision": {`"Approve"`}})
	if resp.StatusCode != http.StatusUnauthorized || len(f.answers) != 0 {
		t.Errorf("an answer without the token: %d %v\n%s", resp.StatusCode, f.answers, body)
	}
	for _, path := range []string{"/signin", "/static/console.css"} {
		resp, _ := do(t, browser(t), "GET", srv.URL+path, nil)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %d", path, resp.StatusCode)
		}
	}
}

// TestSignIn: the token signs a browser in with an HttpOnly, SameSite=Strict
// cookie that opens the console — and only the console: the API still
// wants the bearer header. Signing out ends it.
func TestSignIn(t *testing.T) {
	srv, f := tokenServer(t)
	b := browser(t)
	resp, _ := do(t, b, "GET", srv.URL+"/inbox", nil)
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != "/signin?next=%2Finbox" {
		t.Fatalf("before signing in: %d %q", resp.StatusCode, loc)
	}
	resp, body := do(t, b, "POST", srv.URL+"/signin", url.Values{"token": {"wrong"}, "next": {"/inbox"}})
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "That is not the server&#39;s token.") {
		t.Fatalf("a wrong token: %d\n%s", resp.StatusCode, body)
	}
	resp, _ = do(t, b, "POST", srv.URL+"/signin", url.Values{"token": {"s3cret"}, "next": {"//evil.example/x"}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Errorf("a next of another site: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, _ = do(t, b, "POST", srv.URL+"/signin", url.Values{"token": {"s3cret"}, "next": {"/inbox"}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/inbox" {
		t.Fatalf("signing in: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	var session *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == sessionCookie {
			session = c
		}
	}
	if session == nil || !session.HttpOnly || session.SameSite != http.SameSiteStrictMode || session.Path != "/" || strings.Contains(session.Value, "s3cret") {
		t.Fatalf("the session cookie %+v", session)
	}
	resp, body = do(t, b, "GET", srv.URL+"/inbox", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "schedule-meeting-0000aaaa") || !strings.Contains(body, "Sign out") {
		t.Fatalf("signed in: %d\n%s", resp.StatusCode, body)
	}
	// The session answers the waiting process, CSRF token and all.
	resp, body = do(t, b, "POST", srv.URL+"/processes/schedule-meeting-0000aaaa/answer", url.Values{"csrf": {csrfOf(t, body)}, "/confirmInvitation/decision": {`"Reject"`}})
	if resp.StatusCode != http.StatusSeeOther || len(f.answers) != 1 {
		t.Errorf("an answer: %d %v\n%s", resp.StatusCode, f.answers, body)
	}
	// The cookie is no key to the API.
	resp, _ = do(t, b, "GET", srv.URL+"/v1/processes", nil)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the API with the session cookie: %d", resp.StatusCode)
	}
	// A client with the bearer header needs no session.
	resp, body = do(t, &http.Client{}, "GET", srv.URL+"/processes", nil, "Authorization", "Bearer s3cret")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "billing-0000cccc") {
		t.Errorf("the bearer header: %d", resp.StatusCode)
	}
	_, page := do(t, b, "GET", srv.URL+"/", nil)
	resp, _ = do(t, b, "POST", srv.URL+"/signout", url.Values{"csrf": {csrfOf(t, page)}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("signing out: %d", resp.StatusCode)
	}
	if resp, _ := do(t, b, "GET", srv.URL+"/", nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("after signing out: %d", resp.StatusCode)
	}
}

// signIn signs b in to srv from client, and returns its session cookie.
func signIn(t *testing.T, b *http.Client, srv *httptest.Server, client string) *http.Cookie {
	t.Helper()
	resp, body := do(t, b, "POST", srv.URL+"/signin", url.Values{"token": {"s3cret"}, "next": {"/"}}, "X-Test-Client", client)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("signing in from %s: %d\n%s", client, resp.StatusCode, body)
	}
	for _, c := range resp.Cookies() {
		if c.Name == sessionCookie {
			return c
		}
	}
	t.Fatalf("signing in from %s: no session cookie", client)
	return nil
}

// TestSignOutRevokes: signing out ends the session on the server, not only
// in the browser: the same cookie sent again is refused — a page sends to
// the sign-in page, an event stream or a form post gets 401 — while
// another browser's session goes on.
func TestSignOutRevokes(t *testing.T) {
	srv, f := tokenServer(t)
	b, other := browser(t), browser(t)
	session := signIn(t, b, srv, "192.0.2.1:1000")
	signIn(t, other, srv, "192.0.2.2:1000")
	_, page := do(t, b, "GET", srv.URL+"/inbox", nil)
	csrf := csrfOf(t, page)
	if resp, _ := do(t, b, "POST", srv.URL+"/signout", url.Values{"csrf": {csrf}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("signing out: %d", resp.StatusCode)
	}
	// (A timeout, lest an event stream that wrongly opens hang the test.)
	replay := &http.Client{CheckRedirect: b.CheckRedirect, Timeout: 10 * time.Second}
	cookie := "vibe_session=" + session.Value
	resp, _ := do(t, replay, "GET", srv.URL+"/inbox", nil, "Cookie", cookie)
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/signin?next=") {
		t.Errorf("a page with the cookie signed out: %d %q", resp.StatusCode, loc)
	}
	if resp, _ := do(t, replay, "GET", srv.URL+"/events/processes", nil, "Cookie", cookie); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("an event stream with the cookie signed out: %d", resp.StatusCode)
	}
	resp, _ = do(t, replay, "POST", srv.URL+"/processes/schedule-meeting-0000aaaa/answer",
		url.Values{"csrf": {csrf}, "/confirmInvitation/decision": {`"Reject"`}}, "Cookie", cookie)
	if resp.StatusCode != http.StatusUnauthorized || len(f.answers) != 0 {
		t.Errorf("an answer with the cookie signed out: %d %v", resp.StatusCode, f.answers)
	}
	if resp, _ := do(t, other, "GET", srv.URL+"/inbox", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("the other browser's session: %d", resp.StatusCode)
	}
	// Signing in again gives a new session that works.
	signIn(t, b, srv, "192.0.2.1:1000")
	if resp, _ := do(t, b, "GET", srv.URL+"/inbox", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("signed in again: %d", resp.StatusCode)
	}
}

// TestRevokedBound: the sessions signed out are remembered up to
// revokedCap; one more ends every session made until then, and a later
// one works. A session of another run of the server (a restart: same
// token, new run secret) opens nothing.
func TestRevokedBound(t *testing.T) {
	a, err := newAuth("s3cret")
	if err != nil {
		t.Fatal(err)
	}
	with := func(value string) *http.Request {
		r := httptest.NewRequest("GET", "/", nil)
		r.AddCookie(&http.Cookie{Name: sessionCookie, Value: value})
		return r
	}
	kept := a.newSession(testNow, "")
	for i := range revokedCap {
		a.revoke(with(a.newSession(testNow, "")), testNow)
		if len(a.revoked) != i+1 {
			t.Fatalf("%d revoked, want %d", len(a.revoked), i+1)
		}
	}
	if !a.session(with(kept), testNow) {
		t.Fatal("a session not signed out is refused")
	}
	a.revoke(with(a.newSession(testNow, "")), testNow)
	if len(a.revoked) != 0 || a.session(with(kept), testNow) {
		t.Errorf("past the bound: %d remembered, the kept session valid: %v", len(a.revoked), a.session(with(kept), testNow))
	}
	later := testNow.Add(time.Second)
	if !a.session(with(a.newSession(later, "")), later) {
		t.Error("a session made after the bound was passed is refused")
	}
	restarted, _ := newAuth("s3cret")
	if restarted.session(with(a.newSession(later, "")), later) {
		t.Error("a session of the run before the restart is valid")
	}
	// Expired sessions are dropped to make room, not counted.
	b, _ := newAuth("s3cret")
	for range revokedCap {
		b.revoke(with(b.newSession(testNow, "")), testNow)
	}
	after := testNow.Add(sessionFor + time.Second)
	b.revoke(with(b.newSession(after, "")), after)
	if len(b.revoked) != 1 || b.notBefore != 0 {
		t.Errorf("after the others expired: %d remembered, notBefore %d", len(b.revoked), b.notBefore)
	}
}

// TestSignInThrottle: a client gets five wrong tokens, then 429 with
// Retry-After for every try — the right token too, which is not even
// compared — while another client signs in; two seconds later the first
// has one try again.
func TestSignInThrottle(t *testing.T) {
	h, _, c := tokenHandler(t)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	var mu sync.Mutex
	now := testNow
	c.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	b := browser(t)
	for i := 1; i <= 20; i++ {
		resp, body := do(t, b, "POST", srv.URL+"/signin", url.Values{"token": {"wrong"}}, "X-Test-Client", "192.0.2.1:1000")
		want := http.StatusUnauthorized
		if i > 5 {
			want = http.StatusTooManyRequests
		}
		if resp.StatusCode != want {
			t.Fatalf("wrong try %d: %d, want %d\n%s", i, resp.StatusCode, want, body)
		}
		if want == http.StatusTooManyRequests && (resp.Header.Get("Retry-After") != "2" || !strings.Contains(body, "Too many wrong tokens from your address: try again in 2 s.")) {
			t.Fatalf("wrong try %d: Retry-After %q\n%s", i, resp.Header.Get("Retry-After"), body)
		}
	}
	resp, _ := do(t, b, "POST", srv.URL+"/signin", url.Values{"token": {"s3cret"}}, "X-Test-Client", "192.0.2.1:1001")
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("the right token from the throttled client: %d", resp.StatusCode)
	}
	signIn(t, browser(t), srv, "192.0.2.2:1000")
	signIn(t, browser(t), srv, "[2001:db8::1]:1000")
	mu.Lock()
	now = now.Add(2 * time.Second)
	mu.Unlock()
	signIn(t, b, srv, "192.0.2.1:1000")
}

// TestTokenlessOffLoopback: a server without a token answers the console
// only on loopback, as the API does.
func TestTokenlessOffLoopback(t *testing.T) {
	f := meetingFixture(t)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := api.Handler(f, api.Options{Logger: quiet, Mounts: map[string]http.Handler{"/": newTestConsole(t, Options{Processes: f})}})
	for _, path := range consoleURLs {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "http://vibe.example.com"+path, nil))
		if w.Code != http.StatusForbidden || strings.Contains(w.Body.String(), "schedule-meeting") {
			t.Errorf("%s: %d\n%s", path, w.Code, w.Body.String())
		}
	}
	if status, _ := get(t, h, "/inbox"); status != http.StatusOK {
		t.Errorf("on loopback: %d", status)
	}
}

// TestSecureCookie: over HTTPS the session cookie is Secure, so that a
// browser never sends it in cleartext; over HTTP it cannot be.
func TestSecureCookie(t *testing.T) {
	h, _, _ := tokenHandler(t)
	for _, tls := range []bool{false, true} {
		srv := httptest.NewUnstartedServer(h)
		if tls {
			srv.StartTLS()
		} else {
			srv.Start()
		}
		b := srv.Client()
		b.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		if session := signIn(t, b, srv, "192.0.2.1:1000"); session.Secure != tls {
			t.Errorf("over TLS %v: the session cookie %+v", tls, session)
		}
		srv.Close()
	}
}
