package process

import (
	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/jsonv"
)

// checkPartsSize refuses a start whose parts already pass the limit,
// before the process is compiled: a 7 MB prompt costs nothing to refuse.
func checkPartsSize(opts StartOptions) error {
	n := len(opts.Prompt) + len(opts.System) + len(opts.Pipeline)
	for _, v := range []jsonv.Value{opts.Input, opts.First, opts.Document} {
		if !v.IsNull() {
			n += len(jsonv.Marshal(v))
		}
	}
	if n > durable.MaxPayloadSize {
		return &durable.TooLargeError{What: "the start's prompt, input, process and first value", Size: n, Limit: durable.MaxPayloadSize}
	}
	return nil
}

// FirstError is a first value (StartOptions.First) the process does not
// take: it breaks the schema of the chunk it fills, or the process's first
// chunk is not filled by a model. Nothing was started. The check is
// compile's (Program.CheckFirst), shared with a Vessel's launches.
type FirstError = compile.FirstError

// checkFirst checks a first value against the chunk it fills, as the
// workflow would take it (compile.Program.CheckFirst).
func checkFirst(prog *compile.Program, first jsonv.Value) error { return prog.CheckFirst(first) }
