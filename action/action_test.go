package action

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/augceo/vibe/jsonv"
)

// TestHTTPAction: the input is POSTed as JSON with the call's idempotency
// key; a 2xx reply is the output; 429 and 5xx are retried, other 4xx and a
// reply that is not JSON are not.
func TestHTTPAction(t *testing.T) {
	var got struct{ key, auth, body, ctype string }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.key, got.auth, got.body, got.ctype = r.Header.Get("Idempotency-Key"), r.Header.Get("Authorization"), string(b), r.Header.Get("Content-Type")
		switch r.URL.Path {
		case "/ok":
			io.WriteString(w, `{"z": 1, "a": 2}`)
		case "/empty":
		case "/busy":
			http.Error(w, "slow down", http.StatusTooManyRequests)
		case "/down":
			http.Error(w, "oops", http.StatusBadGateway)
		case "/bad":
			http.Error(w, "no such user", http.StatusNotFound)
		case "/text":
			io.WriteString(w, "hello")
		}
	}))
	defer srv.Close()
	t.Setenv("ACTION_TOKEN", "s3cret")
	in := jsonv.ObjectValue(jsonv.Member{Name: "b", Value: jsonv.IntValue(1)}, jsonv.Member{Name: "a", Value: jsonv.IntValue(2)})
	ctx := WithIdempotencyKey(context.Background(), "vibe:p-1:serverContext1.send")
	tests := []struct {
		path      string
		want      string // the output, or the error's start
		retryable bool
	}{
		{"/ok", `{"z":1,"a":2}`, false},
		{"/empty", `null`, false},
		{"/busy", "POST " + srv.URL + "/busy: 429 Too Many Requests: slow down", true},
		{"/down", "POST " + srv.URL + "/down: 502 Bad Gateway: oops", true},
		{"/bad", "POST " + srv.URL + "/bad: 404 Not Found: no such user", false},
		{"/text", "POST " + srv.URL + "/text: the reply is not JSON", false},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			h := HTTP{URL: srv.URL + tt.path, Headers: map[string]string{"Authorization": "Bearer $ACTION_TOKEN"}}
			out, err := h.Run(ctx, in)
			if got.key != "vibe:p-1:serverContext1.send" || got.auth != "Bearer s3cret" || got.body != `{"b":1,"a":2}` || got.ctype != "application/json" {
				t.Errorf("request: %+v", got)
			}
			checkRun(t, out, err, tt.want, tt.retryable)
		})
	}
}

func TestLoadActions(t *testing.T) {
	file := filepath.Join(t.TempDir(), "actions.json")
	os.WriteFile(file, []byte(`{"Send": "http://127.0.0.1:9/send", "Fetch_Activity": {"url": "https://example.com/f", "headers": {"X-Key": "k"}, "timeout": "5s", "maxAttempts": 3}}`), 0o600)
	acts, err := Load(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(acts) != 2 || acts[0].Name != "Send" || acts[1].Timeout.String() != "5s" || acts[1].Retry.MaximumAttempts != 3 {
		t.Errorf("actions %+v", acts)
	}
	// Every problem with its path: the bad-input catalogue
	// (cmd/vibe/testdata/bad/vessel/bad-actions-file) shows them all.
	os.WriteFile(file, []byte(`{"A": {"url": "http://x/a", "maxAttempts": 4294967296}, "B": {"url": "http://x/b", "timeout": "-1s"}}`), 0o600)
	_, err = Load(file, nil)
	for _, want := range []string{file + ": /A/maxAttempts: maxAttempts must be an integer from 1 to 1000", file + ": /B/timeout: timeout must be a duration"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in %v", want, err)
		}
	}
	// A name that cannot name an action, a header value that would start
	// another header, an environment with a NUL.
	os.WriteFile(file, []byte(`{"a\u0000b": "http://x/a", "": "http://x/e", "C": {"url": "http://x/c", "headers": {"X-K": "v\r\nX-Evil: 1"}},`+
		` "D": {"mcp": {"command": "x", "env": {"K": "a\u0000b"}}, "tool": "t"}}`), 0o600)
	_, err = Load(file, nil)
	for _, want := range []string{
		file + `: /a\x00b: action name "a\x00b": a name is printable text without spaces or control characters, at most 200 bytes`,
		file + `: /: action name "": a name is printable text`,
		file + ": /C/headers/X-K: a header is a name (letters, digits, -) and a string value without control characters (CR, LF, NUL)",
		file + ": /D/mcp/env/K: an environment variable is a name and a string value, neither with a NUL",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in\n%v", want, err)
		}
	}
}

func TestIdempotencyKey(t *testing.T) {
	if k := IdempotencyKey(context.Background()); k != "" {
		t.Errorf("outside an action: %q", k)
	}
	if k := IdempotencyKey(WithIdempotencyKey(context.Background(), "k1")); k != "k1" {
		t.Errorf("key %q", k)
	}
}

// checkRun checks what an action's Run gave: the output want, or an error
// that starts with want and is retried or not as retryable says.
func checkRun(t *testing.T, out jsonv.Value, err error, want string, retryable bool) {
	t.Helper()
	if err == nil {
		if s := string(jsonv.Marshal(out)); s != want {
			t.Errorf("output %s, want %s", s, want)
		}
		return
	}
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q, want it to start %q", err, want)
	}
	var ae *temporal.ApplicationError
	if r := !(errors.As(err, &ae) && ae.NonRetryable()); r != retryable {
		t.Errorf("retryable %v, want %v", r, retryable)
	}
}
