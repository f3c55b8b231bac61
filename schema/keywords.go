package schema

import "strings"

// Vibe's naming conventions (SPEC §2). A member of a filled value whose name
// starts with "_" is a thinking field: the model fills it, the engine keeps
// it in the trace and removes it from the step's output. A member whose name
// starts with "$" is a metric, recorded and removed from the output.
//
// Some "_" names are not thinking but the wire names of calls, state and
// delegation (SPEC §7, §8); they are never split off.
var callFields = map[string]bool{
	"_tool":       true,
	"_instance":   true,
	"_outputPath": true,
	"_delegate":   true,
	"_scopes":     true,
	"_output":     true,
}

// IsThinking reports whether a member name marks a thinking field.
func IsThinking(name string) bool {
	return strings.HasPrefix(name, "_") && !callFields[name]
}

// IsMetric reports whether a member name marks a metric.
func IsMetric(name string) bool {
	return len(name) > 1 && name[0] == '$'
}

// IsCallField reports whether name is one of the "_" wire names of calls,
// state and delegation (_tool, _instance, _outputPath, _delegate, _scopes,
// _output).
func IsCallField(name string) bool { return callFields[name] }

// EngineKeywords are the schema keywords that only the engine reads. They are
// removed from every schema sent to a model.
var EngineKeywords = []string{
	"references",     // the earlier results a step needs (SPEC §2)
	"prompt",         // a pipeline's quoted head: the default prompt
	"entryPoint",     // a compiled process: {"$ref": "#/$defs/LLM_<first chunk>"}
	"directCall",     // a compiled direct server call
	"kind",           // a compiled chunk: "LLM", "SERVER" or "USER"
	"contextName",    // a compiled chunk: the context its steps sit in
	"action",         // a compiled step: the server action it runs
	"fireAndForget",  // a compiled step: the action runs after its LLM chunk, not awaited
	"_delegate",      // delegation (SPEC §8): where the delegate is
	"_scopes",        // what of the parent's context it sees
	"_resolve",       // "ahead": load it before the request (default: when the call runs)
	"_output",        // the schema of a delegate's result
	"loop",           // a Loop_Mixin's loop: {"done": "_loopDone", "max": 3}; the engine repeats the chunk
	"maxIterations",  // the most attempts of a loop, beside its mixin's $ref
	"withReferences", // a blocking step: its action also gets its references' values
	"fills",          // a compiled input step: the blocking step whose inputs the model fills
	"compare",        // how two answers of a field are compared (package compare)
}

// IsEngineKeyword reports whether a schema keyword is for the engine only.
func IsEngineKeyword(kw string) bool {
	for _, k := range EngineKeywords {
		if k == kw {
			return true
		}
	}
	return false
}
