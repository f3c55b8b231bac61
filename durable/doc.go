// Package durable is what every Vibe workflow shares on Temporal: the
// activities that do a workflow's outside effects and how a workflow runs
// them.
//
// A process (package process), a Vessel's request (package request) and a
// batch's group (package batch) each orchestrate in their own workflow,
// and each asks a model, runs a server action and checks a value the same
// way, through this package:
//
//   - Activities.Fill (FillName) asks a model to fill a chunk, through
//     llm.Fill: prompt, validation, repair turns, accounting. FillError
//     names each way a model call fails for good as a typed, non-retryable
//     application error (ErrTypeInvalidAnswer, ErrTypeModelRefused, …);
//     anything else is Temporal's to retry.
//   - Activities.Action (ActionName) runs a registered server action with
//     the call's idempotency key and checks its result against the step's
//     output schema; Activities.RunActions (ActionsName) runs many calls of
//     one action in one activity, each call's result its own.
//   - CheckValue (CheckName) is the local activity that validates a value
//     against a schema, so that no workflow runs the validator itself.
//   - Store.Keep of package replay/record (KeepName) is the local activity
//     by which a process, or a batch group's items, keep their replay
//     records as they end, and as one begins to wait for a person (Keep);
//     histories from before it replay without it (version markers,
//     KeepName and KeepWaitingChange).
//
// A workflow runs them with ExecuteFill, ExecuteAction, ExecuteActions and
// Check, whose activity options (FillOptions, ActionOptions) are built here
// once. Every activity that waits on the outside heartbeats (KeepAlive),
// so that a dead worker's work resumes within HeartbeatTimeout; a model
// call counts the requests it sent across its attempts (Sent).
//
// Model calls and actions are routed: each model has a task queue of its
// own (ModelQueue of a Model: provider, model, endpoint, never a key), and
// so has each action (ActionQueue). A process keeps the queues of its
// model and its actions in its input (Start.ModelQueue,
// Start.ActionQueues), as a batch's groups and a Vessel's requests keep
// their model's, so that whichever worker replays it schedules each call
// where only a worker that can make it polls (ModelWorker,
// ActionWorkers); an empty queue is the workflow's own, as before calls
// were routed. A client with no model records AnyModelQueue, which every
// worker that has a model polls beside its own model's queue, and none
// without one.
//
// The package also holds what the runtimes and their clients agree on: the
// names on the engine (the task queue, the process workflow's type and
// input, Start, which a Vessel's launch starts too; the search attributes;
// the queries by which a process hosted in another workflow is read), the
// engine's limits on what one payload may carry (MaxPayloadSize,
// MaxResultSize, MaxAnswerSize), and ErrorText, an error that crossed
// Temporal as a person reads it.
package durable
