// Package replay answers model requests from a recording, so that examples
// and tests run offline and give the same answers every time.
//
// A recording is a JSONL file, one answer per line:
//
//	{"step": "LLM_llmContext1", "hash": "3f2a…", "response": {…}, "recordedAt": "2026-11-22T10:00:00Z"}
//
// An answer is found by the request's step name and Hash, a SHA-256 of
// everything the request sends (name, system text, messages, schema). Answers
// recorded several times for one request are given in turn — so a repair
// conversation replays — and the last one again after that. Every replayed
// response has Replayed set, and whatever shows it says so.
//
// Record wraps a real provider and appends each answer to a recording as it
// arrives.
package replay
