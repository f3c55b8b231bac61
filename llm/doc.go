// Package llm fills Instructions with a model: it builds the prompt from the
// minimal context, sends the projected schema through a Provider, parses the
// answer tolerantly, validates it against the schema, asks again with the
// validation errors when it breaks the schema, splits off `_` thinking and
// `$` metrics, and accounts tokens and latency.
//
// Providers for real endpoints live in sub-packages: llm/openai for every
// OpenAI-compatible server (OpenAI, vLLM, Ollama, llama.cpp), llm/anthropic,
// and llm/replay for recorded answers.
package llm
