// Command vibe composes, compiles and runs Vibe instructions and processes.
//
// The commands follow a schema's path: compose (flatten instructions,
// pipelines), compile (split a process into chunks), ask (fill one
// instruction with a model), serve, worker, run, answer, show and ps
// (durable processes on Temporal), mcp (the processes as an MCP server's
// tools), vessel and plan (a Vessel's request: calls, state, instances,
// plans and delegates). Run "vibe help" for each
// command's flags; docs/ describes the contracts (docs/registry.md,
// docs/models.md, docs/http-api.md, docs/cli.md).
package main
