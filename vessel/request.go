package vessel

import (
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
		p := at.AppendIndex(i)
		if raw.Object() == nil {
			errs.Add(file, p, "a message is an object with a \"type\", not %s", raw.Kind())
			continue
		}
		m := &Message{Type: raw.Lookup("type").Str(), Kind: raw.Lookup("kind").Str(), Raw: raw, Path: p, Schema: raw.Lookup("schema")}
		if inst, ok := raw.Get("_instance"); ok {
			if inst.Kind() != jsonv.KindString || inst.Str() == "" {
				errs.Add(file, p.Append("_instance"), "_instance must be a non-empty string")
				continue
			}
			m.Instance = inst.Str()
		}
		switch m.Type {
		case SystemMessage:
			msg, ok := raw.Get("message")
			if !ok || msg.Kind() != jsonv.KindString {
				errs.Add(file, p, "a system message needs a \"message\" string")
				continue
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
				continue
			}
			if m.Instance != "" {
				errs.Add(file, p.Append("_instance"), "a plan is never instanced: one plan serves every instance")
				continue
			}
			m.Data = calls
		default:
			errs.Add(file, p.Append("type"), "unknown message type %q (want system, input, state, data or plan)", m.Type)
			continue
		}
		msgs = append(msgs, m)
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return msgs, nil
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
const Guidance = `Answer with your decision: {"_reasoning", "calls": [...]}. Each call names its tool in "_tool" and fills the tool's parameters. When the context holds messages with "_instance" ids, give each call the "_instance" it is for; a message without one applies to every instance. To keep a call's result, set "_outputPath" to where it goes in that instance's state ("state" or "state.a.b"). A parameter written "†state.a.b" takes that value from the call's instance's state when the call runs.`

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
	parts := []string{}
	if vesselSystem != "" {
		parts = append(parts, vesselSystem)
	}
	for _, m := range msgs {
		if m.Type == SystemMessage {
			parts = append(parts, m.Data.Str())
		}
	}
	parts = append(parts, Guidance)
	return strings.Join(parts, "\n\n")
}
