package compile

import (
	"fmt"
	"strings"

	"github.com/augceo/vibe/jsonv"
)

// Decode reads a compiled document (Process.Document) back into a Process,
// as the runtime does with a stored process. It trusts the document's
// "$defs" and reports only what makes it unusable.
func Decode(doc jsonv.Value) (*Process, error) {
	p := &Process{Document: doc, Prompt: doc.Lookup("prompt").Str()}
	defs := doc.Lookup("$defs").Object()
	if defs == nil {
		return nil, fmt.Errorf("not a compiled process: no $defs")
	}
	index := 0
	for _, m := range defs.Members() {
		kind := Kind(m.Value.Lookup("kind").Str())
		if kind != LLM && kind != Server && kind != User {
			continue
		}
		ch := &Chunk{Name: m.Name, Kind: kind, Context: m.Value.Lookup("contextName").Str()}
		for _, sm := range m.Value.Lookup("properties").Object().Members() {
			ch.Steps = append(ch.Steps, &Step{
				Name:          sm.Name,
				Context:       ch.Context,
				Kind:          kind,
				Action:        sm.Value.Lookup("action").Str(),
				FireAndForget: sm.Value.Lookup("fireAndForget").Bool(),
				Schema:        sm.Value,
				Path:          jsonv.PointerTo("$defs", m.Name, "properties", sm.Name),
				index:         index,
			})
			index++
		}
		if len(ch.Steps) == 0 {
			return nil, fmt.Errorf("compiled process: chunk %s has no steps", m.Name)
		}
		p.Chunks = append(p.Chunks, ch)
	}
	if len(p.Chunks) == 0 {
		return nil, fmt.Errorf("not a compiled process: $defs holds no chunk (LLM_…, SERVER_…, USER_… with a \"kind\")")
	}
	steps := make(map[string]*Step) // by qualified name
	for _, s := range p.Steps() {
		if _, dup := steps[s.QualifiedName()]; !dup {
			steps[s.QualifiedName()] = s
		}
	}
	for _, ch := range p.Chunks {
		for _, s := range ch.Steps {
			for _, r := range schemaStrings(s.Schema.Lookup("references")) {
				ref, err := parseRef(steps, r)
				if err != nil {
					return nil, fmt.Errorf("compiled process: step %s: %w", s.QualifiedName(), err)
				}
				s.References = append(s.References, ref)
			}
		}
		for _, r := range schemaStrings(doc.Lookup("$defs").Lookup(ch.Name).Lookup("references")) {
			ref, err := parseRef(steps, r)
			if err != nil {
				return nil, fmt.Errorf("compiled process: chunk %s: %w", ch.Name, err)
			}
			ch.References = append(ch.References, ref)
		}
	}
	if dc, ok := doc.Get(DirectCallKey); ok {
		name := strings.TrimPrefix(dc.Lookup("instruction").Lookup("$ref").Str(), "#/$defs/")
		ch := p.Chunk(name)
		if ch == nil {
			return nil, fmt.Errorf("compiled process: directCall names no chunk %q", name)
		}
		step := ch.Steps[len(ch.Steps)-1]
		p.Direct = &DirectCall{Action: dc.Lookup("action").Str(), Step: step, Chunk: ch}
	}
	return p, nil
}

// parseRef resolves a canonical reference "context.step.field…" or
// "step.field…" among steps, keyed by qualified name.
func parseRef(steps map[string]*Step, r string) (Ref, error) {
	parts := strings.Split(r, ".")
	if len(parts) > 1 {
		if s := steps[parts[0]+"."+parts[1]]; s != nil && s.Context == parts[0] {
			return Ref{Step: s, Field: parts[2:]}, nil
		}
	}
	if s := steps[parts[0]]; s != nil {
		return Ref{Step: s, Field: parts[1:]}, nil
	}
	return Ref{}, fmt.Errorf("reference %q names no step", r)
}

func schemaStrings(v jsonv.Value) []string {
	var ss []string
	for _, e := range v.Array() {
		ss = append(ss, e.Str())
	}
	return ss
}
