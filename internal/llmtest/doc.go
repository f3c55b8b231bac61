// Package llmtest is a test model: an httptest server that speaks the
// OpenAI Chat Completions protocol, for tests that run Vibe's real
// providers end to end without a model.
package llmtest
