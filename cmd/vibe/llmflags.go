package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/llm/anthropic"
	"github.com/augceo/vibe/llm/openai"
	"github.com/augceo/vibe/llm/replay"
)

// llmFlags select the model provider. The flags and environment variables
// are a contract that tools outside Vibe use:
//
//	--llm openai:MODEL | anthropic:MODEL | replay:FILE    ($VIBE_LLM)
//	--llm-base-url URL                                    ($VIBE_LLM_BASE_URL)
//	$VIBE_LLM_API_KEY, else $OPENAI_API_KEY / $ANTHROPIC_API_KEY
//	$VIBE_LLM_RECORD=FILE records every answer of a real provider to FILE
type llmFlags struct {
	spec, baseURL string
	tools, strict bool
	inline        bool        // --inline-schemas
	flag          *pflag.Flag // --llm, to tell a given flag from $VIBE_LLM
	// concurrency, when set, fixes the model calls at once to the
	// endpoint (vibe batch --concurrency); else the limiter adapts.
	concurrency int
}

// given reports whether --llm was on the command line.
func (f *llmFlags) given() bool { return f.flag != nil && f.flag.Changed }

// model is the model the flags name ("gpt-4o-mini" of openai:gpt-4o-mini),
// or "" for a recording or none.
func (f *llmFlags) model() string {
	kind, name, ok := strings.Cut(f.spec, ":")
	if !ok || (kind != "openai" && kind != "anthropic") {
		return ""
	}
	return name
}

// modelID names the model the flags select, for routing its calls
// (durable.ModelQueue): the provider's kind, the model, and the endpoint
// — the base URL, or a recording's absolute path — never the key. Every
// command that selects the same model at the same endpoint names it
// alike, so that the calls of a process one starts are taken by another's
// worker (vibe worker, vibe answer from the needs vibe run recorded).
func (f *llmFlags) modelID() durable.Model {
	kind, arg, _ := strings.Cut(f.spec, ":")
	m := durable.Model{Provider: kind, Name: arg, Endpoint: strings.TrimRight(f.baseURL, "/")}
	if kind == "replay" {
		if abs, err := filepath.Abs(arg); err == nil {
			arg = abs
		}
		m.Name, m.Endpoint = "", arg
	}
	return m
}

func (f *llmFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.spec, "llm", os.Getenv("VIBE_LLM"), "the model: openai:MODEL, anthropic:MODEL or replay:FILE (default $VIBE_LLM)")
	f.flag = cmd.Flags().Lookup("llm")
	cmd.RegisterFlagCompletionFunc("llm", completeLLM)
	cmd.Flags().StringVar(&f.baseURL, "llm-base-url", os.Getenv("VIBE_LLM_BASE_URL"), "the endpoint of an OpenAI-compatible server (vLLM, Ollama, llama.cpp) or an Anthropic proxy (default $VIBE_LLM_BASE_URL)")
	cmd.Flags().BoolVar(&f.strict, "llm-strict", false, "openai: send schemas in OpenAI's strict structured-output form (every property required, additionalProperties false, optional ones nullable) to any OpenAI-compatible endpoint, not only OpenAI's own")
	cmd.Flags().BoolVar(&f.tools, "llm-tools", false, "openai: send the schema as a forced function call instead of response_format json_schema, for servers without structured outputs")
	cmd.Flags().BoolVar(&f.inline, "inline-schemas", false, "send each schema whole, a repeated subschema written out wherever it is, instead of once under $defs with $ref: for providers without $ref")
}

// provider builds the selected provider. Replayed answers are announced on
// stderr, so that nobody takes a recording for a live model.
func (f *llmFlags) provider(io stdio) (llm.Provider, error) {
	if f.spec == "" {
		return nil, usageError{fmt.Errorf("no model selected: give --llm openai:MODEL, anthropic:MODEL or replay:FILE (or set VIBE_LLM)")}
	}
	kind, arg, ok := strings.Cut(f.spec, ":")
	if !ok || arg == "" {
		return nil, usageError{fmt.Errorf("--llm %q: want openai:MODEL, anthropic:MODEL or replay:FILE", f.spec)}
	}
	key := os.Getenv("VIBE_LLM_API_KEY")
	// One limiter paces every call to the endpoint, and sees each 429
	// through the client's transport, the SDK's own retries included.
	lim := limiter{llm.NewLimiter(llm.LimiterOptions{Start: f.concurrency, Fixed: f.concurrency > 0})}
	lim.Patience(llm.DefaultPatience)
	lim.Watch(endpointReporter(io.err, time.Now))
	var p llm.Provider
	switch kind {
	case "openai":
		if key == "" {
			key = os.Getenv("OPENAI_API_KEY")
		}
		mode := openai.ModeJSONSchema
		if f.tools {
			mode = openai.ModeTool
		}
		// Strict structured outputs are OpenAI's own; other servers get the
		// schema as written unless --llm-strict says they take it too.
		p = openai.New(openai.Options{Model: arg, BaseURL: f.baseURL, APIKey: key, Mode: mode, Strict: f.baseURL == "" || f.strict, HTTPClient: lim.client(), Inline: f.inline})
	case "anthropic":
		if key == "" {
			key = os.Getenv("ANTHROPIC_API_KEY")
		}
		p = anthropic.New(anthropic.Options{Model: arg, BaseURL: f.baseURL, APIKey: key, HTTPClient: lim.client(), Inline: f.inline})
	case "replay":
		rp, err := replay.Open(arg)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(io.err, "vibe: replaying recorded answers from %s (a recording, not a live model)\n", arg)
		return rp, nil
	default:
		return nil, usageError{fmt.Errorf("--llm %q: unknown provider %q; want openai, anthropic or replay", f.spec, kind)}
	}
	p = lim.Provider(p)
	if rec := os.Getenv("VIBE_LLM_RECORD"); rec != "" {
		r, err := replay.Record(p, rec)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(io.err, "vibe: recording every answer to %s\n", rec)
		return r, nil
	}
	return p, nil
}

// endpointReporter says on w what the model endpoint's health comes to
// (llm.Limiter.Watch): a call that failed for the endpoint — at once, then
// at most every reportEvery while it stays down —, an endpoint that
// refuses every request, and one that answers again. A command that waits
// for a down endpoint is not silent.
func endpointReporter(w io.Writer, now func() time.Time) func(llm.Health) {
	var (
		mu      sync.Mutex
		last    time.Time // the last report of a failure
		refused bool
	)
	return func(h llm.Health) {
		mu.Lock()
		defer mu.Unlock()
		t := now()
		switch {
		case h.Refused != nil:
			if !refused {
				refused = true
				fmt.Fprintf(w, "vibe: the model endpoint refuses every request, which waiting does not mend: %v\n", h.Refused)
			}
		case h.Down.IsZero():
			if !h.Recovered.IsZero() && !last.IsZero() {
				fmt.Fprintf(w, "vibe: the model endpoint answers again, after %s down\n", h.Outage.Round(time.Second))
				last = time.Time{}
			}
		case last.IsZero() || t.Sub(last) >= reportEvery:
			last = t
			waits := ""
			if h.Waiting > 0 {
				waits = fmt.Sprintf(", %d calls wait for it", h.Waiting)
			}
			fmt.Fprintf(w, "vibe: model call failed (attempt %d): %v; the model endpoint has been unreachable for %s%s; next try in %s (calls wait up to %s; Ctrl-C stops)\n",
				h.Failures, h.Last, t.Sub(h.Down).Round(time.Second), waits, max(h.Next.Sub(t), 0).Round(time.Second), llm.DefaultPatience)
		}
	}
}

// reportEvery is how often endpointReporter says again that the endpoint
// is still down.
const reportEvery = 5 * time.Second

// limiter is the llm.Limiter of a provider the flags make.
type limiter struct{ *llm.Limiter }

// client is an HTTP client whose transport tells the limiter of each 429.
func (l limiter) client() *http.Client {
	return &http.Client{Transport: l.Transport(nil)}
}
