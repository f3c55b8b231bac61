// Package openai is the llm.Provider for every OpenAI-compatible Chat
// Completions endpoint — OpenAI itself, vLLM, Ollama, llama.cpp's server —
// built on the official client, github.com/openai/openai-go/v3.
//
// The schema goes on the wire as the raw bytes it was given, so its
// property order (the order the model thinks in) reaches the model intact:
// as response_format json_schema by default, or as the parameters of one
// forced function call for servers without structured outputs (ModeTool).
// With Strict, the schema is first made strict (every property required,
// additionalProperties false, optional fields nullable, see
// compile.Project) and the answer is restored before it is returned.
package openai
