package llm_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/augceo/vibe/llm"
)

// TestPrices: a prices file gives each model's cost of a usage — cached
// and written prompt tokens at their own prices, the batch discount off —
// and every mistake in it is named by file and path.
func TestPrices(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "prices.json")
	os.WriteFile(file, []byte(`{"currency": "EUR", "models": {
	  "m": {"input": 2, "cachedInput": 0.5, "cacheWrite": 2.5, "output": 8, "batchDiscount": 0.5},
	  "plain": {"input": 1, "output": 4}}}`), 0o600)
	p, err := llm.LoadPrices(file)
	if err != nil {
		t.Fatal(err)
	}
	u := llm.Usage{PromptTokens: 1_000_000, CompletionTokens: 100_000, CachedPromptTokens: 400_000, CacheWriteTokens: 100_000}
	// 500k plain × 2 + 400k × 0.5 + 100k × 2.5 + 100k out × 8, per million.
	for _, c := range []struct {
		model string
		batch bool
		want  float64
		known bool
	}{
		{"m", false, 1 + 0.2 + 0.25 + 0.8, true},
		{"m", true, (1 + 0.2 + 0.25 + 0.8) / 2, true},
		{"plain", false, 0.5 + 0.4 + 0.1 + 0.4, true}, // cached and written at the input price
		{"unknown", false, 0, false},
		{"plain-2025-01-01", false, 0.5 + 0.4 + 0.1 + 0.4, true}, // a dated snapshot of a priced model
		{"plainer", false, 0, false},
	} {
		got, ok := p.Cost(c.model, u, c.batch)
		if ok != c.known || (got-c.want) > 1e-9 || (c.want-got) > 1e-9 {
			t.Errorf("Cost(%s, batch %v) = %v %v, want %v", c.model, c.batch, got, ok, c.want)
		}
	}
	if got := p.Format(2.25); got != "2.2500 EUR" {
		t.Errorf("Format: %q", got)
	}

	os.WriteFile(file, []byte(`{"models": {"a": {"input": -1, "output": "2"}, "b": {"input": 1, "batchDiscount": 1.5, "tax": 3}}, "extra": 1}`), 0o600)
	_, err = llm.LoadPrices(file)
	for _, want := range []string{
		file + ": /models/a/input: input must be a number of 0 or more (per million tokens), not -1",
		file + `: /models/a/output: output must be a number of 0 or more (per million tokens), not "2"`,
		file + ": /models/b/batchDiscount: batchDiscount is the share taken off, below 1 (0.5 for half price), not 1.5",
		file + `: /models/b/tax: unknown key "tax"`,
		file + `: /models/b: missing "output"`,
		file + `: /extra: unknown key "extra"`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in\n%v", want, err)
		}
	}
}
