package vessel

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

// The message types of a request's context (SPEC §1).
const (
	SystemMessage = "system"
	InputMessage  = "input"
	StateMessage  = "state"
	DataMessage   = "data"
	PlanMessage   = "plan"
)

// Message is one message of a request's context.
type Message struct {
	Type string
	// Instance is the message's _instance; "" for a global message.
	Instance string
	// Kind is a data message's kind; "state" for a state message.
	Kind string
	// Data is what the message carries: an input's "input" member (or its
	// other members), a state's or data message's "data" member (or its
	// other members), a system message's text, a plan's calls.
	Data jsonv.Value
	// Schema is the optional schema the message carries.
	Schema jsonv.Value
	// Raw is the message as given.
	Raw jsonv.Value
	// Path is where the message is in its file.
	Path jsonv.Pointer
}

// IsState reports whether m is a state message: type state, or a data
// message of kind state.
func (m *Message) IsState() bool {
	return m.Type == StateMessage || (m.Type == DataMessage && m.Kind == StateMessage)
}

// ParseContext reads a request's context: an array of messages. Every
// problem is reported with the file and JSON path.
func ParseContext(file string, at jsonv.Pointer, v jsonv.Value) ([]*Message, error) {
	var errs schema.ErrorList
	if v.Kind() != jsonv.KindArray {
		errs.Add(file, at, "a context is an array of messages, not %s", v.Kind())
		return nil, errs
	}
	var msgs []*Message
	for i, raw := range v.Array() {
		if m := parseMessage(file, at.AppendIndex(i), raw, &errs); m != nil {
			msgs = append(msgs, m)
		}
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return msgs, nil
}

// parseMessage reads one message at p; a message with a problem is
// reported in errs and gives nil.
func parseMessage(file string, p jsonv.Pointer, raw jsonv.Value, errs *schema.ErrorList) *Message {
	if raw.Object() == nil {
		errs.Add(file, p, "a message is an object with a \"type\", not %s", raw.Kind())
		return nil
	}
	m := &Message{Type: raw.Lookup("type").Str(), Kind: raw.Lookup("kind").Str(), Raw: raw, Path: p, Schema: raw.Lookup("schema")}
	if inst, ok := raw.Get("_instance"); ok {
		if inst.Kind() != jsonv.KindString || inst.Str() == "" {
			errs.Add(file, p.Append("_instance"), "_instance must be a non-empty string")
			return nil
		}
		m.Instance = inst.Str()
	}
	switch m.Type {
	case SystemMessage:
		msg, ok := raw.Get("message")
		if !ok || msg.Kind() != jsonv.KindString {
			errs.Add(file, p, "a system message needs a \"message\" string")
			return nil
		}
		m.Data = msg
	case InputMessage:
		m.Data = payload(raw, "input")
	case StateMessage, DataMessage:
		m.Data = payload(raw, "data")
	case PlanMessage:
		calls, ok := raw.Get("calls")
		if !ok || calls.Kind() != jsonv.KindArray {
			errs.Add(file, p, "a plan message needs \"calls\": an array of calls")
			return nil
		}
		if m.Instance != "" {
			errs.Add(file, p.Append("_instance"), "a plan is never instanced: one plan serves every instance")
			return nil
		}
		m.Data = calls
	default:
		errs.Add(file, p.Append("type"), "unknown message type %q (want system, input, state, data or plan)", m.Type)
		return nil
	}
	return m
}

// messageJSON is how a message travels in a workflow's input: as given,
// with its place; the rest is derived again when it is read.
type messageJSON struct {
	Path    jsonv.Pointer `json:"path"`
	Message jsonv.Value   `json:"message"`
}

// MarshalJSON writes the message as given, with its path.
func (m *Message) MarshalJSON() ([]byte, error) {
	return json.Marshal(messageJSON{Path: m.Path, Message: m.Raw})
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (m *Message) UnmarshalJSON(b []byte) error {
	var j messageJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	var errs schema.ErrorList
	got := parseMessage("message", j.Path, j.Message, &errs)
	if got == nil {
		return errs.Err()
	}
	*m = *got
	return nil
}

// payload is a message's data: its named member, or else its members other
// than the message's own keys.
func payload(raw jsonv.Value, member string) jsonv.Value {
	if v, ok := raw.Get(member); ok {
		return v
	}
	out := jsonv.NewObject(raw.Len())
	for name, v := range raw.Members() {
		switch name {
		case "type", "kind", "_instance", "schema":
		default:
			out.Set(name, v)
		}
	}
	return out.Value()
}

// Instances lists the instance ids the messages name, in order of first
// appearance.
func Instances(msgs []*Message) []string {
	var ids []string
	for _, m := range msgs {
		if m.Instance != "" && !slices.Contains(ids, m.Instance) {
			ids = append(ids, m.Instance)
		}
	}
	return ids
}

// InitialStates folds each instance's state messages, in order, into its
// state; "" is the global state.
func InitialStates(msgs []*Message) (map[string]jsonv.Value, error) {
	states := map[string]jsonv.Value{"": jsonv.NewObject(0).Value()}
	for _, id := range Instances(msgs) {
		states[id] = jsonv.NewObject(0).Value()
	}
	for _, m := range msgs {
		if !m.IsState() {
			continue
		}
		if m.Data.Object() == nil {
			return nil, fmt.Errorf("%s: a state must be an object, not %s", m.Path, m.Data.Kind())
		}
		next, err := MergePatch(states[m.Instance], m.Data)
		if err != nil {
			return nil, err
		}
		states[m.Instance] = next
	}
	return states, nil
}

// InputFor is the input an instance sees: the global inputs, then its own,
// which override them (objects merge; anything else replaces).
func InputFor(msgs []*Message, instance string) jsonv.Value {
	var in jsonv.Value
	apply := func(m *Message) {
		if in.Object() != nil && m.Data.Object() != nil {
			if merged, err := MergePatch(in, m.Data); err == nil {
				in = merged
				return
			}
		}
		in = m.Data
	}
	for _, m := range msgs {
		if m.Type == InputMessage && m.Instance == "" {
			apply(m)
		}
	}
	if instance != "" {
		for _, m := range msgs {
			if m.Type == InputMessage && m.Instance == instance {
				apply(m)
			}
		}
	}
	return in
}

// Guidance is the part of a Vessel's system text that explains calls.
const Guidance = `Answer with your decision: {"_reasoning", "calls": [...]}. Each call names its tool in "_tool" and fills the tool's parameters. When the context holds messages with "_instance" ids, give each call the "_instance" it is for; a message without one applies to every instance. An instance that needs nothing gets no call: it stays as it is. To keep a call's result, set "_outputPath" to where it goes in that instance's state ("state" or "state.a.b"). A parameter written "†state.a.b" takes that value from the call's instance's state when the call runs.`

// ResultGuidance is the part of the system text that asks a request
// without tools — a delegate's sub-request that only fills its _output —
// for its result: it has no calls to make nor results of calls to read.
const ResultGuidance = `Answer with the result of the task the context gives you: one JSON value that fills the given schema (your "_output"), its properties in order.`

// OutputGuidance is the part of the system text that asks a request with
// tools for its result once its calls are done: a delegate's sub-request
// fills its _output with what its calls gave in view, and makes no
// decision there.
const OutputGuidance = ResultGuidance + ` Make no tool calls here: when a "results" message is in the context, it holds what your calls gave.`

// Prompt renders a request for the model: the person's request, then
// every context message but the system ones, one per line, as given.
func Prompt(msgs []*Message, prompt string) string {
	var b strings.Builder
	if p := strings.TrimSpace(prompt); p != "" {
		b.WriteString(p)
		b.WriteString("\n\n")
	}
	b.WriteString("--- Context ---\n")
	for _, m := range msgs {
		if m.Type == SystemMessage {
			continue
		}
		b.Write(jsonv.Marshal(m.Raw))
		b.WriteByte('\n')
	}
	b.WriteString("--- End of context ---")
	return b.String()
}

// System is the system text of a request: the Vessel's, the context's
// system messages, and Guidance.
func System(vesselSystem string, msgs []*Message) string {
	return systemText(vesselSystem, msgs, Guidance)
}

func systemText(vesselSystem string, msgs []*Message, guidance string) string {
	parts := []string{}
	if vesselSystem != "" {
		parts = append(parts, vesselSystem)
	}
	for _, m := range msgs {
		if m.Type == SystemMessage {
			parts = append(parts, m.Data.Str())
		}
	}
	parts = append(parts, guidance)
	return strings.Join(parts, "\n\n")
}

// Request is a Vessel request prepared to run (NewRequest): its toolset,
// its parsed context, each instance's initial state and — for a plan or a
// decision given in advance — its calls, already checked. It is the input
// of the durable runtime's workflow (package request), which only
// orchestrates: everything that can be worked out before the request runs
// is worked out here.
type Request struct {
	Toolset *Toolset   `json:"toolset"`
	Context []*Message `json:"context"`
	// Prompt is the person's request.
	Prompt string `json:"prompt,omitempty"`
	// File names the context in errors.
	File string `json:"file,omitempty"`
	// Instances lists the instance ids of the context in order; States
	// holds each one's initial state, "" the global one.
	Instances []string               `json:"instances,omitempty"`
	States    map[string]jsonv.Value `json:"states"`
	// Calls are the calls to run without asking the model: a plan's (once
	// per instance) or a decision given in advance. Nil: the model decides.
	Calls *Graph `json:"calls,omitempty"`
	// Decision is the plan's calls or the given decision as written.
	Decision jsonv.Value `json:"decision,omitzero"`
	// Output is the schema of the request's result. A request with no tools
	// (a delegate's sub-request) is one model call that fills it; with
	// tools, the model fills it once the calls are done.
	Output jsonv.Value `json:"output,omitzero"`
	// Chain lists the delegates this request runs inside, outermost first;
	// Depth is their number.
	Chain []string `json:"chain,omitempty"`
	Depth int      `json:"depth,omitempty"`
	// MaxDepth bounds how deep delegates nest (0: DefaultMaxDepth) and
	// MaxFanOut how many delegate calls one request makes (0:
	// DefaultMaxFanOut).
	MaxDepth  int `json:"maxDepth,omitempty"`
	MaxFanOut int `json:"maxFanOut,omitempty"`
	// NoGlobal refuses calls with no _instance: a part of a split request
	// after the first (Split), so that a global call is made once.
	NoGlobal bool `json:"noGlobal,omitempty"`
	// ModelQueue is the task queue of the request's model calls — its
	// decisions, its output's fill — and of those of the processes it
	// launches and the sub-requests it delegates to: its starter's model's
	// (durable.ModelQueue), or the one any model answers
	// (durable.AnyModelQueue) for a starter with no model. "" is the
	// request's own queue, as for a request from before model calls were
	// routed.
	ModelQueue string `json:"modelQueue,omitempty"`
}

// Bounds of delegation.
const (
	DefaultMaxDepth  = 4
	DefaultMaxFanOut = 128
)

// RequestOptions configures NewRequest. The zero value asks the model to
// decide, with the default bounds.
type RequestOptions struct {
	// Prompt is the person's request.
	Prompt string
	// File names the context in errors; "" means "request".
	File string
	// Decision, when set, is the decision to run instead of asking the
	// model: {"calls": [ … ]}.
	Decision jsonv.Value
	// Output is Request.Output.
	Output jsonv.Value
	// MaxDepth and MaxFanOut are Request's.
	MaxDepth, MaxFanOut int
}

// NewRequest prepares a request of ts over the context messages ctx (a
// JSON array): it parses them, folds each instance's initial state, and
// assembles and checks a plan message or the given decision. Every
// problem is reported with the file and JSON path.
func NewRequest(ts *Toolset, ctx jsonv.Value, opts RequestOptions) (*Request, error) {
	file := opts.File
	if file == "" {
		file = "request"
	}
	if ctx.IsNull() {
		ctx = jsonv.ArrayValue()
	}
	msgs, err := ParseContext(file, "", ctx)
	if err != nil {
		return nil, err
	}
	states, err := InitialStates(msgs)
	if err != nil {
		return nil, &schema.Error{File: file, Message: err.Error(), Err: err}
	}
	r := &Request{Toolset: ts, Context: msgs, Prompt: opts.Prompt, File: file, Instances: Instances(msgs), States: states,
		Output: opts.Output, MaxDepth: opts.MaxDepth, MaxFanOut: opts.MaxFanOut}
	hasPlan := slices.ContainsFunc(msgs, func(m *Message) bool { return m.Type == PlanMessage })
	switch {
	case hasPlan:
		if r.Calls, err = AssemblePlan(file, msgs, ts); err != nil {
			return nil, err
		}
		for _, m := range msgs {
			if m.Type == PlanMessage {
				r.Decision = jsonv.ObjectValue(jsonv.Member{Name: "calls", Value: m.Data})
			}
		}
	case !opts.Decision.IsNull():
		if r.Calls, err = r.ParseDecision("decision", opts.Decision); err != nil {
			return nil, err
		}
		r.Decision = opts.Decision
	}
	if r.Calls != nil {
		if n, bound := r.DelegateCalls(r.Calls.Calls), r.FanOut(); n > bound {
			return nil, &schema.Error{File: file, Message: fmt.Sprintf("the request makes %d delegate calls; at most %d may run from one request (fan-out bound)", n, bound)}
		}
	}
	return r, nil
}

// System is the system text the request's model is sent: the Vessel's,
// the context's system messages, and Guidance.
func (r *Request) System() string { return System(r.Toolset.System, r.Context) }

// OutputSystem is the system text the request's model is sent to fill its
// Output: the Vessel's, the context's system messages, and
// OutputGuidance, or ResultGuidance for a request without tools — not the
// decision's Guidance, for it decides nothing.
func (r *Request) OutputSystem() string {
	if len(r.Toolset.Tools) == 0 {
		return systemText(r.Toolset.System, r.Context, ResultGuidance)
	}
	return systemText(r.Toolset.System, r.Context, OutputGuidance)
}

// Text is the prompt the request's model is sent, with extra messages (a
// "results" message) at the end of its context.
func (r *Request) Text(extra ...jsonv.Value) string {
	msgs := r.Context
	if len(extra) > 0 {
		msgs = slices.Clone(msgs)
		for _, e := range extra {
			msgs = append(msgs, &Message{Type: e.Lookup("type").Str(), Raw: e})
		}
	}
	return Prompt(msgs, r.Prompt)
}

// FanOut is the bound on the request's delegate calls.
func (r *Request) FanOut() int { return cmp.Or(max(r.MaxFanOut, 0), DefaultMaxFanOut) }

// MaxNesting is the bound on how deep its delegates nest.
func (r *Request) MaxNesting() int { return cmp.Or(max(r.MaxDepth, 0), DefaultMaxDepth) }

// DelegateCalls counts the calls of calls that go to a delegate.
func (r *Request) DelegateCalls(calls []*Call) int { return delegateCalls(r.Toolset, calls) }

func delegateCalls(ts *Toolset, calls []*Call) int {
	n := 0
	for _, c := range calls {
		if t := ts.Tool(c.Tool); t != nil && t.Kind == DelegateKind {
			n++
		}
	}
	return n
}

// ContextValue is the request's context as given: the array of messages.
func (r *Request) ContextValue() jsonv.Value {
	msgs := make([]jsonv.Value, len(r.Context))
	for i, m := range r.Context {
		msgs[i] = m.Raw
	}
	return jsonv.ArrayValue(msgs...)
}

// Split divides a request whose model decides over more instances than
// one decision covers (Toolset.DecisionSize) into parts of at most that
// many: each holds the global messages and its own instances' messages,
// so every decision request stays within a provider's limits (an enum of
// at most MaxEnum instances). Only the first part may make global calls.
// A request that fits is returned whole.
func (r *Request) Split() []*Request {
	size := orDefault(r.Toolset.DecisionSize, DefaultDecisionSize)
	if r.Calls != nil || len(r.Instances) <= size {
		return []*Request{r}
	}
	var parts []*Request
	for start := 0; start < len(r.Instances); start += size {
		ids := r.Instances[start:min(len(r.Instances), start+size)]
		in := make(map[string]bool, len(ids))
		for _, id := range ids {
			in[id] = true
		}
		p := *r
		p.Context, p.Instances, p.States = nil, slices.Clone(ids), map[string]jsonv.Value{"": r.States[""]}
		for _, m := range r.Context {
			if m.Instance == "" || in[m.Instance] {
				p.Context = append(p.Context, m)
			}
		}
		for _, id := range ids {
			p.States[id] = r.States[id]
		}
		p.NoGlobal = start > 0
		parts = append(parts, &p)
	}
	return parts
}
