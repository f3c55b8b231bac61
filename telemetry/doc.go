// Package telemetry exports what Vibe records — spans and metrics — over
// OpenTelemetry's OTLP/gRPC to a collector (Jaeger, Grafana Tempo, Honeycomb,
// an OpenTelemetry Collector, …).
//
// Setup installs the global tracer and meter providers that Vibe's packages
// record to: a span for each process and each of its activities (through
// Temporal's tracing interceptor, Interceptor), each LLM chunk ("chunk
// NAME"), each model call ("chat MODEL", with the GenAI semantic
// conventions' model and token attributes), and each action ("action
// NAME"); and the metrics vibe.llm.tokens, vibe.llm.requests,
// vibe.llm.duration and vibe.instruction.metric (the models' "$" metrics,
// tagged with process, step and instance). Without an endpoint — neither
// Options.Endpoint nor the standard OTEL_EXPORTER_OTLP_ENDPOINT variables —
// nothing is installed and the instruments cost nothing.
package telemetry
