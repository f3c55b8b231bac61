// Command calendar-mcp books a meeting with a process whose server steps
// are tools of an MCP server: the model prepares the calendar query, the
// calendar's MCP tool find_free_slots answers it, the model drafts the
// invitation, you approve it, and the calendar's send_invitation sends it.
//
// The calendar is calendar-server, a small MCP server written with the
// official Go SDK and shipped here (package calendar); actions.json names
// it, started over stdio with go run. It runs offline: the model's answers
// are replayed from answers.jsonl, a recording of answers written for the
// example (see README.md).
//
//	go run ./examples/calendar-mcp                   # from the repository's root
//	go run ./examples/calendar-mcp -decision Reject
package main
