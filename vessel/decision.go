package vessel

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

// A decision is {"_reasoning", "calls": [ … ]}, each call one of the
// toolset's tools. Its schema says everything the engine checks of a
// decision that a schema can say — a model under constrained decoding
// (vLLM, OpenAI strict mode, llama.cpp grammars) produces any value the
// schema allows, so whatever the engine would refuse must be outside it:
//
//   - _tool is a const per tool;
//   - _instance is an enum of the instances the decision is for (a pattern
//     past MaxEnum of them), required when calls may not be global;
//   - _outputPath, and every parameter written as a "†state" reference,
//     match a state path's pattern — and, when the context's state has a
//     schema, are an enum of the paths that schema allows; a tool whose
//     result may not be an object cannot write over the whole state.
//
// What a schema cannot say — a read of a value nothing writes, calls that
// wait for each other in a cycle, too many delegate calls — CheckDecision
// finds; the runtime sends it back to the model as a repair turn.

// MaxEnum bounds an enum in a schema sent to a model: OpenAI's strict mode
// takes at most 500 values in one enum. Past it, the schema degrades to a
// pattern that names the same values.
const MaxEnum = 500

// Patterns of state paths: "state" or "state.a.b", each part non-empty.
const (
	pathPattern    = `^state(\.[^.]+)*$`
	subPathPattern = `^state(\.[^.]+)+$` // a part of the state, never the whole
	refPattern     = `^†state(\.[^.]+)*$`
)

// DecisionRules are what a decision must keep to beyond its tools' own
// schemas. Its zero value allows global calls only and any state path.
type DecisionRules struct {
	// Instances are the instances calls may target.
	Instances []string `json:"instances,omitempty"`
	// Global allows calls with no _instance.
	Global bool `json:"global,omitempty"`
	// Paths are the state paths the state's schema allows ("state",
	// "state.a", …); nil allows any.
	Paths []string `json:"paths,omitempty"`
	// MaxFanOut bounds its delegate calls; 0 means DefaultMaxFanOut.
	MaxFanOut int `json:"maxFanOut,omitempty"`
}

// Rules are the rules of a decision on the whole request: every instance,
// global calls, the paths of the state's schema.
func (r *Request) Rules() DecisionRules {
	return DecisionRules{Instances: r.Instances, Global: !r.NoGlobal, Paths: StatePaths(r.Context), MaxFanOut: r.FanOut()}
}

// maxPaths bounds the paths read from a state schema, and maxPathDepth
// their depth: a state schema is a description for a model, not a
// database schema.
const (
	maxPaths     = 200
	maxPathDepth = 6
)

// StatePaths lists the state paths the state messages' schemas allow —
// "state" and each declared property at any depth, in order — or nil when
// no state message has a schema (any path).
func StatePaths(msgs []*Message) []string {
	var paths []string
	seen := map[string]bool{}
	var walk func(prefix string, s jsonv.Value, depth int)
	walk = func(prefix string, s jsonv.Value, depth int) {
		if !seen[prefix] && len(paths) < maxPaths {
			seen[prefix] = true
			paths = append(paths, prefix)
		}
		if depth >= maxPathDepth {
			return
		}
		for name, p := range schema.Properties(s).All() {
			if !strings.Contains(name, ".") && name != "" {
				walk(prefix+"."+name, p, depth+1)
			}
		}
	}
	for _, m := range msgs {
		if m.IsState() && m.Schema.Object() != nil {
			walk("state", m.Schema, 0)
		}
	}
	return paths
}

// DecisionSchema is the schema of a decision on the whole request.
func (r *Request) DecisionSchema() jsonv.Value { return r.Toolset.DecisionSchema(r.Rules()) }

// DecisionSchema is the schema the model fills to decide under rules:
// {"_reasoning", "calls": [ … ]}, each call one of the tools.
func (ts *Toolset) DecisionSchema(rules DecisionRules) jsonv.Value {
	items := make([]jsonv.Value, 0, len(ts.Tools))
	for _, t := range ts.Tools {
		items = append(items, callSchema(t, rules))
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

// oneOf is a string schema that admits exactly values: an enum, or past
// MaxEnum a pattern that alternates them.
func oneOf(values []string, description string) jsonv.Value {
	o := jsonv.NewObject(3)
	o.Set("type", jsonv.StringValue("string"))
	if len(values) <= MaxEnum {
		vs := make([]jsonv.Value, len(values))
		for i, v := range values {
			vs[i] = jsonv.StringValue(v)
		}
		o.Set("enum", jsonv.ArrayValue(vs...))
	} else {
		quoted := make([]string, len(values))
		for i, v := range values {
			quoted[i] = regexp.QuoteMeta(v)
		}
		o.Set("pattern", jsonv.StringValue("^("+strings.Join(quoted, "|")+")$"))
	}
	if description != "" {
		o.Set("description", jsonv.StringValue(description))
	}
	return o.Value()
}

func patterned(pattern, description string) jsonv.Value {
	return jsonv.ObjectValue(
		jsonv.Member{Name: "type", Value: jsonv.StringValue("string")},
		jsonv.Member{Name: "pattern", Value: jsonv.StringValue(pattern)},
		jsonv.Member{Name: "description", Value: jsonv.StringValue(description)})
}

// objectResult reports whether a tool's result is always an object, so
// that it may be written over the whole state: an instruction's (its
// parameters), a launch's ({"process", "id"}), a delegate's whose result
// schema says so.
func objectResult(t *Tool) bool {
	switch t.Kind {
	case Instruction, Launch:
		return true
	case DelegateKind:
		return t.Output.IsNull() || t.Output.Lookup("type").Str() == "object"
	}
	return false
}

const (
	instanceHelp   = "The _instance of the input or state this call is for."
	outputPathHelp = `Where in the instance's state to write the result: "state" or "state.a.b"; leave out to keep it only in the call's result.`
	refHelp        = `Or the value at this state path, written "†state.a.b".`
)

// callSchema is one tool as a call item under rules.
func callSchema(t *Tool, rules DecisionRules) jsonv.Value {
	out := jsonv.NewObject(6)
	for _, kw := range []string{"title", "description"} {
		if v, ok := t.Schema.Get(kw); ok {
			out.Set(kw, v)
		}
	}
	out.Set("type", jsonv.StringValue("object"))
	props := jsonv.NewObject(8)
	required := []string{"_tool"}
	props.Set("_tool", jsonv.ObjectValue(jsonv.Member{Name: "const", Value: jsonv.StringValue(t.Name)}))
	switch {
	case len(rules.Instances) > 0:
		help := instanceHelp
		if rules.Global {
			help += " Leave it out for a call for every instance at once."
		} else {
			required = append(required, "_instance")
		}
		props.Set("_instance", oneOf(rules.Instances, help))
	case !rules.Global:
		// No instance to target and no global call: the schema admits no
		// call of this tool (the decision's calls are then []).
		props.Set("_instance", jsonv.ObjectValue(jsonv.Member{Name: "enum", Value: jsonv.ArrayValue()}))
		required = append(required, "_instance")
	}
	var ref jsonv.Value
	own, declared := t.Schema.Lookup("properties").Get(OutputPathParam)
	if rules.Paths != nil {
		var writable, refs []string
		for _, p := range rules.Paths {
			if p != "state" || objectResult(t) {
				writable = append(writable, p)
			}
			refs = append(refs, "†"+p)
		}
		props.Set(OutputPathParam, oneOf(writable, outputPathHelp))
		ref = oneOf(refs, refHelp)
	} else {
		pattern := pathPattern
		if !objectResult(t) {
			pattern = subPathPattern
		}
		props.Set(OutputPathParam, patterned(pattern, outputPathHelp))
		ref = patterned(refPattern, refHelp)
	}
	if declared {
		// The tool's author decided (or narrowed) where its result goes (seed 003: "or fix
		// them hard"): their _outputPath as written, in the place of ours.
		props.Set(OutputPathParam, own)
	}
	for name, p := range schema.Properties(t.Schema).All() {
		switch {
		case name == OutputPathParam:
		case isFixedRef(p):
			// A fixed reference: the model has nothing to decide there.
			props.Set(name, p)
		default:
			props.Set(name, jsonv.ObjectValue(jsonv.Member{Name: "anyOf", Value: jsonv.ArrayValue(p, ref)}))
		}
	}
	out.Set("properties", props.Value())
	for _, name := range append(schema.Required(t.Schema), fixedNames(t)...) {
		if !slices.Contains(required, name) {
			required = append(required, name)
		}
	}
	out.Set("required", schema.StringArray(required))
	return out.Value()
}

// OutputPathParam is the call field that says where its result goes in
// state. A tool's schema may declare it too, to fix it or narrow it: its
// own then replaces the decision's.
const OutputPathParam = "_outputPath"

// isFixedRef reports whether a parameter's schema fixes it to one state
// reference, {"const": "†state.a.b"}: the value is read from state, the
// model decides nothing there.
func isFixedRef(p jsonv.Value) bool {
	c, ok := p.Get("const")
	return ok && IsRef(c)
}

// fixedNames are the tool's parameters fixed by a "const" — references
// and an _outputPath — in its schema's order: the decision requires them,
// and a plan that leaves them out gets them (Toolset.Fix).
func fixedNames(t *Tool) []string {
	var out []string
	for name, p := range schema.Properties(t.Schema).All() {
		if _, ok := p.Get("const"); ok && (name == OutputPathParam || isFixedRef(p)) {
			out = append(out, name)
		}
	}
	return out
}

// Fix gives calls what their tools fix and they leave out: a fixed
// _outputPath, a fixed reference. What a call gives it keeps; a value
// other than the fixed one breaks the tool's schema (Graph.Validate).
func (ts *Toolset) Fix(calls []*Call) {
	for _, c := range calls {
		t := ts.Tool(c.Tool)
		if t == nil {
			continue
		}
		for _, name := range fixedNames(t) {
			fixed := t.Schema.Lookup("properties").Lookup(name).Lookup("const")
			if name == OutputPathParam {
				if path, err := ParsePath(fixed.Str()); err == nil && c.Output == nil {
					c.Output = path
				}
				continue
			}
			if _, ok := c.Params.Get(name); !ok {
				// In the tool's order: after the parameters given that come
				// before it there.
				params := c.Params.Clone().Object()
				at := 0
				for _, before := range schema.Properties(t.Schema).Names() {
					if before == name {
						break
					}
					if i := params.Index(before); i >= at {
						at = i + 1
					}
				}
				params.Insert(at, name, fixed)
				c.Params = params.Value()
			}
		}
	}
}

// ParamsSchema is the schema a call's parameters must fit once their
// references hold values: the tool's, without its _outputPath (a field of
// the call, not a parameter) and with each fixed reference's "const" left
// out (the parameter holds the value read, which the rest of its schema
// still describes).
func (t *Tool) ParamsSchema() jsonv.Value {
	props := schema.Properties(t.Schema)
	if props == nil || (!props.Has(OutputPathParam) && len(fixedNames(t)) == 0) {
		return t.Schema
	}
	s := t.Schema.Clone().Object()
	p := schema.Properties(s.Value())
	p.Delete(OutputPathParam)
	for name, ps := range p.All() {
		if isFixedRef(ps) {
			o := ps.Clone().Object()
			o.Delete("const")
			p.Set(name, o.Value())
		}
	}
	if req, ok := s.Get("required"); ok {
		s.Set("required", schema.StringArray(slices.DeleteFunc(schema.Strings(req), func(n string) bool { return n == OutputPathParam })))
	}
	return s.Value()
}

// CallSchema is the schema of one call of t under rules: an item of the
// decision's "calls" (a loop asks for one call again on it).
func CallSchema(t *Tool, rules DecisionRules) jsonv.Value { return callSchema(t, rules) }

// LoopDone reports whether a call of a looping tool is its loop's last
// attempt: the model marked it done (Tool.Loop's Done, in the call).
func LoopDone(call jsonv.Value, t *Tool) bool {
	if t.Loop == nil {
		return true
	}
	done, err := call.At(t.Loop.Done)
	return err == nil && done.Bool()
}

// ParseDecision reads and checks a decision {"calls": [ … ]} on the whole
// request (Request.Rules).
func (r *Request) ParseDecision(file string, decision jsonv.Value) (*Graph, error) {
	return CheckDecision(file, decision, r.Toolset, r.States, r.Rules())
}

// CheckDecision reads and checks a decision {"calls": [ … ]} under rules:
// its calls wired into a graph (NewGraph) and validated (Graph.Validate),
// each state path one the rules allow, the delegate calls within the
// bound. Every problem is reported, naming the call and its JSON path in
// the decision; file names the decision.
func CheckDecision(file string, decision jsonv.Value, ts *Toolset, states map[string]jsonv.Value, rules DecisionRules) (*Graph, error) {
	calls, err := ParseCalls(file, "/calls", decision.Lookup("calls"))
	if err != nil {
		return nil, err
	}
	ts.Fix(calls)
	g := NewGraph(calls)
	var errs schema.ErrorList
	errs.Append(file, g.Validate(file, ts, states))
	for _, c := range calls {
		if c.Instance != "" && !slices.Contains(rules.Instances, c.Instance) {
			if _, known := states[c.Instance]; known {
				errs.Add(file, c.Path.Append("_instance"), "%s: instance %q is not one this decision is for (%s)", c.Name(), c.Instance, strings.Join(rules.Instances, ", "))
			}
		}
		if c.Instance == "" && !rules.Global && len(rules.Instances) > 0 {
			errs.Add(file, c.Path, "%s: give its _instance: this decision is for instances %s", c.Name(), strings.Join(rules.Instances, ", "))
		}
		if rules.Paths == nil {
			continue
		}
		if c.Output != nil && !slices.Contains(rules.Paths, c.OutputString()) {
			errs.Add(file, c.Path.Append("_outputPath"), "%s writes %s, which the state's schema has no place for (paths: %s)", c.Name(), c.OutputString(), strings.Join(rules.Paths, ", "))
		}
		for _, read := range c.Reads() {
			if p := "state" + pathSuffix(read.Path); !slices.Contains(rules.Paths, p) {
				errs.Add(file, c.Path.Append(read.Param), "%s reads †%s, which the state's schema has no place for", c.Name(), p)
			}
		}
	}
	if n, bound := delegateCalls(ts, calls), orDefault(rules.MaxFanOut, DefaultMaxFanOut); n > bound {
		errs.Add(file, "/calls", "the request makes %d delegate calls; at most %d may run from one request (fan-out bound)", n, bound)
	}
	errs.Sort()
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return g, nil
}

func pathSuffix(parts []string) string {
	if len(parts) == 0 {
		return ""
	}
	return "." + strings.Join(parts, ".")
}

func orDefault(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// Problems turns a decision's errors into problems by JSON path, for a
// repair turn.
func Problems(err error) []schema.Invalid {
	var out []schema.Invalid
	for _, e := range schema.Errors(err, "decision") {
		out = append(out, schema.Invalid{Path: e.Path, Message: e.Message})
	}
	return out
}

// Unanswered lists the instances, in order, that no call targets: a
// follow-up asks for them.
func Unanswered(instances []string, calls []*Call) []string {
	have := make(map[string]bool, len(calls))
	for _, c := range calls {
		have[c.Instance] = true
	}
	var out []string
	for _, id := range instances {
		if !have[id] {
			out = append(out, id)
		}
	}
	return out
}

// FollowUp is the prompt text that asks for the instances a decision left
// without a call. It says that no call is an answer: an instance that
// needs nothing stays untouched (seed 002's employee_A), and a follow-up
// must not push the model to act on it.
func FollowUp(missing []string) string {
	return fmt.Sprintf("Your decision made no call for %d instance(s): %s. If any of them needs something done, decide its calls now, for those instances only. "+
		"An instance that needs nothing gets no call: leave it out, and answer \"calls\": [] if none of them needs anything. "+
		"The calls already decided for the others stand and must not be repeated.",
		len(missing), strings.Join(missing, ", "))
}

// Renumber returns calls numbered from first on, as the calls of a later
// decision (a follow-up, a repair) join a request's.
func Renumber(calls []*Call, first int) []*Call {
	out := make([]*Call, len(calls))
	for i, c := range calls {
		cc := *c
		cc.Index = first + i
		out[i] = &cc
	}
	return out
}

// RepairText is the prompt text that asks for the calls that replace
// failed ones, each failure a line.
func RepairText(failures []string) string {
	return "These calls failed once the state they read held values:\n" + strings.Join(failures, "\n") +
		"\nGive only the calls that replace them, with parameters that fit their tools; the other calls have run (their results are in the context) and must not be repeated."
}
