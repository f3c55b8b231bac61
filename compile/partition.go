package compile

import (
	"fmt"
	"slices"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

// partition forms chunks: maximal runs of one kind inside a context, or
// among consecutive plain steps. A thinking field joins the run of the
// step before it (the run after it when it comes first).
func (c *compiler) partition() {
	used := map[string]int{}
	var pending []Member // thinking fields of the process waiting for a chunk
	add := func(kind Kind, ctx string, ctxSchema jsonv.Value, members []Member, base string) {
		name := string(kind) + "_" + base
		if used[name]++; used[name] > 1 {
			name = fmt.Sprintf("%s_%d", name, used[name])
		}
		if len(pending) > 0 && kind != Server {
			// The process's own thinking fields before this chunk.
			members = append(pending, members...)
			pending = nil
		}
		ch := &Chunk{Name: name, Kind: kind, Context: ctx, Members: members}
		for _, m := range members {
			if m.Step != nil {
				ch.Steps = append(ch.Steps, m.Step)
			}
		}
		if len(ch.Steps) == 0 {
			return // thinking fields alone: reported by collectSteps
		}
		c.refs(ch)
		c.loop(ch, ctxSchema)
		c.chunks = append(c.chunks, ch)
	}
	// runs splits members into maximal runs of one kind; a thinking field
	// takes the kind of the step before it, or of the first step.
	runs := func(members []Member) [][]Member {
		var out [][]Member
		kind, prev := runKind(members), Kind("")
		for i, m := range members {
			if m.Step != nil {
				kind = m.Step.Kind
			}
			if i == 0 || kind != prev {
				out = append(out, nil)
			}
			out[len(out)-1] = append(out[len(out)-1], m)
			prev = kind
		}
		return out
	}
	var plain []Member
	flush := func() {
		for _, r := range runs(plain) {
			if k := runKind(r); k != "" {
				add(k, "", jsonv.NullValue(), r, firstStep(r).Name)
			} else {
				pending = append(pending, r...)
			}
		}
		plain = nil
	}
	for _, g := range c.groups {
		if g.context == "" {
			plain = append(plain, g.members...)
			continue
		}
		flush()
		rs := runs(g.members)
		for i, r := range rs {
			base := g.context
			if len(rs) > 1 {
				base = fmt.Sprintf("%s_%d", g.context, i+1)
			}
			add(runKind(r), g.context, g.schema, r, base)
		}
	}
	flush()
	if len(pending) > 0 {
		// Thinking fields after the last step join the last model's chunk.
		for i := len(c.chunks) - 1; i >= 0; i-- {
			if c.chunks[i].Kind != Server {
				c.chunks[i].Members = append(c.chunks[i].Members, pending...)
				pending = nil
				break
			}
		}
		if pending != nil {
			c.errorf("/properties", "thinking fields %s have no model's or person's chunk to go in: the process has none", memberNames(pending))
		}
	}
	for _, ch := range c.chunks {
		if ch.Kind != Server {
			continue
		}
		for _, m := range ch.Members {
			if m.Step == nil {
				c.errorf(ch.Steps[0].Path.Parent(), "%s is a thinking field among server steps (%s): only a model or a person fills one", m.Name, ch.Name)
			}
		}
	}
	c.fillInputs()
}

// runKind is the kind of a run's steps.
func runKind(r []Member) Kind {
	if s := firstStep(r); s != nil {
		return s.Kind
	}
	return ""
}

func firstStep(r []Member) *Step {
	for _, m := range r {
		if m.Step != nil {
			return m.Step
		}
	}
	return nil
}

// loop sets a chunk's loop: its context's (a Loop_Mixin around the
// context), or else its first step's (around one step). Only a model's
// chunk loops.
func (c *compiler) loop(ch *Chunk, ctxSchema jsonv.Value) {
	read := func(l jsonv.Value, at jsonv.Pointer) *Loop {
		if l.IsNull() {
			return nil
		}
		n, _ := l.Lookup("max").Int()
		return &Loop{Max: int(max(n, 1)), Done: at.Append(l.Lookup("done").Str())}
	}
	lp := read(ctxSchema.Lookup("loop"), "")
	for _, s := range ch.Steps {
		if lp == nil {
			lp = read(s.Schema.Lookup("loop"), jsonv.PointerTo(s.Name))
		}
	}
	if lp != nil && ch.Kind != LLM {
		c.errorf(ch.Steps[0].Path, "%s loops, but only a model's chunk repeats: a loop mixin belongs around LLM steps", ch.Name)
		return
	}
	ch.Loop = lp
}

// fillInputs gives every blocking step with inputs (SPEC §2) a step that
// asks the model for them: in the LLM chunk just before it, or else in a
// chunk made for that — also between two server steps when the second's
// inputs come after the first (its chunk is split there).
func (c *compiler) fillInputs() {
	var out []*Chunk
	for _, ch := range c.chunks {
		if ch.Kind != Server {
			out = append(out, ch)
			continue
		}
		part := &Chunk{Name: ch.Name, Kind: Server, Context: ch.Context}
		for _, s := range ch.Steps {
			if !s.Inputs.IsNull() {
				if len(part.Steps) > 0 {
					// The server steps before it run first.
					c.refs(part)
					out = append(out, part)
					part = &Chunk{Name: ch.Name + "_" + s.Name, Kind: Server, Context: ch.Context}
				}
				var into *Chunk
				if n := len(out); n > 0 && out[n-1].Kind == LLM {
					into = out[n-1]
				} else {
					into = &Chunk{Name: "LLM_" + s.Name + "_input", Kind: LLM, Context: s.Context}
					out = append(out, into)
				}
				if slices.ContainsFunc(into.Members, func(m Member) bool { return m.Name == s.Name }) {
					c.errorf(s.Path, "blocking step %q: chunk %s, which asks the model for its inputs, has a member of that name already", s.Name, into.Name)
				} else {
					f := &Step{Name: s.Name, Context: s.Context, Kind: LLM, Fills: s, Schema: fillerSchema(s), Path: s.Path, References: s.References, index: s.index}
					into.Steps = append(into.Steps, f)
					into.Members = append(into.Members, Member{Name: s.Name, Schema: f.Schema, Step: f})
					c.refs(into)
				}
			}
			part.Steps = append(part.Steps, s)
			part.Members = append(part.Members, Member{Name: s.Name, Schema: s.Schema, Step: s})
		}
		c.refs(part)
		out = append(out, part)
	}
	c.chunks = out
}

// fillerSchema is what the model fills for a blocking step: the step's
// inputs and its "output" as null, left for the server.
func fillerSchema(s *Step) jsonv.Value {
	out := jsonv.NewObject(6)
	for _, kw := range []string{"title", "description"} {
		if v, ok := s.Schema.Get(kw); ok {
			out.Set(kw, v)
		}
	}
	out.Set("type", jsonv.StringValue("object"))
	props := schema.Properties(s.Inputs).Clone()
	props.Set("output", jsonv.ObjectValue(
		jsonv.Member{Name: "type", Value: jsonv.StringValue("null")},
		jsonv.Member{Name: "description", Value: jsonv.StringValue("Filled by the server once the step runs: leave it null.")}))
	out.Set("properties", props.Value())
	out.Set("required", schema.StringArray(append(schema.Required(s.Inputs), "output")))
	return out.Value()
}
