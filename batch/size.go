package batch

import (
	"fmt"
	"strings"

	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
)

// Sizing a batch: K is the items of one model call of an LLM chunk, and
// the calls of a group run at once, as the model endpoint's limiter lets
// them (llm.Limiter). A group — one workflow — holds DefaultSize items, or
// K when K is larger: the engine starts a few dozen workflows a second, so
// a small K chosen for a batch is many calls of few groups, not many
// groups; and a batch of at most oneWave items that the calls at once
// take whole is one group, whose items run as many actions at once as the
// groups of DefaultSize it stands for. A K given (Options.Size) is a
// group's size too, one call of each chunk per group.

// ChunkSize is the K of one LLM chunk's calls in a batch, and why.
type ChunkSize struct {
	Chunk string `json:"chunk"`
	K     int    `json:"k"`
	Why   string `json:"why"`
}

// DefaultOutputTokens is the output token limit a call's answer must fit
// when the model's is not known (Client.OutputLimit): K items of a chunk
// whose answers are expected to be longer are not asked in one call.
const DefaultOutputTokens = 16384

// Calibrations give the K calibration chose for a chunk of a batch's
// process (package calibrate's Store is one); ok is false when none did.
type Calibrations interface {
	CalibratedK(chunk string, schema jsonv.Value, system string) (k int, ok bool)
}

// sizes chooses each LLM chunk's K for a batch of start's process: opts.Size
// when given (K for every chunk); else the largest rung of the ladder not
// above the calibrated K (DefaultSize where there is none), the items over
// the calls that may run at once (so that a few items spread over the
// slots there are, and many pack; not for calls through a provider's Batch
// API), and what the output token limit allows.
func (c *Client) sizes(opts Options, start durable.Start, calls int) []ChunkSize {
	var out []ChunkSize
	for _, ch := range start.Program.Chunks {
		if ch.Kind != compile.LLM || ch.Loop != nil {
			continue
		}
		if opts.Size > 0 {
			out = append(out, ChunkSize{Chunk: ch.Name, K: opts.Size, Why: "given"})
			continue
		}
		k, why := DefaultSize, []string{fmt.Sprintf("not calibrated: %d", DefaultSize)}
		if c.Calibrations != nil {
			if ck, ok := c.Calibrations.CalibratedK(ch.Name, ch.Schema, start.System); ok {
				k, why = ck, []string{fmt.Sprintf("calibrated: %d", ck)}
			}
		}
		// Calls through a provider's Batch API wait for the provider, not
		// for one another: spreading them buys no time.
		if opts.Total > 0 && calls > 0 && !opts.Call.ProviderBatch {
			spread := (opts.Total + calls - 1) / calls
			if spread < k {
				k = spread
				why = append(why, fmt.Sprintf("%d items over %d calls at once: %d", opts.Total, calls, spread))
			}
		}
		limit := c.OutputLimit
		if limit <= 0 {
			limit = DefaultOutputTokens
		}
		if oc := start.Program.OutputCap(ch.Name, limit, nil); oc.MaxK() > 0 && oc.MaxK() < k {
			k = oc.MaxK()
			why = append(why, fmt.Sprintf("answers of about %d tokens within the output limit of %d: %d", oc.PerItem, limit, k))
		}
		out = append(out, ChunkSize{Chunk: ch.Name, K: Rung(k), Why: "auto (" + strings.Join(why, "; ") + ")"})
	}
	return out
}

// oneWave bounds the batch that goes in one group when the calls that
// may run at once take all its items at once (groupOf).
const oneWave = 4 * DefaultSize

// groupOf is the items of a group for chunks of sizes: K when it was
// given (a group is one call of each chunk, as it always was); else
// DefaultSize, or the largest K when it is larger; or, for a batch of at
// most oneWave items whose calls of each chunk fit in the calls that may
// run at once (calls), all its items: more groups would only add
// workflows, each with its own round trips to the engine before and
// after its calls.
func groupOf(opts Options, sizes []ChunkSize, calls int) int {
	if opts.Size > 0 {
		return opts.Size
	}
	g := DefaultSize
	for _, s := range sizes {
		g = max(g, s.K)
	}
	if t, k := opts.Total, minK(sizes); t > g && t <= oneWave && !opts.Call.ProviderBatch && (t+k-1)/k <= calls {
		g = t
	}
	return g
}

// groupActions is the actions a group of size items runs at once
// (GroupInput.Actions): as many as the groups of DefaultSize it stands
// for, DefaultActions each; 0, the default, for a group of DefaultSize or
// fewer.
func groupActions(size int) int {
	if size <= DefaultSize {
		return 0
	}
	return DefaultActions * ((size + DefaultSize - 1) / DefaultSize)
}

// callSizes are sizes by chunk, as a batch's record keeps them.
func callSizes(sizes []ChunkSize) map[string]int {
	m := make(map[string]int, len(sizes))
	for _, s := range sizes {
		m[s.Chunk] = s.K
	}
	return m
}

// limiterCalls is the calls at once a batch plans for: opts.Concurrency
// when given, else the worker's limiter's when it is on this machine, else
// llm.DefaultConcurrency.
func (c *Client) limiterCalls(opts Options) int {
	switch {
	case opts.Concurrency > 0:
		return opts.Concurrency
	case c.Limiter != nil:
		return c.Limiter.Limit()
	}
	return llm.DefaultConcurrency
}
