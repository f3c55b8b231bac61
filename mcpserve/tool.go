package mcpserve

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/compose"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

// actionSteps are a process's steps that run server actions: its SERVER
// steps, blocking, and its fire-and-forget ones.
func actionSteps(p *compile.Process) []*compile.Step {
	var out []*compile.Step
	for _, s := range p.Steps() {
		if s.Kind == compile.Server || s.FireAndForget {
			out = append(out, s)
		}
	}
	return out
}

// actionName is the name a step's action is registered under, as the
// worker resolves it (action.Registry.Resolve).
func actionName(s *compile.Step) string {
	if s.Action != "" {
		return s.Action
	}
	return s.Name
}

// unregistered lists the actions of p's steps that acts does not hold,
// each once, in order; nil when acts is nil (the worker is elsewhere: a
// running vibe serve's).
func unregistered(p *compile.Process, acts *action.Registry) []string {
	if acts == nil {
		return nil
	}
	var missing []string
	for _, s := range actionSteps(p) {
		if _, ok := acts.Resolve(actionName(s)); !ok && !slices.Contains(missing, actionName(s)) {
			missing = append(missing, actionName(s))
		}
	}
	return missing
}

// annotations are the hints of a process's tool, from what its steps do.
// A process of model and person steps only changes nothing outside
// itself: neither destructive nor open-world. One with server actions
// reaches outside (open-world), and is destructive unless every one of
// its actions says it only reads (action.Action.ReadOnly) — an action
// the server does not know (acts nil) is taken to have effects. No
// process's tool is read-only or idempotent: a call starts a new process,
// kept durably.
func annotations(title string, p *compile.Process, acts *action.Registry) *mcp.ToolAnnotations {
	steps := actionSteps(p)
	destructive := false
	for _, s := range steps {
		act, ok := acts.Resolve(actionName(s))
		if !ok || !act.ReadOnly {
			destructive = true
		}
	}
	openWorld := len(steps) > 0
	return &mcp.ToolAnnotations{Title: title, DestructiveHint: &destructive, OpenWorldHint: &openWorld}
}

// inputSchema is the schema of a process's input (the tool's "input"):
// the input schema of the action that is given the process's input — a
// SERVER step that references nothing gets it (compile.Step.InputSchema)
// — when the action declares one (an MCP tool's); several such actions
// make an allOf of theirs. ok is false when none says: the input is then
// any object.
func inputSchema(ctx context.Context, p *compile.Process, acts *action.Registry, logger *slog.Logger) (in jsonv.Value, ok bool) {
	var all []jsonv.Value
	for _, s := range actionSteps(p) {
		if s.Kind != compile.Server || len(s.References) > 0 || !s.Inputs.IsNull() {
			continue
		}
		act, found := acts.Resolve(actionName(s))
		if !found || act.InputSchema == nil {
			continue
		}
		want, err := act.InputSchema(ctx)
		if err != nil {
			logger.Warn("mcp: the input schema of an action is unknown; the tool's input is any object", "action", act.Name, "err", err)
			return jsonv.Value{}, false
		}
		all = append(all, want)
	}
	switch len(all) {
	case 0:
		return jsonv.Value{}, false
	case 1:
		return all[0], true
	}
	return jsonv.ObjectValue(
		jsonv.Member{Name: "type", Value: jsonv.StringValue("object")},
		jsonv.Member{Name: "allOf", Value: jsonv.ArrayValue(all...)}), true
}

// startSchema is the input schema of a process's tool: what starting the
// process needs. The prompt is optional when the process has its own; the
// input is required when its schema requires members.
func startSchema(hasPrompt bool, in jsonv.Value, typed bool) jsonv.Value {
	s := mustParse(`{"type": "object", "properties": {
		"prompt": {"type": "string", "description": "The person's request: what the process is to do."},
		"input": {"type": "object", "description": "Data the process starts with; it is kept in the process's state under \"input\"."}},
		"required": ["prompt"], "additionalProperties": false}`)
	var required []string
	if !hasPrompt {
		required = append(required, "prompt")
	}
	if typed {
		typedIn := in.Clone()
		if o := typedIn.Object(); o != nil && !o.Has("description") {
			o.Set("description", jsonv.StringValue("Data the process starts with, which its actions are given; it is kept in the process's state under \"input\"."))
		}
		schema.Properties(s).Set("input", typedIn)
		if len(schema.Required(in)) > 0 || typedIn.Lookup("allOf").Len() > 0 {
			required = append(required, "input")
		}
	}
	if len(required) > 0 {
		s.Object().Set("required", schema.StringArray(required))
	} else {
		s.Object().Delete("required")
	}
	return s
}

// outputSchema is the schema of a process tool's structured result:
// {"id", "process", "status"} always, and "output" (the process's state:
// each step's result under its context, as the steps' schemas say, and
// the input) once it completed; "error" when it failed; "waiting" and
// "message" when it waits for a person.
func outputSchema(p *compile.Process) jsonv.Value {
	state := jsonv.NewObject(4)
	state.Set("type", jsonv.StringValue("object"))
	props := jsonv.NewObject(len(p.Chunks) + 1)
	props.Set("input", mustParse(`{"type": "object", "description": "The data the process started with."}`))
	for _, s := range p.Steps() {
		if s.Fills != nil {
			continue // kept as its blocking step's "input"
		}
		at := props
		if s.Context != "" {
			c, ok := props.Get(s.Context)
			if !ok {
				c = jsonv.ObjectValue(
					jsonv.Member{Name: "type", Value: jsonv.StringValue("object")},
					jsonv.Member{Name: "properties", Value: jsonv.NewObject(2).Value()})
				props.Set(s.Context, c)
			}
			at = schema.Properties(c)
		}
		at.Set(s.Name, stepStateSchema(s))
	}
	state.Set("properties", props.Value())
	state.Set("description", jsonv.StringValue("The process's state: every step's result."))

	out := mustParse(`{"type": "object", "properties": {
		"id": {"type": "string", "description": "The process's id."},
		"process": {"type": "string"},
		"status": {"type": "string", "enum": ["running", "waiting", "completed", "failed"]},
		"error": {"type": "string", "description": "Why the process failed."},
		"waiting": {"type": "object", "description": "What the process waits for: a person's answer to a chunk.", "properties": {
			"chunk": {"type": "string"}, "schema": {"type": "object"}, "context": {"type": "object"}}},
		"message": {"type": "string"},
		"usage": {"type": "object", "description": "The tokens the process's model calls used."},
		"replayed": {"type": "boolean", "description": "The model's answers came from a recording."}},
		"required": ["id", "process", "status"]}`)
	schema.Properties(out).Insert(3, "output", state.Value())
	return out
}

// stepStateSchema is a step's result as process state keeps it: its
// value, without engine keywords, thinking fields or metrics; for a
// blocking step with inputs, {"input", "output"}.
func stepStateSchema(s *compile.Step) jsonv.Value {
	value := func(v jsonv.Value) jsonv.Value {
		if v.IsNull() || v.Object() == nil {
			return jsonv.NewObject(0).Value() // any value
		}
		return compose.OutputSchema(compile.Project(v, compile.ProjectOptions{}).Schema)
	}
	if s.Inputs.IsNull() {
		return value(s.Schema)
	}
	output, _ := schema.Properties(s.Schema).Get("output")
	return jsonv.ObjectValue(
		jsonv.Member{Name: "type", Value: jsonv.StringValue("object")},
		jsonv.Member{Name: "properties", Value: jsonv.ObjectValue(
			jsonv.Member{Name: "input", Value: value(s.Inputs)},
			jsonv.Member{Name: "output", Value: value(output)})})
}

// unavailable is why a process is not offered: the actions it runs that
// the worker has not registered.
func unavailable(uri string, missing []string) error {
	return fmt.Errorf("%s: its actions %s are not registered on the worker (register them, or give --actions-file)", uri, strings.Join(missing, ", "))
}
