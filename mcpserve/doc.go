// Package mcpserve serves Vibe's processes to MCP clients (the Model
// Context Protocol's: Claude Desktop and Claude Code, IDEs, agent hosts),
// over stdio or streamable HTTP, with the official Go SDK.
//
// Each process is a tool: its input schema is what starting the process
// needs (the prompt and the input — typed by the input schema of the
// action the process's input goes to, when that action declares one, as
// an MCP tool does), its description the process schema's, its output
// schema its result's: the process's output (its state, typed by its
// steps' schemas) with its id and status. Its annotations say what its
// steps do: a process of model and person steps only is neither
// destructive nor open-world; one with server actions is open-world, and
// destructive unless each of its actions says it only reads
// (action.Action.ReadOnly). A process whose actions are not all
// registered on the worker is not offered at all — its calls could only
// fail — and the log says which actions it lacks (New fails for one named
// in Options.Processes). A call starts the process and follows it,
// sending a progress notification as each chunk finishes, until it
// completes or fails. Four more tools read and drive processes:
// list_processes (by status and process name), show_process,
// answer_process and cancel_process; the resources vibe://processes and
// vibe://processes/{id} hold the list and each process's state. The
// handshake's serverInfo.version is Vibe's (vibe.Version).
//
// When a followed process waits for a person, the person is asked through
// MCP elicitation in form mode, when the client takes elicitations and the
// USER chunk's schema fits what a form can ask (Form says exactly what
// fits: flat fields of strings, numbers, booleans and string enums, one
// object of them per step). The form's message tells the context the
// chunk references as lines of text ("draftInvitation › subject: …"),
// bounded; show_process has it whole. The answer goes to the process, which checks
// it: a refused answer is asked again with the problems. Otherwise the
// call returns "waiting" with the process's id, the chunk's schema and why
// no form was asked, and answer_process continues the process later. The
// process is durable either way: a client that disconnects while the
// person is asked finds it waiting, and answers it through answer_process
// from a new session.
//
// On protocol versions from 2026-07-28 the question travels as the
// result's input requests (multi round-trip requests), and the client's
// retry carries the answer and the process's id in its request state;
// older clients are asked with a server-to-client elicitation request
// within the call. Both ways the process, not the session, holds the
// state.
//
// Cancellation: a client that cancels a tool call
// (notifications/cancelled) while the call follows a process cancels the
// process's workflow (Processes.Cancel). A call that ends because its
// session ended — the client disconnected, the server stops — leaves the
// process running, durably, to be read or answered later: the protocol
// tells the two apart (the SDK ends the call's context with the cause
// context.Canceled only for the client's notification).
package mcpserve
