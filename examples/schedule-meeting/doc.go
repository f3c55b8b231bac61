// Command schedule-meeting runs seed 001's process end to end on the
// embedded Temporal engine: a model identifies the participants and
// prepares the calendar query, the server fetches availability, the model
// picks a slot and drafts the invitation, a person approves it, and the
// server sends it.
//
// It runs offline: the model's answers are replayed from answers.jsonl, a
// recording (the answers in it were written for this example, not produced
// by a live model — see README.md), and the two server actions are Go
// functions with a made-up calendar. Everything else is real: the process
// is compiled from registry/, and runs as a durable workflow persisted to
// an SQLite file in -data.
//
//	go run ./examples/schedule-meeting                  # asks you to approve
//	go run ./examples/schedule-meeting -decision Reject # answers for you
//
// With -serve-actions ADDR it runs no process: it serves the two actions
// over HTTP, as actions.json names them, for the vibe command (vibe run,
// vibe serve) to run the process with a model of its own.
//
//	go run ./examples/schedule-meeting -serve-actions 127.0.0.1:8091
package main
