package console

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

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
	f := meetingFixture(t)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	c := newTestConsole(t, Options{Token: "s3cret", Processes: f, Requests: fakeRequestsFixture(), Batches: fakeBatchesFixture()})
	h := api.Handler(f, api.Options{Token: "s3cret", Logger: quiet, Mounts: map[string]http.Handler{"/": c}})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Host = "vibe.example.com:8080" // off loopback
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, f
}

// TestRefusedWithoutToken: off loopback, without the token, every console
// URL is refused — a page sends the browser to sign in, anything else is
// 401 — and shows nothing of a process; a forged or stale session cookie
// is no better. Only the sign-in page and its stylesheet answer.
func TestRefusedWithoutToken(t *testing.T) {
	srv, f := tokenServer(t)
	forged := &http.Cookie{Name: sessionCookie, Value: "e30.AAAA"}
	other, _ := newAuth("another token")
	stale := &http.Cookie{Name: sessionCookie, Value: other.newSession(testNow)}
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
