package action

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/augceo/vibe/jsonv"
)

// TestLoadGuards: an actions file may not replace the idempotency key,
// name an unset $VARIABLE, give a port that is no port, or call a
// link-local or metadata address unless its entry allows it.
func TestLoadGuards(t *testing.T) {
	t.Setenv("VIBE_GUARD_SET", "v")
	os.Unsetenv("VIBE_GUARD_UNSET")
	tests := []struct {
		name, file, want string // want "": loads
	}{
		{"idempotency key", `{"A": {"url": "http://x/a", "headers": {"idempotency-key": "same"}}}`,
			`/A/headers/idempotency-key: the header Idempotency-Key is Vibe's`},
		{"unset variable in a header", `{"A": {"url": "http://x/a", "headers": {"Authorization": "Bearer $VIBE_GUARD_UNSET"}}}`,
			`/A/headers/Authorization: names $VIBE_GUARD_UNSET, which is not set in the environment`},
		{"unset variable in an MCP environment", `{"A": {"mcp": {"command": "x", "env": {"K": "${VIBE_GUARD_UNSET}"}}, "tool": "t"}}`,
			`/A/mcp/env/K: names $VIBE_GUARD_UNSET, which is not set`},
		{"set variable", `{"A": {"url": "http://x/a", "headers": {"Authorization": "Bearer $VIBE_GUARD_SET"}}}`, ""},
		{"port 99999", `{"A": "http://127.0.0.1:99999/a"}`, `/A: action "A": "http://127.0.0.1:99999/a" has the port 99999: a port is 1 to 65535`},
		{"port 0", `{"A": "http://127.0.0.1:0/a"}`, `has the port 0`},
		{"AWS metadata", `{"A": "http://169.254.169.254/latest/meta-data/"}`, `/A: action "A": 169.254.169.254 is a link-local address`},
		{"GCP metadata", `{"A": {"url": "http://metadata.google.internal/computeMetadata/v1/"}}`, `metadata.google.internal is a cloud metadata service`},
		{"AWS IPv6 metadata", `{"A": "http://[fd00:ec2::254]/latest/"}`, `fd00:ec2::254 is a cloud metadata service's address`},
		{"IPv6 link-local", `{"A": {"mcp": "http://[fe80::1]:8080/mcp", "tool": "t"}}`, `/A/mcp: action "A": fe80::1 is a link-local address`},
		{"allowed", `{"A": {"url": "http://169.254.169.254/x", "allowLinkLocal": true}}`, ""},
		{"allow not a boolean", `{"A": {"url": "http://169.254.169.254/x", "allowLinkLocal": "yes"}}`, `/A/allowLinkLocal: allowLinkLocal must be true or false`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "actions.json")
			os.WriteFile(file, []byte(tt.file), 0o600)
			_, err := Load(file, nil)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), file+": ") || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("got %v, want %q at %s", err, tt.want, file)
			}
		})
	}
}

// TestIdempotencyKeyWins: whatever headers an HTTP action has, the call
// carries its own key; and a host name that resolves to a link-local
// address is refused when the connection is made, for good.
func TestIdempotencyKeyWins(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.Header.Get("Idempotency-Key") }))
	defer srv.Close()
	h := HTTP{URL: srv.URL, Headers: map[string]string{"Idempotency-Key": "same"}}
	if _, err := h.Run(WithIdempotencyKey(context.Background(), "vibe:p:s"), jsonv.NullValue()); err != nil || got != "vibe:p:s" {
		t.Errorf("key %q, err %v", got, err)
	}
	_, err := HTTP{URL: "http://169.254.169.254:1/x", Client: guardedClient(0)}.Run(context.Background(), jsonv.NullValue())
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) || !ae.NonRetryable() || !strings.Contains(err.Error(), "link-local") {
		t.Errorf("a link-local address: %v", err)
	}
}
