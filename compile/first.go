package compile

import (
	"fmt"
	"strings"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

// FirstError is a first value a process does not take — the value of its
// first chunk, filled before the process starts (by a caller of POST
// /v1/processes, or by a Vessel's model in a LaunchProcess call): it
// breaks the schema of the chunk it fills, or that chunk is not filled by
// a model.
type FirstError struct {
	// Chunk is the chunk the value would fill: the first one (the direct
	// call's for a direct call).
	Chunk string
	Kind  Kind
	// Problems are the ways the value breaks the chunk's schema, each at
	// its path in the value; none when Kind is not LLM.
	Problems []schema.Invalid
}

func (e *FirstError) Error() string {
	if e.Kind != LLM {
		return fmt.Sprintf("the process's first chunk %s is not filled by a model, so it takes no first value", e.Chunk)
	}
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return fmt.Sprintf("the first value does not fit chunk %s: %s", e.Chunk, strings.Join(lines, "; "))
}

// FirstChunk is the chunk a first value fills: the first one, or the
// direct call's; nil for a program without chunks.
func (p *Program) FirstChunk() *ProgramChunk {
	if len(p.Chunks) == 0 {
		return nil
	}
	if p.Direct != nil {
		return &p.Chunks[p.Direct.Chunk]
	}
	return &p.Chunks[0]
}

// CheckFirst checks a first value against the chunk it fills, as the
// workflow takes it: the chunk's projected schema, and every step of the
// chunk present (the workflow fails a chunk value that lacks one). A null
// first value is no first value. Every path that starts a process with a
// first value checks it here: the process client (a *FirstError is its
// 422) and a Vessel's launches (a repair turn for the model).
func (p *Program) CheckFirst(first jsonv.Value) error {
	ch := p.FirstChunk()
	if first.IsNull() || ch == nil {
		return nil
	}
	if ch.Kind != LLM {
		return &FirstError{Chunk: ch.Name, Kind: ch.Kind}
	}
	problems, err := schema.Check(ch.Schema, first)
	if err != nil {
		return fmt.Errorf("check the first value against chunk %s: %w", ch.Name, err)
	}
	if problems = append(problems, ch.MissingSteps(first, problems)...); len(problems) > 0 {
		return &FirstError{Chunk: ch.Name, Kind: ch.Kind, Problems: problems}
	}
	return nil
}

// MissingSteps are the problems of a chunk value beyond its schema's: a
// step it lacks (which the schema need not require), or not an object at
// all. known are the schema's problems, so that a step the validator
// already found missing is not reported twice.
func (ch *ProgramChunk) MissingSteps(value jsonv.Value, known []schema.Invalid) []schema.Invalid {
	var out []schema.Invalid
	if value.Object() == nil {
		if len(known) == 0 {
			out = append(out, schema.Invalid{Message: "must be an object of the chunk's steps"})
		}
		return out
	}
	for _, s := range ch.Steps {
		if _, ok := value.Get(s.Name); !ok && !hasProblemAt(known, "", s.Name) {
			out = append(out, schema.Invalid{Message: fmt.Sprintf("missing step %q", s.Name)})
		}
	}
	return out
}

// hasProblemAt reports whether the validator already named the missing
// property at path (its "missing property" message quotes the name).
func hasProblemAt(problems []schema.Invalid, path jsonv.Pointer, name string) bool {
	for _, p := range problems {
		if p.Path == path && strings.Contains(p.Message, "'"+name+"'") {
			return true
		}
	}
	return false
}
