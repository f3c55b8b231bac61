package api

import (
	"log/slog"
	"net/http"
	"testing"

	"github.com/augceo/vibe/jsonv"
)

func slogDiscard() *slog.Logger { return slog.New(slog.DiscardHandler) }

func mustJSON(t testing.TB, s string) jsonv.Value {
	t.Helper()
	v, err := jsonv.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// pageThrough follows a list's cursors two at a time through the handler,
// and returns the ids of the items under key, in order.
func pageThrough(t *testing.T, h http.Handler, list, key string) []string {
	t.Helper()
	var ids []string
	path := list + "?limit=2"
	for pages := 0; path != ""; pages++ {
		if pages > 3 {
			t.Fatal("the cursors do not end")
		}
		code, out, raw := call(t, h, "GET", path, "", "")
		if code != 200 {
			t.Fatalf("%s: %d %s", path, code, raw)
		}
		for _, p := range out[key].([]any) {
			ids = append(ids, p.(map[string]any)["id"].(string))
		}
		path = ""
		if next, ok := out["next"].(string); ok {
			path = list + "?limit=2&cursor=" + next
		} else if _, present := out["next"]; !present {
			t.Fatalf("no next: %s", raw)
		}
	}
	return ids
}
