package llm

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Priced is a Provider that prices each answer of the provider it wraps
// at Prices: the span of the call (Complete's "chat MODEL") gets the
// attributes vibe.cost and vibe.cost.currency, for a tracing backend to
// sum what the model calls cost. An answer whose model has no price gets
// none.
type Priced struct {
	Provider
	Prices *Prices
}

// Complete sends req through the wrapped provider and prices the answer.
func (p Priced) Complete(ctx context.Context, req *Request) (*Response, error) {
	resp, err := p.Provider.Complete(ctx, req)
	if err != nil {
		return resp, err
	}
	if cost, ok := p.Prices.Cost(resp.Model, resp.Usage, false); ok {
		trace.SpanFromContext(ctx).SetAttributes(attribute.Float64("vibe.cost", cost), attribute.String("vibe.cost.currency", p.Prices.Currency))
	}
	return resp, nil
}

// Unwrap is the wrapped provider (Wrapper).
func (p Priced) Unwrap() Provider { return p.Provider }

// System and Model are the wrapped provider's, when it says (Describer).
func (p Priced) System() string {
	if d, ok := p.Provider.(Describer); ok {
		return d.System()
	}
	return ""
}

// Model is the wrapped provider's model, when it says.
func (p Priced) Model() string {
	if d, ok := p.Provider.(Describer); ok {
		return d.Model()
	}
	return ""
}

// PricesOf is the Prices of the Priced wrapper p is or wraps (Wrapper),
// nil when there is none.
func PricesOf(p Provider) *Prices {
	for p != nil {
		if pr, ok := p.(Priced); ok {
			return pr.Prices
		}
		w, ok := p.(Wrapper)
		if !ok {
			return nil
		}
		p = w.Unwrap()
	}
	return nil
}

// RecordBatched records the answer of one request that went through a
// provider's Batch API, as a span of its own like Complete's ("chat
// MODEL", the GenAI attributes and the usage) with vibe.provider_batch.id,
// and its cost, at the batch discount, when p is or wraps a Priced. Its
// time is when the answer was read, not when the model gave it: no
// duration metric is recorded for it.
func RecordBatched(ctx context.Context, p Provider, batchID string, req *Request, resp *Response) {
	system := ""
	if d, ok := p.(Describer); ok {
		system = d.System()
	}
	_, span := tracer.Start(ctx, strings.TrimSpace("chat "+resp.Model), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("gen_ai.operation.name", "chat"), attribute.String("gen_ai.provider.name", system),
			attribute.String("gen_ai.request.model", resp.Model), attribute.String("gen_ai.response.model", resp.Model),
			attribute.String("vibe.step", req.Name), attribute.String("vibe.provider_batch.id", batchID),
			attribute.Int64("gen_ai.usage.input_tokens", resp.Usage.PromptTokens),
			attribute.Int64("gen_ai.usage.output_tokens", resp.Usage.CompletionTokens),
			attribute.Int64("gen_ai.usage.cache_read.input_tokens", resp.Usage.CachedPromptTokens),
			attribute.Int64("gen_ai.usage.cache_creation.input_tokens", resp.Usage.CacheWriteTokens)))
	defer span.End()
	if resp.ID != "" {
		span.SetAttributes(attribute.String("gen_ai.response.id", resp.ID))
	}
	if prices := PricesOf(p); prices != nil {
		if cost, ok := prices.Cost(resp.Model, resp.Usage, true); ok {
			span.SetAttributes(attribute.Float64("vibe.cost", cost), attribute.String("vibe.cost.currency", prices.Currency))
		}
	}
}
