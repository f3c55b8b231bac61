package compile

import (
	"regexp"
	"slices"
	"strings"

	"github.com/augceo/vibe/compose"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

// contextName matches the names of contexts: llmContext1, serverContext2,
// userContext, LLM_Context, …
var contextName = regexp.MustCompile(`(?i)^(llm|server|user)_?context`)

// ContextKind returns the kind of a top-level property name that names a
// context, and ok == false for a plain step.
func ContextKind(name string) (k Kind, ok bool) {
	m := contextName.FindStringSubmatch(name)
	if m == nil {
		return "", false
	}
	switch strings.ToLower(m[1]) {
	case "llm":
		return LLM, true
	case "server":
		return Server, true
	}
	return User, true
}

// MatchAction returns the action of actions that step name runs: the one
// of the same name, or for a pipeline step "step<N>_<snake>" the one whose
// compose.SnakeName is <snake>.
func MatchAction(step string, actions []string) (string, bool) {
	if slices.Contains(actions, step) {
		return step, true
	}
	rest, ok := cutStepPrefix(step)
	if !ok {
		return "", false
	}
	for _, a := range actions {
		if compose.SnakeName(a) == rest {
			return a, true
		}
	}
	return "", false
}

// cutStepPrefix removes "step<N>_" from a pipeline step name.
func cutStepPrefix(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, "step")
	if !ok {
		return "", false
	}
	i := 0
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	if i == 0 || i >= len(rest) || rest[i] != '_' {
		return "", false
	}
	return rest[i+1:], true
}

// collectSteps reads the contexts and steps, and classifies each step.
func (c *compiler) collectSteps() {
	c.byName, c.context = make(map[string][]*Step), make(map[string]bool)
	props := schema.Properties(c.doc)
	if props.Len() == 0 {
		c.errorf("", "a process needs properties: its contexts (llmContext1, serverContext1, userContext, …) or its steps")
		return
	}
	for _, m := range props.Members() {
		at := jsonv.PointerTo("properties", m.Name)
		if kind, ok := ContextKind(m.Name); ok {
			if !c.readable("context", m.Name, "/properties") {
				continue
			}
			steps := schema.Properties(m.Value)
			if m.Value.Object() == nil || steps.Len() == 0 {
				c.errorf(at, "context %q has no steps: a context is an object schema whose properties are its steps", m.Name)
				continue
			}
			c.context[m.Name] = true
			g := group{context: m.Name, kind: kind, schema: m.Value}
			for _, s := range steps.Members() {
				sat := at.Append("properties").Append(s.Name)
				if !c.readable("step", s.Name, at.Append("properties")) {
					continue
				}
				if thought(s.Name) {
					g.members = append(g.members, Member{Name: s.Name, Schema: s.Value})
					continue
				}
				if !c.room() {
					continue
				}
				if st := c.step(s.Name, m.Name, kind, s.Value, sat); st != nil {
					g.members = append(g.members, Member{Name: s.Name, Schema: s.Value, Step: st})
				}
			}
			if !slices.ContainsFunc(g.members, func(x Member) bool { return x.Step != nil }) && len(g.members) > 0 {
				c.errorf(at, "context %q has no steps, only thinking fields (%s)", m.Name, memberNames(g.members))
				continue
			}
			c.groups = append(c.groups, g)
			continue
		}
		if !c.readable("step", m.Name, "/properties") {
			continue
		}
		if thought(m.Name) {
			// The process's own thinking field: it joins the chunk around it.
			c.groups = append(c.groups, group{members: []Member{{Name: m.Name, Schema: m.Value}}})
			continue
		}
		if !c.room() {
			continue
		}
		if st := c.step(m.Name, "", "", m.Value, at); st != nil {
			c.groups = append(c.groups, group{members: []Member{{Name: m.Name, Schema: m.Value, Step: st}}})
		}
	}
	if c.counted > c.opts.maxSteps() {
		c.over = true
		c.errorf("/properties", "the process is too large: it has %d steps, over the limit of %d for one process", c.counted, c.opts.maxSteps())
	}
}

// readable reports whether a context or step name reads as it is written
// (schema.CheckName) and is not empty, and reports it when not: an
// unreadable name at the properties holding it — the path stops above the
// name, so that an error line never prints it raw — and an empty one at
// its own path (".../properties/").
func (c *compiler) readable(what, name string, props jsonv.Pointer) bool {
	if name == "" {
		// Nothing to print raw: the path names the member.
		c.errorf(props.Append(""), "a %s's name is empty: a %s needs a name, which its results and references go by", what, what)
		return false
	}
	if err := schema.CheckName(name); err != nil {
		c.errorf(props, "%s name %q %v: a %s's name must read as it is written", what, name, err, what)
		return false
	}
	return true
}

// room reports whether one more step is within the bound; past it, steps
// are counted but not classified, so that a huge process costs little
// before it is refused.
func (c *compiler) room() bool {
	if c.counted++; c.counted > c.opts.maxSteps() {
		return false
	}
	return c.alive()
}

// step classifies one step (SPEC §5, in order).
func (c *compiler) step(name, ctx string, ctxKind Kind, s jsonv.Value, at jsonv.Pointer) *Step {
	if s.Object() == nil {
		c.errorf(at, "step %q must be an object schema, not %s", name, show(s))
		return nil
	}
	st := &Step{Name: name, Context: ctx, Schema: s, Path: at, index: len(c.steps)}
	output, hasOutput := schema.Properties(s).Get("output")
	switch {
	case hasOutput || strings.HasSuffix(name, "_Activity"):
		st.Kind = Server
		if hasOutput && !nullable(output) {
			c.errorf(at.Append("properties").Append("output"), "blocking step %q: its output must be nullable, since a model filling the pipeline sets it to null (write \"type\": [\"object\", \"null\"])", name)
		}
		if hasOutput {
			st.Inputs = inputsOf(s)
		}
		st.WithReferences = s.Lookup("withReferences").Bool()
	case strings.HasSuffix(name, "_User") || ctxKind == User:
		st.Kind = User
	case ctxKind == Server:
		st.Kind = Server
	default:
		st.Kind = LLM
		if a, ok := MatchAction(name, c.opts.Actions); ok {
			st.FireAndForget, st.Action = true, a
		}
	}
	if st.Kind == Server && c.opts.Actions != nil {
		if a, ok := MatchAction(name, c.opts.Actions); ok {
			st.Action = a
		} else {
			c.errorf(at, "blocking step %q runs on the server, but no registered action matches it (registered: %s)", name, listOrNone(c.opts.Actions))
		}
	}
	c.steps = append(c.steps, st)
	c.byName[name] = append(c.byName[name], st)
	return st
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// nullable reports whether a schema admits null.
func nullable(s jsonv.Value) bool {
	switch s.Kind() {
	case jsonv.KindBool:
		return s.Bool()
	case jsonv.KindObject:
	default:
		return false
	}
	if t, ok := s.Get("type"); ok {
		switch t.Kind() {
		case jsonv.KindString:
			return t.Str() == "null"
		case jsonv.KindArray:
			return slices.Contains(schema.Strings(t), "null")
		}
		return false
	}
	if e, ok := s.Get("enum"); ok {
		return slices.ContainsFunc(e.Array(), jsonv.Value.IsNull)
	}
	if k, ok := s.Get("const"); ok {
		return k.IsNull()
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		if alts, ok := s.Get(kw); ok {
			return slices.ContainsFunc(alts.Array(), nullable)
		}
	}
	return true // unconstrained
}

// thought reports whether a context's or process's member is a thinking
// field or a metric rather than a step (SPEC §2: "_" and "$" at any level).
func thought(name string) bool { return schema.IsThinking(name) || schema.IsMetric(name) }

func memberNames(ms []Member) string {
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = m.Name
	}
	return strings.Join(names, ", ")
}

// inputsOf is a blocking step's input schema: its properties other than
// "output", with their required names; null when it has none.
func inputsOf(s jsonv.Value) jsonv.Value {
	props := jsonv.NewObject(0)
	for name, p := range schema.Properties(s).All() {
		if name != "output" {
			props.Set(name, p)
		}
	}
	if props.Len() == 0 {
		return jsonv.NullValue()
	}
	var req []string
	for _, r := range schema.Required(s) {
		if r != "output" {
			req = append(req, r)
		}
	}
	return jsonv.ObjectValue(
		jsonv.Member{Name: "type", Value: jsonv.StringValue("object")},
		jsonv.Member{Name: "properties", Value: props.Value()},
		jsonv.Member{Name: "required", Value: schema.StringArray(req)})
}
