// Package telemetry exports what Vibe records — spans and metrics — over
// OpenTelemetry's OTLP, gRPC or HTTP (OTEL_EXPORTER_OTLP_PROTOCOL: grpc or
// http/protobuf), to a collector (Jaeger, Grafana Tempo, Honeycomb, an
// OpenTelemetry Collector, …).
//
// Setup installs the global tracer and meter providers that Vibe's packages
// record to: a span for each process and each of its activities (through
// Temporal's tracing interceptor, Interceptor; signals and queries get
// none), each LLM chunk ("chunk NAME", with the chunk's totals as
// vibe.usage.*), each model call ("chat MODEL", with the GenAI semantic
// conventions' attributes: gen_ai.provider.name, gen_ai.request.model,
// gen_ai.response.model, gen_ai.response.id,
// gen_ai.response.finish_reasons, server.address, server.port,
// error.type, and the token usage gen_ai.usage.* — on these spans only, so
// that a backend summing spans counts each token once), and each action
// ("action NAME"); and the conventions' metrics gen_ai.client.token.usage
// and gen_ai.client.operation.duration, beside vibe.llm.tokens,
// vibe.llm.requests, vibe.llm.duration and vibe.instruction.metric (the
// models' "$" metrics, tagged with process, step and instance). Without an
// endpoint — neither Options.Endpoint nor the standard
// OTEL_EXPORTER_OTLP_ENDPOINT variables — nothing is installed and the
// instruments cost nothing. An endpoint without a scheme, a collector that
// cannot be reached and an export that fails are warnings on standard
// error (Options.Warnings), not silence.
package telemetry
