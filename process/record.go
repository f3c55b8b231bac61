package process

import (
	"slices"
	"time"

	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/replay/record"
)

// Record is what a replay needs of the process as far as it ran (package
// record): its input, and each finished chunk's context and answer, the
// model that gave it, a SERVER step's input and output, a person's
// answer. The process's workflow and a batch's group keep it when the
// process ends (durable.Keep), and the process's workflow as it starts to
// wait for a person (Status waiting); ended is when.
func (r *Interpreter) Record(ended time.Time) record.Record {
	v := &r.view
	rec := record.Record{ID: r.id, Process: r.in.Name, Status: string(v.Status), Ended: ended,
		System: r.in.System, Prompt: r.in.Prompt, Input: r.in.Input, Chunks: []record.Chunk{}}
	if v.Error != nil {
		rec.Error = *v.Error
	}
	if r.in.Program == nil {
		return rec
	}
	for _, name := range v.Done {
		k := slices.IndexFunc(r.in.Program.Chunks, func(c compile.ProgramChunk) bool { return c.Name == name })
		if k < 0 {
			continue
		}
		ch := &r.in.Program.Chunks[k]
		c := record.Chunk{Name: ch.Name, Kind: ch.Kind}
		switch ch.Kind {
		case compile.LLM:
			c.Fingerprint = record.Fingerprint(ch, r.in.System)
			c.Answer = r.chunkValue(ch)
			for i := len(v.Calls) - 1; i >= 0; i-- {
				if call := v.Calls[i]; call.Chunk == ch.Name {
					c.Context, c.Model = call.Context, call.Model
					break
				}
			}
			if c.Context.IsNull() {
				c.Context, _ = v.context(ch.References)
			}
		case compile.User:
			c.Context, _ = v.context(ch.References)
			c.Answer = r.chunkValue(ch)
		case compile.Server:
			for i := range ch.Steps {
				s := &ch.Steps[i]
				kept, _ := v.State.At(s.State.Pointer())
				st := record.Step{Name: s.Qualified(), Output: kept}
				if s.Blocking {
					st.Input, st.Output = kept.Lookup("input"), kept.Lookup("output")
				} else if in, err := r.actionInput(s); err == nil {
					st.Input = in
				}
				c.Steps = append(c.Steps, st)
			}
		}
		rec.Chunks = append(rec.Chunks, c)
	}
	return rec
}

// chunkValue is a chunk's value as its steps' outputs in the state hold
// it, when no answer of a model is at hand (a person's, or a Vessel's).
func (r *Interpreter) chunkValue(ch *compile.ProgramChunk) jsonv.Value {
	o := jsonv.NewObject(len(ch.Steps))
	for i := range ch.Steps {
		if v, err := r.view.State.At(ch.Steps[i].State.Pointer()); err == nil {
			o.Set(ch.Steps[i].Name, v)
		}
	}
	return o.Value()
}
