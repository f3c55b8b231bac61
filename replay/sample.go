package replay

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/replay/record"
)

// Sample is the sample a replay took (Options.Sample): Items of Of
// records, chosen by Seed.
type Sample struct {
	Items int    `json:"items"`
	Of    int    `json:"of"`
	Seed  uint64 `json:"seed"`
}

// Share is a changed share: Changed items of Of — those that changed or
// need the server or a person, of those replayed that did not fail — its
// Rate, and Low and High, the bounds of its 95 % Wilson score interval.
type Share struct {
	Changed int     `json:"changed"`
	Of      int     `json:"of"`
	Rate    float64 `json:"rate"`
	Low     float64 `json:"low"`
	High    float64 `json:"high"`
}

// Baseline is what the process as it was recorded changed when its items
// were asked again (Options.Baseline): the model's own noise. Requests,
// Resumed and Usage are its calls', counted apart from the replay's.
type Baseline struct {
	Items    int            `json:"items"`
	Changed  int            `json:"changed"`
	Failed   int            `json:"failed,omitempty"`
	Share    *Share         `json:"share,omitempty"`
	Fields   map[string]int `json:"fields,omitempty"`
	Requests int            `json:"requests"`
	Resumed  int            `json:"resumed,omitempty"`
	Usage    llm.Usage      `json:"usage"`
}

// sample returns n of recs chosen at random by seed, in their order; all
// of them when n is 0 or not below their number.
func sample(recs []record.Record, n int, seed uint64) []record.Record {
	if n <= 0 || n >= len(recs) {
		return recs
	}
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	idx := r.Perm(len(recs))[:n]
	slices.Sort(idx)
	out := make([]record.Record, n)
	for i, k := range idx {
		out[i] = recs[k]
	}
	return out
}

// shareOf is the changed share of items, nil when none was replayed but
// failed.
func shareOf(items []Item) *Share {
	var s Share
	for _, it := range items {
		switch it.Outcome {
		case Changed, NeedsServer, NeedsPerson:
			s.Changed++
			s.Of++
		case Same:
			s.Of++
		}
	}
	if s.Of == 0 {
		return nil
	}
	s.Rate = float64(s.Changed) / float64(s.Of)
	s.Low, s.High = Wilson(s.Changed, s.Of)
	return &s
}

// z95 is the standard normal quantile of a two-sided 95 % interval.
const z95 = 1.959963984540054

// Wilson is the 95 % Wilson score interval of the share k of n: the
// interval that keeps its coverage near 95 % for small samples and for
// shares near 0 or 1, where the normal approximation's does not. It is
// (0, 1) for n = 0.
func Wilson(k, n int) (low, high float64) {
	if n <= 0 {
		return 0, 1
	}
	p, nf, z2 := float64(k)/float64(n), float64(n), z95*z95
	d := 1 + z2/nf
	c := (p + z2/(2*nf)) / d
	h := z95 / d * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf))
	return max(0, c-h), min(1, c+h)
}
