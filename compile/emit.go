package compile

import (
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

// Keys of the compiled document.
const (
	// EntryPointKey holds {"$ref": "#/$defs/LLM_<first chunk>"}: the
	// instruction that starts the process (what LaunchProcess offers a
	// Vessel). A process that starts with a SERVER or USER chunk has none.
	EntryPointKey = "entryPoint"
	// DirectCallKey holds a direct server call: {"action": A, "step": S,
	// "instruction": {"$ref": "#/$defs/LLM_<chunk>"}}.
	DirectCallKey = "directCall"
)

// emit writes the compiled document: the flattened input, then the entry
// point (or direct call), then "$defs" with the chunks in execution order.
func emit(flat jsonv.Value, p *Process) jsonv.Value {
	out := flat.Clone().Object()
	for _, k := range []string{EntryPointKey, DirectCallKey, "$defs"} {
		out.Delete(k)
	}
	switch {
	case p.Direct != nil:
		out.Set(DirectCallKey, jsonv.ObjectValue(
			jsonv.Member{Name: "action", Value: jsonv.StringValue(p.Direct.Action)},
			jsonv.Member{Name: "step", Value: jsonv.StringValue(p.Direct.Step.Name)},
			jsonv.Member{Name: "instruction", Value: ref(p.Direct.Chunk)},
		))
	case len(p.Chunks) > 0 && p.Chunks[0].Kind == LLM:
		out.Set(EntryPointKey, ref(p.Chunks[0]))
	}
	defs := jsonv.NewObject(len(p.Chunks))
	for _, ch := range p.Chunks {
		defs.Set(ch.Name, chunkDef(flat, ch))
	}
	out.Set("$defs", defs.Value())
	return out.Value()
}

func ref(ch *Chunk) jsonv.Value {
	return jsonv.ObjectValue(jsonv.Member{Name: "$ref", Value: jsonv.StringValue("#/$defs/" + ch.Name)})
}

// chunkDef is a chunk's definition: the context's title and description
// when the chunk is the whole context, the engine keywords, and the steps.
func chunkDef(flat jsonv.Value, ch *Chunk) jsonv.Value {
	def := jsonv.NewObject(8)
	if ctx, ok := schema.Properties(flat).Get(ch.Context); ok && ch.Context != "" {
		if members := schema.Properties(ctx); members.Len() == len(ch.Members) {
			for _, kw := range []string{"title", "description"} {
				if v, ok := ctx.Get(kw); ok {
					def.Set(kw, v)
				}
			}
		}
	}
	def.Set("kind", jsonv.StringValue(string(ch.Kind)))
	if ch.Context != "" {
		def.Set("contextName", jsonv.StringValue(ch.Context))
	}
	def.Set("type", jsonv.StringValue("object"))
	props := jsonv.NewObject(len(ch.Members))
	names := make([]string, len(ch.Members))
	for i, m := range ch.Members {
		if m.Step != nil {
			props.Set(m.Name, stepDef(m.Step))
		} else {
			props.Set(m.Name, m.Schema)
		}
		names[i] = m.Name
	}
	def.Set("properties", props.Value())
	def.Set("required", schema.StringArray(names))
	if len(ch.References) > 0 {
		def.Set("references", refStrings(ch.References))
	}
	if ch.Loop != nil {
		def.Set("loop", jsonv.ObjectValue(
			jsonv.Member{Name: "done", Value: jsonv.StringValue(string(ch.Loop.Done))},
			jsonv.Member{Name: "max", Value: jsonv.IntValue(int64(ch.Loop.Max))}))
	}
	return def.Value()
}

// stepDef is a step's schema with its references in canonical form, its
// action, and for an input step the blocking step it fills.
func stepDef(s *Step) jsonv.Value {
	def := s.Schema.Clone().Object()
	if def.Has("references") || s.Fills != nil && len(s.References) > 0 {
		def.Set("references", refStrings(s.References))
	}
	if s.Action != "" {
		def.Set("action", jsonv.StringValue(s.Action))
	}
	if s.FireAndForget {
		def.Set("fireAndForget", jsonv.BoolValue(true))
	}
	if s.Fills != nil {
		def.Set("fills", jsonv.StringValue(s.Fills.QualifiedName()))
	}
	return def.Value()
}

func refStrings(refs []Ref) jsonv.Value {
	ss := make([]string, len(refs))
	for i, r := range refs {
		ss[i] = r.String()
	}
	return schema.StringArray(ss)
}
