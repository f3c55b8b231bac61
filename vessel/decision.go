package vessel

import (
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

// refPattern matches a parameter written as a state variable reference.
const refPattern = "^†state(\\.|$)"

// DecisionSchema is the schema the model fills to decide: {"_reasoning",
// "calls": [ … ]}, each call one of the tools — its _tool, the _instance it
// targets, the _outputPath it writes, its parameters (each also allowed as
// a "†state.…" reference).
func (ts *Toolset) DecisionSchema() jsonv.Value {
	items := make([]jsonv.Value, 0, len(ts.Tools))
	for _, t := range ts.Tools {
		items = append(items, callSchema(t))
	}
	return mustParseWith(`{
  "type": "object",
  "properties": {
    "_reasoning": {"type": "string", "description": "Decide what to do: which tools to call, for which instances, in which order, and where their results go in state."},
    "calls": {"type": "array", "description": "The tool calls to make, in order.", "items": {"anyOf": []}}
  },
  "required": ["_reasoning", "calls"]
}`, func(v jsonv.Value) {
		v.Lookup("properties").Lookup("calls").Lookup("items").Object().Set("anyOf", jsonv.ArrayValue(items...))
	})
}

func mustParseWith(s string, edit func(jsonv.Value)) jsonv.Value {
	v := mustParse(s)
	edit(v)
	return v
}

// callSchema is one tool as a call item.
func callSchema(t *Tool) jsonv.Value {
	out := jsonv.NewObject(6)
	for _, kw := range []string{"title", "description"} {
		if v, ok := t.Schema.Get(kw); ok {
			out.Set(kw, v)
		}
	}
	out.Set("type", jsonv.StringValue("object"))
	props := jsonv.NewObject(8)
	props.Set("_tool", jsonv.ObjectValue(jsonv.Member{Name: "const", Value: jsonv.StringValue(t.Name)}))
	props.Set("_instance", mustParse(`{"type": "string", "description": "The _instance of the input or state this call is for; leave out for a global call."}`))
	props.Set("_outputPath", mustParse(`{"type": "string", "description": "Where in the instance's state to write the result: \"state\" or \"state.a.b\"; leave out to keep it only in the call's result."}`))
	ref := jsonv.ObjectValue(jsonv.Member{Name: "type", Value: jsonv.StringValue("string")}, jsonv.Member{Name: "pattern", Value: jsonv.StringValue(refPattern)})
	for name, p := range schema.Properties(t.Schema).All() {
		props.Set(name, jsonv.ObjectValue(jsonv.Member{Name: "anyOf", Value: jsonv.ArrayValue(p, ref)}))
	}
	out.Set("properties", props.Value())
	out.Set("required", schema.StringArray(append([]string{"_tool"}, schema.Required(t.Schema)...)))
	return out.Value()
}

// ParseDecision reads and checks a decision {"calls": [ … ]} of a request
// whose states are states: its calls wired into a graph (NewGraph) and
// validated (Graph.Validate) before anything runs. file names the decision
// in errors.
func ParseDecision(file string, decision jsonv.Value, ts *Toolset, states map[string]jsonv.Value) (*Graph, error) {
	calls, err := ParseCalls(file, "/calls", decision.Lookup("calls"))
	if err != nil {
		return nil, err
	}
	g := NewGraph(calls)
	if err := g.Validate(file, ts, states); err != nil {
		return nil, err
	}
	return g, nil
}
