// Package vessel runs Vessels: light agents that fill instructions, launch
// processes and run server actions for one request — for one item, or for
// hundreds of instances at once.
//
// A Vessel is a file:
//
//	{"name": "Scheduler", "system": "…",
//	 "tools": ["aug:instructions/…", …],       instructions (or actions) it may call
//	 "processes": ["aug:processes/…", …],      processes it may launch
//	 "mixins": ["aug:/vibes/macros/…", …]}     macros wrapped around every tool
//
// Its toolset is built by implicit composition (compose.Toolset): the tools
// side by side, unmerged, each wrapped in the mixins. A process becomes a
// task-specific tool by expanding the generic LaunchProcess macro:
// {name: {const: "ScheduleMeeting"}, llmContext1: <the process's entry
// chunk, in the mixins>} — the Vessel's model never sees the rest of the
// process.
//
// A Request is {context: [messages], schema} (SPEC §1). Messages are
// system {message}, input {input, schema?}, state (a data message of kind
// state, with an optional schema), data, and plan {calls}; any data message
// may carry _instance. The model answers one decision {"calls": [ … ]}: each
// call names its tool in _tool and may target an instance (_instance) and
// write its result into state (_outputPath "state.a.b", or "output":
// "†state.a.b"). A parameter written "†state.a.b" is replaced by that value
// of the call's instance's state before the call runs.
//
// Instances are isolated: a global input applies to every instance and a
// targeted one overrides it; each instance has its own state; a call's
// reads, writes and scopes touch its instance only. State changes are JSON
// Merge Patches (RFC 7396, github.com/evanphx/json-patch/v5) folded into one
// ordered view.
//
// A plan message is a DAG of calls wired through state variables. It is
// validated before anything runs — unknown tools, parameters that break a
// tool's schema, reads of variables nothing writes, cycles — and runs
// independent calls in parallel, once per instance; a plan is never
// instanced itself.
//
// A tool whose schema has "_delegate" runs its call in an isolated
// sub-request (SPEC §8): a stored Request {context, schema (with _output),
// tools…} from the registry, a file, an allowed URL (Loader), or
// "anonymous". A file is read only from the Vessel file's directory, the
// registry's, or a directory in Loader.Roots, symbolic links resolved: a
// "_delegate" of "../../etc/passwd" is refused when the toolset is built.
// The sub-request holds the delegate's own messages, the
// parent data its "_scopes" select for the call's instance (Scoped), and an
// input message with the call's parameters and the delegate's input schema
// (SubRequest, Delegate.Prepare). With "_resolve": "ahead" the delegate is
// loaded when the toolset is built: its input becomes the tool's
// parameters and its _output the result's contract.
//
// This package is the model-facing logic only, and knows nothing of
// Temporal: NewRequest prepares a request (its context parsed, its
// instances' states folded, a plan or a given decision assembled and
// checked), ParseDecision checks a model's decision, and the state helpers
// (ResolveRefs, Write, MergePatch) are what a runtime applies between
// calls. Package request runs a prepared Request durably.
package vessel
