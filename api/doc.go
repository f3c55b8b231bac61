// Package api is Vibe's HTTP API: a contract that tools outside Vibe use.
//
//	POST /v1/processes            {"process": URI | inline schema, "pipeline": EXPR, "prompt": "…", "input": {…}}
//	                              → 201 {"id": "schedule-meeting-7f3a9c2e"}
//	GET  /v1/processes            → 200 {"processes": [{"id", "process", "status", "startedAt"}, …]}
//	GET  /v1/processes/{id}       → 200 {"id", "process", "status", "waiting", "state", "usage", "metrics", "error", …}
//	POST /v1/processes/{id}/answer  the USER chunk's value → 200 the process, or 422 with the errors
//
// "status" is "running", "waiting", "completed" or "failed"; "waiting" is
// null or {"chunk", "schema", "context"}. Every error is JSON:
// {"error": "…", "path": "/json/pointer", "details": […]}, where details
// lists each problem as {"file", "path", "message"}.
//
// With a token (Options.Token), every request needs "Authorization: Bearer
// <token>"; a wrong or missing one gets 401. Without a token the server
// must listen on loopback only (the command line refuses otherwise).
//
// Client speaks the same API from Go, for commands that find a running
// server.
package api
