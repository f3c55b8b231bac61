// Package llmtest is a test model: httptest servers that speak the OpenAI
// Chat Completions protocol (Server) and Anthropic's Messages API
// (Anthropic), each with its provider's Batch API — OpenAI's files and
// batches, Anthropic's Message Batches — for tests that run Vibe's real
// providers end to end without a model. One answer func serves direct
// requests and batches on both wires (Read understands both bodies);
// Batches moves batches on a clock the test controls, injects faults and
// counts what clients did.
package llmtest
