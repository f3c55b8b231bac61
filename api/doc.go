// Package api is Vibe's HTTP API: a contract that tools outside Vibe use.
//
//	POST /v1/processes            {"process": URI | inline schema, "pipeline": EXPR, "name": "…", "prompt": "…", "input": {…}, "first": {…}}
//	                              → 201 {"id": "schedule-meeting-7f3a9c2e"}
//	GET  /v1/processes?limit=N&cursor=C
//	                              → 200 {"processes": [{"id", "process", "status", "startedAt"}, …], "next": C | null}
//	GET  /v1/processes/{id}       → 200 {"id", "process", "status", "waiting", "state", "usage", "metrics", "error", …}
//	POST /v1/processes/{id}/answer  the USER chunk's value → 200 the process, 422 with the errors, 409 when it waits for none
//	POST /v1/processes/{id}/cancel  → 200 the process: its workflow is cancelled, and it ends failed
//	POST /v1/requests             {"vessel": URI | inline Vessel, "prompt": "…", "context": [messages], "decision": {…}}
//	                              → 201 {"id": "vessel-accountant-7f3a9c2e", "vessel": "Accountant"}
//	POST /v1/plans                {"vessel": URI | inline Vessel, "context": [messages, one a plan]} → 201, as above
//	GET  /v1/requests?limit=N&cursor=C
//	                              → 200 {"requests": [{"id", "vessel", "status", "startedAt"}, …], "next": C | null}
//	GET  /v1/requests/{id}        → 200 {"id", "vessel", "status", "decision", "calls", "states", "usage", "error", …}
//
// "status" is "running", "waiting", "completed" or "failed"; "waiting" is
// null or {"chunk", "schema", "context"}. The list is newest first, limit
// 1 to 1000 (default 100); "next" is the cursor of the following page.
//
// The request routes are served when Options.Requests is set (vibe serve
// gives a request.Client with its registry, actions and delegate
// allow-list): the server builds a request's toolset itself. A running
// request shows its decision (null until made) and the calls finished so
// far; a delegate call's "run" is a request this route reads too, though
// the list leaves it out.
//
// Every error is JSON: {"error": "…", "path": "/json/pointer", "details":
// […]}, where details lists each problem as {"file", "path", "message"}. A
// client's mistake is a 4xx: 400 a malformed body, URI, id or query; 404
// an unknown path or process; 405 a method the path does not take (with
// Allow); 409 an answer to a process that waits for none; 413 a body or a
// start past the engine's payload limit (durable.MaxPayloadSize); 415 a
// POST body that is not application/json; 422 a process that does not
// compile, a "first" value or an answer that breaks its chunk's schema, a
// Vessel, context, plan or decision with problems, each problem at its
// path (an inline part's file is the member it came in: "vessel",
// "context", "decision"). The engine's own failures are 503 when they
// may pass and 500 otherwise, and are logged.
//
// With a token (Options.Token), every request needs "Authorization: Bearer
// <token>"; a wrong or missing one gets 401. Without a token the server
// must listen on loopback only (the command line refuses otherwise), and
// it refuses with 403 what a web page could send through the person's
// browser: a Host that is not a loopback name (DNS rebinding), an Origin
// not its own, a Sec-Fetch-Site other than same-origin or none.
//
// Client speaks the same API from Go, for commands that find a running
// server; it gives back the typed errors of package process, and its
// Requests those of package request.
package api
