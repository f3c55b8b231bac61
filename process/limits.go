package process

import (
	"fmt"
	"strings"

	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"

	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

// MaxPayloadSize is the engine's limit on one payload, in bytes: the start
// of a process (its program, prompt, input and first value, as one
// workflow input) or a person's answer. It is Temporal's default
// (limit.blobSize.error, 2 MiB); the engine refuses a larger payload with a
// gRPC error, and gRPC itself any message past 4 MiB. Client checks sizes
// against it before anything is started, so a request too large gets a
// *TooLargeError instead.
const MaxPayloadSize = 2 << 20

// TooLargeError is a start or an answer past MaxPayloadSize; nothing was
// started or sent.
type TooLargeError struct {
	What  string // "the start of schedule-meeting", "the answer"
	Size  int    // bytes, as measured (a lower bound when only the parts were summed)
	Limit int
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is %s, past the engine's limit of %s on one payload", e.What, mib(e.Size), mib(e.Limit))
}

func mib(n int) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// checkPartsSize refuses a start whose parts already pass the limit,
// before the process is compiled: a 7 MB prompt costs nothing to refuse.
func checkPartsSize(opts StartOptions) error {
	n := len(opts.Prompt) + len(opts.System) + len(opts.Pipeline)
	for _, v := range []jsonv.Value{opts.Input, opts.First, opts.Document} {
		if !v.IsNull() {
			n += len(jsonv.Marshal(v))
		}
	}
	if n > MaxPayloadSize {
		return &TooLargeError{What: "the start's prompt, input, process and first value", Size: n, Limit: MaxPayloadSize}
	}
	return nil
}

// CheckPayloadSize measures v as the engine will — encoded by the default
// data converter, as the Payloads of one workflow input or update — and
// returns a *TooLargeError naming it as what when it is past
// MaxPayloadSize, so that a start is refused before it is sent.
func CheckPayloadSize(what string, v any) error {
	p, err := converter.GetDefaultDataConverter().ToPayloads(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", what, err)
	}
	if n := proto.Size(p); n > MaxPayloadSize {
		return &TooLargeError{What: what, Size: n, Limit: MaxPayloadSize}
	}
	return nil
}

// FirstError is a first value (StartOptions.First) the process does not
// take: it breaks the schema of the chunk it fills, or the process's first
// chunk is not filled by a model. Nothing was started.
type FirstError struct {
	// Chunk is the chunk the value would fill: the first one (the direct
	// call's for a direct call).
	Chunk string
	Kind  compile.Kind
	// Problems are the ways the value breaks the chunk's schema, each at
	// its path in the value; none when Kind is not LLM.
	Problems []schema.Invalid
}

func (e *FirstError) Error() string {
	if e.Kind != compile.LLM {
		return fmt.Sprintf("the process's first chunk %s is not filled by a model, so it takes no first value", e.Chunk)
	}
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return fmt.Sprintf("the first value does not fit chunk %s: %s", e.Chunk, strings.Join(lines, "; "))
}

// checkFirst checks a first value against the chunk it fills, as the
// workflow would take it: the chunk's projected schema, and every step of
// the chunk present (the workflow fails a chunk value that lacks one).
func checkFirst(prog *compile.Program, first jsonv.Value) error {
	if first.IsNull() || len(prog.Chunks) == 0 {
		return nil
	}
	ch := &prog.Chunks[0]
	if prog.Direct != nil {
		ch = &prog.Chunks[prog.Direct.Chunk]
	}
	if ch.Kind != compile.LLM {
		return &FirstError{Chunk: ch.Name, Kind: ch.Kind}
	}
	problems, err := schema.Check(ch.Schema, first)
	if err != nil {
		return fmt.Errorf("check the first value against chunk %s: %w", ch.Name, err)
	}
	if first.Object() != nil {
		for _, s := range ch.Steps {
			if _, ok := first.Get(s.Name); !ok && !hasProblemAt(problems, "", s.Name) {
				problems = append(problems, schema.Invalid{Message: fmt.Sprintf("missing step %q", s.Name)})
			}
		}
	} else if len(problems) == 0 {
		problems = append(problems, schema.Invalid{Message: "must be an object of the chunk's steps"})
	}
	if len(problems) > 0 {
		return &FirstError{Chunk: ch.Name, Kind: ch.Kind, Problems: problems}
	}
	return nil
}

// hasProblemAt reports whether the validator already named the missing
// property at path (its "missing property" message quotes the name), so
// that a step is not reported twice.
func hasProblemAt(problems []schema.Invalid, path jsonv.Pointer, name string) bool {
	for _, p := range problems {
		if p.Path == path && strings.Contains(p.Message, "'"+name+"'") {
			return true
		}
	}
	return false
}
