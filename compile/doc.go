// Package compile turns a process schema or a pipeline into a compiled
// process: chunks of steps by where they run, resolved references, and the
// schemas a model is sent.
//
// A process schema's top-level properties are contexts — llmContext1,
// serverContext1, userContext, … (a name of the form llm|server|user +
// "Context" + anything, in any case, whose kind is its prefix) — whose
// properties are steps, or are plain steps themselves (as in a composed
// pipeline). Steps are classified in this order (SPEC §5):
//
//  1. a top-level "output" property, or a name ending in "_Activity": a
//     blocking SERVER step;
//  2. a name ending in "_User", or a step in a user context: a USER step (a
//     person fills it);
//  3. a step in a server context: a SERVER step;
//  4. a name that matches a registered server action, with no "output": a
//     fire-and-forget step — an LLM step whose value the engine also hands
//     to the action after the chunk, without waiting;
//  5. otherwise an LLM step.
//
// Maximal runs of steps of one kind form a chunk; a context is never merged
// with its neighbours, so an author's contexts are chunk boundaries. A step
// name matches an action when it is the action's name, or
// "step<N>_" + compose.SnakeName(action) for a pipeline step.
//
// The compiled document is the input (flattened) plus "$defs" holding one
// definition per chunk in execution order — LLM_<chunk>, SERVER_<chunk>,
// USER_<chunk> — whose properties are its steps with their references
// resolved to the canonical form "context.step.field…", and the entry point
// {"entryPoint": {"$ref": "#/$defs/LLM_<first chunk>"}}. A pipeline that
// reduces to LLM steps ending in one fire-and-forget action compiles to a
// direct server call instead: {"directCall": {"action", "step",
// "instruction": {"$ref": "#/$defs/LLM_<chunk>"}}}. Chunk definitions carry
// the engine keywords "kind", "contextName" and "references"; steps carry
// "action" and "fireAndForget". Project removes every engine keyword from
// what a model sees.
//
// The flattened document must be a valid draft 2020-12 schema, as the
// engine's validator compiles the schemas cut from it when the process
// runs: a "pattern" that is no regular expression, a "type" that is no
// type, a "minimum" that is no number is a compile error at its path. So
// is a step named "".
//
// Process state is one object: a context's step results under
// state[context][step], a plain step's under state[step]. A reference
// names a path in it, and MinimalContext builds, from the state and a
// step's references, exactly the object seed 000 shows:
// {"step4_find_user": {"output": {…}}}.
//
// Multiplex compiles an LLM chunk run over N items into one flat object of
// N×M properties in step-major order (a1, a2, …, b1, …: a short prefix per
// step, then the item's number; ItemKey), the step schemas shared through
// "$defs"; Legend says that layout in words for the call's prompt, and
// Demultiplex splits an answer back per item, each item's part or its own
// error, so that one item missing from an answer is repaired alone. The
// layout is known here only: package batch calls these, package llm sends
// what they make. Batches keeps every call inside a provider's limits.
//
// A compilation is bounded: at most Options.MaxSteps steps
// (compose.MaxSteps by default), at most Options.Budget of time
// (DefaultBudget), and it stops when its context ends; BatchCalls lays out
// at most MaxBatchItems items. Every pass is linear in the steps.
package compile
