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
