package llm

import (
	"context"

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
