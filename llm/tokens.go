package llm

import (
	"strings"
	"sync"

	tiktoken "github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"

	"github.com/augceo/vibe/compile"
)

// Tokenizer counts a model's tokens in text.
type Tokenizer interface {
	// Count is the tokens of text.
	Count(text string) int
	// Exact says whether Count is the provider's own count, not an
	// estimate.
	Exact() bool
	// Name names it: "o200k_base", "estimate (4 bytes a token)".
	Name() string
}

// TokenizerFor is the tokenizer of model: OpenAI's own (tiktoken's
// o200k_base or cl100k_base, which ship inside the binary) for the models
// that use it — the model table's "tokenizer", else the GPT and o-series
// names — and for every other model an estimate of compile.BytesPerToken
// bytes a token, which says it is one. Anthropic's tokenizer is not
// published.
func TokenizerFor(model string, models *Models) Tokenizer {
	enc := models.Limits(model).Tokenizer
	if enc == "" {
		enc = openAIEncoding(model)
	}
	if enc != "" {
		if t, err := encoding(enc); err == nil {
			return t
		}
	}
	return estimate{}
}

// openAIEncoding is the encoding of an OpenAI model by its name, or "".
func openAIEncoding(model string) string {
	for _, p := range []string{"gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4", "chatgpt-4o"} {
		if model == p || strings.HasPrefix(model, p+"-") {
			return "o200k_base"
		}
	}
	for _, p := range []string{"gpt-4", "gpt-3.5-turbo"} {
		if model == p || strings.HasPrefix(model, p+"-") {
			return "cl100k_base"
		}
	}
	return ""
}

var (
	encodingsMu sync.Mutex
	encodings   = map[string]*bpe{}
)

// encoding loads a tiktoken encoding once, from the files the binary
// holds: nothing is fetched.
func encoding(name string) (*bpe, error) {
	encodingsMu.Lock()
	defer encodingsMu.Unlock()
	if t, ok := encodings[name]; ok {
		return t, nil
	}
	tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader())
	enc, err := tiktoken.GetEncoding(name)
	if err != nil {
		return nil, err
	}
	t := &bpe{name: name, enc: enc}
	encodings[name] = t
	return t, nil
}

// bpe is a tiktoken encoding: OpenAI's own count.
type bpe struct {
	name string
	enc  *tiktoken.Tiktoken
}

func (t *bpe) Count(text string) int { return len(t.enc.EncodeOrdinary(text)) }
func (t *bpe) Exact() bool           { return true }
func (t *bpe) Name() string          { return t.name }

// estimate counts compile.BytesPerToken bytes a token.
type estimate struct{}

func (estimate) Count(text string) int { return compile.Tokens(len(text)) }
func (estimate) Exact() bool           { return false }
func (estimate) Name() string          { return "estimate (4 bytes a token)" }
