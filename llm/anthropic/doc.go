// Package anthropic is the llm.Provider for Anthropic's Messages API, built
// on the official client, github.com/anthropics/anthropic-sdk-go.
//
// The schema becomes the input_schema of one tool that the model is forced
// to call (tool_choice {"type": "tool"}); the tool call's input is the
// answer. The schema's raw bytes go on the wire, so property order — the
// order the model thinks in — reaches the model intact.
package anthropic
