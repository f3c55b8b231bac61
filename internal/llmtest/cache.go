package llmtest

import (
	"encoding/json"
	"strings"
)

// The prompt cache of a test model with Options.PrefixCache, as the
// providers describe theirs: OpenAI caches every prompt of 1,024 tokens
// or more on its own and reads as much of a new prompt's prefix as an
// earlier prompt matches, in steps of 128 tokens; Anthropic reads a
// prefix from its cache only up to a cache_control breakpoint, writing it
// on the first request that has it, and caches nothing shorter than its
// minimum (1,024 tokens for its Sonnet and Opus models). A prompt is the
// request's schema (OpenAI's response format or function, Anthropic's
// tool), then its system text, then its messages: what comes first is
// what a later request can share. Tokens are bytes / 4 (Options.Tokens).
const (
	cacheMinTokens  = 1024
	cacheStepTokens = 128
)

// prompt is a request body's prompt in the order the provider reads it,
// and (Anthropic) where its last cache breakpoint ends: -1 for none.
func prompt(body []byte) (p string, breakpoint int) {
	var req wireBody
	json.Unmarshal(body, &req)
	var b strings.Builder
	breakpoint = -1
	mark := func(raw json.RawMessage) {
		if strings.Contains(string(raw), `"cache_control"`) {
			breakpoint = b.Len()
		}
	}
	var tools struct {
		Tools []json.RawMessage `json:"tools"`
	}
	json.Unmarshal(body, &tools)
	for i, t := range req.Tools {
		b.Write(t.InputSchema)
		b.Write(t.Function.Parameters)
		var own struct {
			CacheControl json.RawMessage `json:"cache_control"`
		}
		if i < len(tools.Tools) && json.Unmarshal(tools.Tools[i], &own) == nil && own.CacheControl != nil {
			breakpoint = b.Len()
		}
	}
	b.Write(req.ResponseFormat.JSONSchema.Schema)
	b.WriteString("\x00system:" + text(req.System))
	mark(req.System)
	for _, m := range req.Messages {
		b.WriteString("\x00" + m.Role + ":" + text(m.Content))
		mark(m.Content)
	}
	return b.String(), breakpoint
}

// cacheOpenAI is the prompt tokens of body read from the cache, and
// keeps its prompt for the requests after it.
func (m *model) cacheOpenAI(body []byte) int {
	p, _ := prompt(body)
	m.mu.Lock()
	defer m.mu.Unlock()
	best := 0
	for _, q := range m.prompts {
		best = max(best, commonPrefix(p, q))
	}
	m.prompts = append(m.prompts, p)
	t := best / 4
	if t < cacheMinTokens {
		return 0
	}
	return cacheMinTokens + (t-cacheMinTokens)/cacheStepTokens*cacheStepTokens
}

// cacheAnthropic is the prompt tokens of body read from and written to
// the cache: its prefix up to its breakpoint, read when an earlier
// request wrote it, else written.
func (m *model) cacheAnthropic(body []byte) (read, written int) {
	p, at := prompt(body)
	if at < 0 || at/4 < cacheMinTokens {
		return 0, 0
	}
	prefix := p[:at]
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, q := range m.prompts {
		if q == prefix {
			return at / 4, 0
		}
	}
	m.prompts = append(m.prompts, prefix)
	return 0, at / 4
}

// commonPrefix is the bytes a and b share from their start.
func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
