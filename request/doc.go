// Package request runs Vessels' requests durably on Temporal. A Vessel is
// Vibe's light agent (a system text and a toolset, package vessel); a
// request is one run of it: one decision of the model and the calls it
// makes. Each request is a workflow that orchestrates it, with the
// activities that decide and delegate, and the client that starts, reads,
// watches and lists requests (Client, the counterpart of process.Client;
// Run starts a prepared request and waits for its result). The HTTP API
// serves them under /v1/requests, the command line runs one with vibe
// vessel and lists them with vibe requests. It is the
// runtime of package vessel as package process is the runtime of compiled
// processes, beside it: both run their model calls and actions through
// package durable.
//
// What a request means — its toolset, context, state, instances, plans,
// delegates, and how a decision is checked — is package vessel's, which
// knows nothing of Temporal. A request reaches this package prepared
// (vessel.NewRequest), and the workflow (Workflows.Request) only sequences:
//
//   - the decision is an activity (Activities.Decide) that asks the model
//     and checks its answer (vessel.ParseDecision), unless the request
//     brings its calls: a plan, or a decision given in advance;
//   - the calls run layer by layer (vessel.Graph.Layers), up to MaxParallel
//     at a time: an instruction gives its filled value, an action runs in
//     the shared action activity (durable.ExecuteAction, with the action's
//     retry policy), a launch starts a process as a child workflow that
//     outlives the request (durable.Start; this package knows no more of
//     processes than that), and a
//     delegate call runs the delegate activity, which prepares the isolated
//     sub-request, and then that sub-request as a child workflow one level
//     deeper;
//   - results are written into each instance's state in call order
//     (vessel.Write), a call whose dependency failed is not run; a plan's
//     call whose condition ("_if") does not hold is skipped, and so is a
//     call that reads a variable left unset because its writers were
//     skipped;
//   - a sub-request with an output schema has the model fill it with the
//     calls' results in view.
//
// Every outside effect is an activity and every value a check needs is
// checked in one (a local activity where it is cheap), so a restart of
// the server replays the history and repeats nothing.
//
// The query "view" (QueryView) returns what the workflow holds as it runs:
// the decision once made, the calls finished so far, each instance's state,
// the usage. Client.Get reads it; top-level requests carry their Vessel's
// name in the memo (MemoVessel) and are listed by Client.List, a
// delegate's sub-request being shown as its call's run instead.
package request
