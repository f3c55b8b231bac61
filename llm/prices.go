package llm

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

// Price is what a model's tokens cost, in a currency per million tokens.
// Vibe holds no price as truth: they come from a prices file (LoadPrices)
// that the user keeps to what their provider charges.
type Price struct {
	// Input is the price of a million prompt tokens; CachedInput of those
	// read from the provider's prompt cache (0: as Input), CacheWrite of
	// those written to it (0: as Input); Output of completion tokens.
	Input, CachedInput, CacheWrite, Output float64
	// BatchDiscount is the share taken off every price for a request sent
	// through the provider's Batch API: 0.5 for half price.
	BatchDiscount float64
}

// Prices are the prices of models by name, in one currency.
type Prices struct {
	// Currency names it, "USD" by default; File is where they were read.
	Currency, File string
	Models         map[string]Price
}

// Cost is what usage u of model costs at p, and whether p knows the
// model. Its Batched part costs the price less the model's batch
// discount; batch says all of u went through the provider's Batch API (an
// estimate's).
func (p *Prices) Cost(model string, u Usage, batch bool) (float64, bool) {
	if p == nil {
		return 0, false
	}
	pr, ok := p.price(model)
	if !ok {
		return 0, false
	}
	cost := pr.cost(u)
	switch {
	case batch:
		cost *= 1 - pr.BatchDiscount
	case u.Batched != nil:
		cost -= pr.cost(*u.Batched) * pr.BatchDiscount
	}
	return cost, true
}

// cost is what u costs at pr's full prices.
func (pr Price) cost(u Usage) float64 {
	cached, written := pr.CachedInput, pr.CacheWrite
	if cached == 0 {
		cached = pr.Input
	}
	if written == 0 {
		written = pr.Input
	}
	plain := max(u.PromptTokens-u.CachedPromptTokens-u.CacheWriteTokens, 0)
	return (float64(plain)*pr.Input + float64(u.CachedPromptTokens)*cached + float64(u.CacheWriteTokens)*written +
		float64(u.CompletionTokens)*pr.Output) / 1e6
}

// price is model's price: its own, else that of the longest name in p
// that model starts with followed by "-" — a provider names a dated
// snapshot ("gpt-4o-mini-2024-07-18") of the model a prices file names.
func (p *Prices) price(model string) (Price, bool) {
	if pr, ok := p.Models[model]; ok {
		return pr, true
	}
	best, found := "", false
	for name := range p.Models {
		if strings.HasPrefix(model, name+"-") && len(name) > len(best) {
			best, found = name, true
		}
	}
	return p.Models[best], found
}

// LoadPrices reads a prices file: a JSON object
//
//	{"currency": "USD", "models": {"gpt-4o-mini": {"input": 0.15, "cachedInput": 0.075,
//	  "output": 0.6, "batchDiscount": 0.5}, …}}
//
// with prices per million tokens. Every mistake is an error naming the
// file and its JSON path.
func LoadPrices(file string) (*Prices, error) {
	doc, err := schema.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var errs schema.ErrorList
	p := &Prices{Currency: "USD", File: file, Models: map[string]Price{}}
	if doc.Object() == nil {
		errs.Add(file, "", "a prices file is an object: {\"currency\": …, \"models\": {MODEL: {\"input\": …, \"output\": …}}}, not %s", doc.Kind())
		return nil, errs
	}
	for k, v := range doc.Members() {
		at := jsonv.PointerTo(k)
		switch k {
		case "currency":
			if v.Kind() != jsonv.KindString || v.Str() == "" {
				errs.Add(file, at, "currency must be a name such as \"USD\", not %s", v.Kind())
				continue
			}
			p.Currency = v.Str()
		case "models":
			if v.Object() == nil {
				errs.Add(file, at, "models must be an object from model names to prices, not %s", v.Kind())
				continue
			}
			for model, mv := range v.Members() {
				p.Models[model] = loadPrice(&errs, file, at.Append(model), mv)
			}
		default:
			errs.Add(file, at, "unknown key %q (want currency, models)", k)
		}
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return p, nil
}

// loadPrice reads one model's prices.
func loadPrice(errs *schema.ErrorList, file string, at jsonv.Pointer, v jsonv.Value) Price {
	var pr Price
	if v.Object() == nil {
		errs.Add(file, at, "a model's prices are an object: {\"input\": …, \"output\": …}, not %s", v.Kind())
		return pr
	}
	fields := map[string]*float64{"input": &pr.Input, "cachedInput": &pr.CachedInput, "cacheWrite": &pr.CacheWrite, "output": &pr.Output, "batchDiscount": &pr.BatchDiscount}
	for k, fv := range v.Members() {
		dst, ok := fields[k]
		if !ok {
			errs.Add(file, at.Append(k), "unknown key %q (want input, cachedInput, cacheWrite, output, batchDiscount)", k)
			continue
		}
		f, ok := number(fv)
		switch {
		case !ok || f < 0 || math.IsInf(f, 0):
			errs.Add(file, at.Append(k), "%s must be a number of 0 or more (per million tokens), not %s", k, jsonv.Marshal(fv))
		case k == "batchDiscount" && f >= 1:
			errs.Add(file, at.Append(k), "batchDiscount is the share taken off, below 1 (0.5 for half price), not %v", f)
		default:
			*dst = f
		}
	}
	if _, ok := v.Get("input"); !ok {
		errs.Add(file, at, "missing \"input\", the price of a million prompt tokens")
	}
	if _, ok := v.Get("output"); !ok {
		errs.Add(file, at, "missing \"output\", the price of a million completion tokens")
	}
	return pr
}

// number is v's value when it is a JSON number.
func number(v jsonv.Value) (float64, bool) {
	if v.Kind() != jsonv.KindNumber {
		return 0, false
	}
	f, err := strconv.ParseFloat(v.Literal(), 64)
	return f, err == nil
}

// Format says amount in p's currency, with as many decimals as a small
// amount needs: "0.0123 USD".
func (p *Prices) Format(amount float64) string {
	switch {
	case amount == 0:
		return "0 " + p.Currency
	case amount < 0.01:
		return fmt.Sprintf("%.6f %s", amount, p.Currency)
	case amount < 100:
		return fmt.Sprintf("%.4f %s", amount, p.Currency)
	}
	return fmt.Sprintf("%.2f %s", amount, p.Currency)
}
