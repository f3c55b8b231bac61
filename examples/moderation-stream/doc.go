// Command moderation-stream moderates 1,000 comments as one batch on the
// embedded Temporal engine: each comment goes through the pipeline
//
//	prompt | AssessSentiment | DecideModeration | RecordDecision_Activity
//
// whose two model steps are filled for 32 comments at a time in one
// multiplexed model call (32 calls in all), and whose server step, the Go
// action RecordDecision_Activity, appends each decision to a ledger once
// per idempotency key. Results stream out as JSONL in input order; a run
// again over the same data directory reads the finished batch back and
// neither asks the model nor runs the action again.
//
// It runs offline: the model's answers are replayed from answers.jsonl, a
// recording. The answers in it were written by a keyword rule for this
// example (see main_test.go and README.md), not by a live model, and
// everything that shows them says so.
//
//	go run ./examples/moderation-stream -out results.jsonl
//	go run ./examples/moderation-stream -serve 127.0.0.1:8390   # the ledger as an HTTP action, for vibe batch
package main
