// Package process runs compiled processes durably on Temporal.
//
// One workflow (Workflows.Process, durable.ProcessWorkflow) per process
// instance runs a compiled process, prepared before it starts
// (compile.Program: every chunk's schema projected, every reference a
// state path, every action named), chunk by chunk, in execution order:
//
//   - an LLM chunk is one model call (durable.ExecuteFill) that sends the
//     chunk's projected schema with the minimal context of its references;
//   - its fire-and-forget steps then each start a child workflow
//     (FireAndForget) that runs the step's action with retries; the process
//     does not wait, and a failure is recorded, not fatal: the child
//     outlives the process, and Client.Get reads each one's outcome from it
//     (Info.ActionRuns: attempts, last error, done);
//   - a SERVER chunk runs each step's registered action
//     (durable.ExecuteAction), blocking, retried by Temporal, its result
//     validated against the step's "output" schema;
//   - a USER chunk waits for a person's answer, sent as the Temporal update
//     "answer" and validated against the chunk's schema in a local activity
//     (durable.Check): a bad answer is refused with the validation errors
//     and the process keeps waiting.
//
// Workflow code only orchestrates: it neither compiles, projects nor
// validates anything, and every outside effect — a model, an action — is
// an activity, so a restart of the server replays the history
// and repeats nothing. The process's state (every step's output, thinking
// fields, metrics, token usage) lives in the workflow and is read with the
// query "view". Ordered JSON (jsonv.Value) travels through Temporal's
// payloads as raw JSON, so property order survives.
//
// A direct server call (compile.DirectCall) runs as the small workflow
// DirectCall: the model fills the instruction, then the action runs with
// retries; there is no process state.
//
// Server actions — Go functions, HTTP endpoints, MCP tools — are package
// action's (action.Registry): a process runs them through the activities
// every Vibe workflow shares (package durable), with the action's retry
// policy and the call's idempotency key (action.Key of the workflow id and
// the step). Before a process starts, Client.Start checks each step that
// runs an MCP tool against the tool's input schema.
//
// The Interpreter is the process's semantics apart from its workflow: a
// batch's group (package batch) runs each item's process with it, inside
// its own workflow, as the Host of many.
//
// Client starts, lists, reads, answers and cancels processes; it is what
// the HTTP API, the MCP server (package mcpserve) and the command line
// use.
package process
