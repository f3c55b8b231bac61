package vessel

import (
	"fmt"
	"strings"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/schema"
)

// Call is one tool call of a decision or a plan.
type Call struct {
	// Index is the call's position in its decision or plan.
	Index int    `json:"index"`
	Tool  string `json:"tool"`
	// Instance is the instance the call is for; "" for a global call.
	Instance string `json:"instance,omitempty"`
	// Output is where the result goes in state (nil: nowhere).
	Output []string `json:"output"` // no omitempty: [] (the whole state) is not nil
	// Params are the call's parameters, without the call's own fields.
	Params jsonv.Value `json:"params"`
	// Path is where the call is in its file.
	Path jsonv.Pointer `json:"path"`
	// If is a plan call's condition ("_if"): nil, the call always runs.
	If *Condition `json:"if,omitempty"`
}

// Condition is a plan call's "_if": the call runs only when the state
// variable State holds a value (not null) and, when given, the value
// equals Equals or matches the schema Matches. A call whose condition does
// not hold is skipped, not failed. Written
//
//	"_if": {"state": "†state.review.verdict", "equals": "approve"}
//	"_if": {"state": "†state.review.verdict", "matches": {"not": {"const": "approve"}}}
//	"_if": {"state": "†state.report"}
//
// so that two calls with opposite conditions are an if-else.
type Condition struct {
	State   []string     `json:"state"`
	Equals  *jsonv.Value `json:"equals,omitempty"`
	Matches jsonv.Value  `json:"matches,omitzero"`
}

// String is the condition as the dry run and the picture show it:
// "state.a = \"x\"", "state.a matches {…}", "state.a is set".
func (c *Condition) String() string {
	v := strings.Join(append([]string{"state"}, c.State...), ".")
	switch {
	case c.Equals != nil:
		return v + " = " + string(jsonv.Marshal(*c.Equals))
	case !c.Matches.IsNull():
		return v + " matches " + string(jsonv.Marshal(c.Matches))
	}
	return v + " is set"
}

// parseCondition reads "_if" at p.
func parseCondition(file string, p jsonv.Pointer, v jsonv.Value, errs *schema.ErrorList) *Condition {
	if v.Object() == nil {
		errs.Add(file, p, "_if is an object {\"state\": \"†state.a\", \"equals\": V} or {\"state\": …, \"matches\": SCHEMA}, not %s", v.Kind())
		return nil
	}
	c := &Condition{}
	ok := true
	for name, val := range v.Members() {
		switch name {
		case "state":
			path, err := ParsePath(val.Str())
			if err != nil || val.Kind() != jsonv.KindString {
				errs.Add(file, p.Append(name), "_if reads a state variable: \"†state.a.b\", not %s", jsonv.Marshal(val))
				ok = false
				continue
			}
			c.State = path
		case "equals":
			if val.IsNull() {
				// It could never hold, and null would not survive the trip
				// through Temporal's payloads as a *jsonv.Value.
				errs.Add(file, p.Append(name), "_if equals null never holds: a variable that holds null holds no value")
				ok = false
				continue
			}
			c.Equals = &val
		case "matches":
			if val.Kind() != jsonv.KindObject && val.Kind() != jsonv.KindBool {
				errs.Add(file, p.Append(name), "_if matches a schema (an object or a boolean), not %s", val.Kind())
				ok = false
				continue
			}
			if _, err := schema.Cached(val); err != nil {
				errs.Add(file, p.Append(name), "_if matches no valid schema: %v", err)
				ok = false
				continue
			}
			c.Matches = val
		default:
			errs.Add(file, p.Append(name), "_if has no member %q: it takes \"state\", and \"equals\" or \"matches\"", name)
			ok = false
		}
	}
	if c.State == nil && ok {
		errs.Add(file, p, "_if needs \"state\": the state variable the call depends on (\"†state.a.b\")")
		ok = false
	}
	if c.Equals != nil && !c.Matches.IsNull() {
		errs.Add(file, p, "_if takes \"equals\" or \"matches\", not both")
		ok = false
	}
	if !ok {
		return nil
	}
	return c
}

// StateReads are the state paths the call reads: its parameters' (Reads),
// then its condition's, under the parameter name "_if".
func (c *Call) StateReads() []Read {
	reads := c.Reads()
	if c.If != nil {
		reads = append(reads, Read{Param: "_if", Path: c.If.State})
	}
	return reads
}

// Name is how errors name a call: "call 3 (sendReport)".
func (c *Call) Name() string {
	s := fmt.Sprintf("call %d (%s", c.Index+1, c.Tool)
	if c.Instance != "" {
		s += ", instance " + c.Instance
	}
	return s + ")"
}

// OutputString is the call's output path as written.
func (c *Call) OutputString() string {
	if c.Output == nil {
		return ""
	}
	return strings.Join(append([]string{"state"}, c.Output...), ".")
}

// Read is a parameter that reads state: "†state.a.b".
type Read struct {
	Param string   // the parameter's name
	Path  []string // the state path it reads: ["a", "b"]
}

// Reads are the state paths the call's parameters read, in the
// parameters' order.
func (c *Call) Reads() []Read {
	var out []Read
	for name, v := range c.Params.Members() {
		if IsRef(v) {
			if p, err := ParsePath(v.Str()); err == nil {
				out = append(out, Read{Param: name, Path: p})
			}
		}
	}
	return out
}

// ParseCalls reads the calls of a decision or a plan.
func ParseCalls(file string, at jsonv.Pointer, v jsonv.Value) ([]*Call, error) {
	var errs schema.ErrorList
	var calls []*Call
	for i, raw := range v.Array() {
		p := at.AppendIndex(i)
		if raw.Object() == nil {
			errs.Add(file, p, "a call is an object with \"_tool\", not %s", raw.Kind())
			continue
		}
		c := &Call{Index: i, Path: p}
		params := jsonv.NewObject(raw.Len())
		for name, val := range raw.Members() {
			switch name {
			case "_tool":
				c.Tool = val.Str()
			case "_if":
				c.If = parseCondition(file, p.Append(name), val, &errs)
			case "_instance":
				if val.Kind() != jsonv.KindString {
					errs.Add(file, p.Append(name), "_instance must be a string")
				}
				c.Instance = val.Str()
			case "_outputPath":
				path, err := ParsePath(val.Str())
				if err != nil {
					errs.Add(file, p.Append(name), "%v", err)
					continue
				}
				c.Output = path
			case "output":
				// "output": "†state…" is the seed's other way to write an
				// output path.
				if val.Kind() == jsonv.KindString && strings.HasPrefix(val.Str(), "†") {
					path, err := ParsePath(val.Str())
					if err != nil {
						errs.Add(file, p.Append(name), "%v", err)
						continue
					}
					c.Output = path
					continue
				}
				params.Set(name, val)
			default:
				params.Set(name, val)
			}
		}
		if c.Tool == "" {
			errs.Add(file, p, "a call needs \"_tool\": the name of the tool to call")
			continue
		}
		c.Params = params.Value()
		calls = append(calls, c)
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return calls, nil
}

// CallResult is what one call did.
type CallResult struct {
	Index    int         `json:"index"`
	Tool     string      `json:"tool"`
	Instance string      `json:"instance,omitempty"`
	Params   jsonv.Value `json:"params"` // with the state references resolved
	Output   string      `json:"output,omitempty"`
	Result   jsonv.Value `json:"result"`
	Error    string      `json:"error,omitempty"`
	// Skipped says why a plan's call did not run: its condition did not
	// hold, or a variable it reads is unset because the calls that write it
	// were skipped. A skipped call has not failed.
	Skipped string `json:"skipped,omitempty"`
	// Run is the workflow id of a delegate call's sub-request, or of a
	// launched process.
	Run string `json:"run,omitempty"`
	// Usage is what a delegate call's sub-request (and its own delegates)
	// spent.
	Usage llm.Usage `json:"usage,omitzero"`
}

// Summary is what the call did, in order: tool, instance, params, output
// path, then result, error or why it was skipped. It leaves out Run, which names a workflow and
// differs from run to run.
func (c CallResult) Summary() jsonv.Value {
	o := jsonv.NewObject(6)
	o.Set("tool", jsonv.StringValue(c.Tool))
	if c.Instance != "" {
		o.Set("instance", jsonv.StringValue(c.Instance))
	}
	o.Set("params", c.Params)
	if c.Output != "" {
		o.Set("output", jsonv.StringValue(c.Output))
	}
	switch {
	case c.Error != "":
		o.Set("error", jsonv.StringValue(c.Error))
	case c.Skipped != "":
		o.Set("skipped", jsonv.StringValue(c.Skipped))
	default:
		o.Set("result", c.Result)
	}
	return o.Value()
}

// ResultsMessage is a data message of kind "results": what a request's
// calls gave, for the model that fills the request's output.
func ResultsMessage(calls []CallResult) jsonv.Value {
	items := make([]jsonv.Value, len(calls))
	for i, c := range calls {
		items[i] = c.Summary()
	}
	return jsonv.ObjectValue(
		jsonv.Member{Name: "type", Value: jsonv.StringValue(DataMessage)},
		jsonv.Member{Name: "kind", Value: jsonv.StringValue("results")},
		jsonv.Member{Name: "data", Value: jsonv.ArrayValue(items...)})
}

// Result is what a request did.
type Result struct {
	// Decision is the model's decision (or the plan's calls); FollowUps
	// are the decisions that asked again for instances it left without a
	// call, and Repairs those that replaced calls whose parameters broke
	// their tool once their references held values.
	Decision  jsonv.Value   `json:"decision"`
	FollowUps []jsonv.Value `json:"followUps,omitempty"`
	Repairs   []jsonv.Value `json:"repairs,omitempty"`
	// Replaced are the calls that failed and were replaced by a repair's.
	Replaced []CallResult `json:"replaced,omitempty"`
	// Unanswered lists the instances still without a call.
	Unanswered []string `json:"unanswered,omitempty"`
	// Parts are the workflow ids of the requests a request with more
	// instances than one decision covers was split into, in order; their
	// results together are the request's (MergeResults).
	Parts []string `json:"parts,omitempty"`
	// Output is the request's result when it has an Output schema.
	Output jsonv.Value  `json:"output,omitzero"`
	Calls  []CallResult `json:"calls"`
	// States holds each instance's final state; "" is the global one.
	States map[string]jsonv.Value `json:"states"`
	// Usage totals the request's model calls, its delegates' included.
	Usage llm.Usage `json:"usage"`
	// Replayed is true when the decision came from a recording.
	Replayed bool `json:"replayed,omitempty"`
}

// MergeResults joins the results of a request's parts (Result.Parts) into
// one: the decisions' calls in order, each numbered after the calls of the
// parts before it, each instance's state, the usage summed. No two parts
// write one state — each instance is in one part (Request.Split), and only
// the first part may make calls without an instance — so an instance's
// state is its part's, and the global state the first part's.
func MergeResults(parts []*Result) *Result {
	out := &Result{States: map[string]jsonv.Value{}}
	var calls []jsonv.Value
	var reasons []string
	base := 0 // the calls the parts before ran, replaced ones included
	for _, p := range parts {
		if r := p.Decision.Lookup("_reasoning").Str(); r != "" {
			reasons = append(reasons, r)
		}
		calls = append(calls, p.Decision.Lookup("calls").Array()...)
		for _, c := range p.Calls {
			c.Index += base
			out.Calls = append(out.Calls, c)
		}
		for _, c := range p.Replaced {
			c.Index += base
			out.Replaced = append(out.Replaced, c)
		}
		base += len(p.Calls) + len(p.Replaced)
		for k, s := range p.States {
			if _, seen := out.States[k]; !seen || k != "" {
				out.States[k] = s
			}
		}
		out.FollowUps = append(out.FollowUps, p.FollowUps...)
		out.Repairs = append(out.Repairs, p.Repairs...)
		out.Unanswered = append(out.Unanswered, p.Unanswered...)
		out.Usage = out.Usage.Add(p.Usage)
		out.Replayed = out.Replayed || p.Replayed
	}
	out.Decision = jsonv.ObjectValue(
		jsonv.Member{Name: "_reasoning", Value: jsonv.StringValue(strings.Join(reasons, "\n\n"))},
		jsonv.Member{Name: "calls", Value: jsonv.ArrayValue(calls...)})
	return out
}
