package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/augceo/vibe/llm"
)

// tokens says what a usage counts: "P prompt + C completion tokens", and
// the prompt's share the provider read from its cache when there is one.
func tokens(u llm.Usage) string {
	s := fmt.Sprintf("%d prompt + %d completion tokens", u.PromptTokens, u.CompletionTokens)
	if u.CachedPromptTokens > 0 {
		s += fmt.Sprintf(" (%d of the prompt's from the provider's cache, %.0f%%)", u.CachedPromptTokens, 100*float64(u.CachedPromptTokens)/float64(max(u.PromptTokens, 1)))
	}
	if b := u.Batched; b != nil && b.Total() > 0 {
		if b.Total() == u.Total() {
			s += ", all through the provider's Batch API"
		} else {
			s += fmt.Sprintf(", %d of them through the provider's Batch API", b.Total())
		}
	}
	return s
}

// pricesFlag is --prices: the prices file that turns tokens into money.
type pricesFlag struct{ file string }

func (f *pricesFlag) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.file, "prices", os.Getenv("VIBE_PRICES"), "a prices `FILE` (per model and million tokens: input, cachedInput, cacheWrite, output, batchDiscount) to show what the tokens cost; default $VIBE_PRICES, else "+defaultPricesFile()+" when it exists")
}

// defaultPricesFile is where a prices file is looked for when --prices
// and $VIBE_PRICES give none: vibe/prices.json in the user's config
// directory.
func defaultPricesFile() string {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "~/.config/vibe/prices.json"
	}
	return filepath.Join(dir, "vibe", "prices.json")
}

// load reads the prices file: --prices, $VIBE_PRICES or the default one
// when it exists; nil when there is none.
func (f *pricesFlag) load() (*llm.Prices, error) {
	file := f.file
	if file == "" {
		if _, err := os.Stat(defaultPricesFile()); err != nil {
			return nil, nil
		}
		file = defaultPricesFile()
	}
	return llm.LoadPrices(file)
}

// costWords says what usage u of model costs at p, as the words a summary
// ends with: "; cost 0.0123 USD (prices …)", or why there is no cost;
// nothing without prices or a model.
func costWords(p *llm.Prices, model string, u llm.Usage) string {
	if p == nil || model == "" {
		return ""
	}
	c, ok := p.Cost(model, u, false)
	if !ok {
		return fmt.Sprintf("; no price for %s in %s", model, p.File)
	}
	if u.Batched != nil && u.Batched.Total() > 0 {
		return fmt.Sprintf("; cost %s, the batch discount taken off what went through the Batch API (prices: %s)", p.Format(c), p.File)
	}
	return fmt.Sprintf("; cost %s (prices: %s)", p.Format(c), p.File)
}
