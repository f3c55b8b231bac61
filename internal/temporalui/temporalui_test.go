package temporalui

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestLoopbackOnly: the UI's pages answer a request addressed to a
// loopback name, and nothing answers one addressed to another (a name
// rebound to 127.0.0.1 by a web page's DNS included).
func TestLoopbackOnly(t *testing.T) {
	// The frontend is dialled lazily: the pages need none.
	h, err := Handler(Options{Frontend: "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		host   string
		status int
		want   string
	}{
		{"127.0.0.1:8233", 200, "<!doctype html>"},
		{"localhost:8233", 200, "<!doctype html>"},
		{"[::1]:8233", 200, "<!doctype html>"},
		{"rebound.example.com:8233", http.StatusForbidden, "not to a loopback address"},
		{"192.168.1.20:8233", http.StatusForbidden, "not to a loopback address"},
	} {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "/", nil)
		r.Host = tc.host
		h.ServeHTTP(w, r)
		if w.Code != tc.status || !strings.Contains(w.Body.String(), tc.want) {
			t.Errorf("%s: %d %.200s", tc.host, w.Code, w.Body.String())
		}
	}
}

func TestNoFrontend(t *testing.T) {
	if _, err := Handler(Options{}); err == nil || !strings.Contains(err.Error(), "no frontend address") {
		t.Errorf("no frontend: %v", err)
	}
}

// TestSignIn: on a server with a token the UI answers only a request with
// the token or a session of the server's sign-in; the others get 401
// naming where to sign in, and wrong tokens are throttled.
func TestSignIn(t *testing.T) {
	h, err := Handler(Options{Frontend: "127.0.0.1:1", Token: "s3cret", SignIn: "http://127.0.0.1:8080/signin",
		Session: func(r *http.Request) bool {
			ck, err := r.Cookie("vibe_session")
			return err == nil && ck.Value == "good"
		}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, auth, cookie string
		status             int
		want               string
	}{
		{"nothing", "", "", http.StatusUnauthorized, "sign in at the console's sign-in (http://127.0.0.1:8080/signin)"},
		{"wrong token", "Bearer nope", "", http.StatusUnauthorized, "behind vibe serve's sign-in"},
		{"stale session", "", "bad", http.StatusUnauthorized, "behind vibe serve's sign-in"},
		{"token", "Bearer s3cret", "", 200, "<!doctype html>"},
		{"session", "", "good", 200, "<!doctype html>"},
	} {
		for _, path := range []string{"/", "/api/v1/namespaces/default/workflows"} {
			w := httptest.NewRecorder()
			r := httptest.NewRequest("GET", path, nil)
			r.Host = "127.0.0.1:8233"
			if tc.auth != "" {
				r.Header.Set("Authorization", tc.auth)
			}
			if tc.cookie != "" {
				r.AddCookie(&http.Cookie{Name: "vibe_session", Value: tc.cookie})
			}
			h.ServeHTTP(w, r)
			if path == "/" && (w.Code != tc.status || !strings.Contains(w.Body.String(), tc.want)) ||
				path != "/" && (w.Code == http.StatusUnauthorized) != (tc.status == http.StatusUnauthorized) {
				t.Errorf("%s, %s: %d %.200s", tc.name, path, w.Code, w.Body.String())
			}
		}
	}
	// Wrong tokens past the first few are throttled, the right one too.
	var last int
	for range 10 {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "/", nil)
		r.Host, r.RemoteAddr = "127.0.0.1:8233", "127.0.0.1:5555"
		r.Header.Set("Authorization", "Bearer guess")
		h.ServeHTTP(w, r)
		last = w.Code
	}
	if last != http.StatusTooManyRequests {
		t.Errorf("the tenth wrong token: %d, want 429", last)
	}
}
