package api

import (
	"log/slog"
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
