package origin

import (
	"crypto/tls"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LOCALHOST:8080": true, "127.0.0.1": true, "127.8.9.10:80": true, "[::1]:8080": true, "::1": true,
		"localhost.example.com": false, "10.0.0.1:8080": false, "vibe.example.com": false, "": false, "[::2]:80": false,
	} {
		if got := LoopbackHost(host); got != want {
			t.Errorf("%q: %v, want %v", host, got, want)
		}
	}
}

func TestCrossSite(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tls    bool
		header []string
		why    string // "" for none, else a part of it
	}{
		{"no page", false, nil, ""},
		{"typed by the person", false, []string{"Sec-Fetch-Site", "none"}, ""},
		{"its own page", false, []string{"Sec-Fetch-Site", "same-origin", "Origin", "http://127.0.0.1:8080"}, ""},
		{"its own page, TLS", true, []string{"Origin", "https://127.0.0.1:8080"}, ""},
		{"another port", false, []string{"Sec-Fetch-Site", "same-site"}, `Sec-Fetch-Site is "same-site"`},
		{"another site", false, []string{"Origin", "http://evil.example"}, `origin "http://evil.example"`},
		{"scheme differs", true, []string{"Origin", "http://127.0.0.1:8080"}, "origin"},
		{"null origin", false, []string{"Origin", "null"}, "origin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "http://127.0.0.1:8080/x", nil)
			if tc.tls {
				r.TLS = &tls.ConnectionState{}
			}
			for i := 0; i+1 < len(tc.header); i += 2 {
				r.Header.Set(tc.header[i], tc.header[i+1])
			}
			why := CrossSite(r)
			if (why == "") != (tc.why == "") || !strings.Contains(why, tc.why) {
				t.Errorf("%q, want %q", why, tc.why)
			}
		})
	}
}
