// Package action holds Vibe's server actions: what a SERVER step (or a
// Vessel's action call) runs when the model has filled its input.
//
// An Action is a named function on JSON values (Func), with its retry
// policy and timeout. A Registry holds them by name and resolves a
// pipeline step's name to one (compile.MatchAction). Actions come from Go
// (Registry.Register, RegisterFunc), from HTTP endpoints (HTTP) or from
// tools of MCP servers (MCPTool, sessions kept in an MCPPool), and an
// actions file names endpoints and tools (Load).
//
// Every call of an action carries an idempotency key (Key,
// IdempotencyKey): the same on every attempt of one step's call, so that
// an endpoint that honours it applies the effect once although Temporal
// delivers an activity at least once.
//
// This package knows nothing of processes: the runtimes (packages process,
// request and batch) run actions as Temporal activities.
package action
