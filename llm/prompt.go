package llm

import (
	"fmt"
	"strings"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

// DefaultSystem is the system text of a Task that gives none.
const DefaultSystem = `You are one step of a workflow. Answer with one JSON value that follows the given JSON Schema, filling its properties in the order they are given: that order is the order to think in. Properties whose names start with "_" are for your own reasoning; properties whose names start with "$" are metrics you estimate.`

// DefaultBatchSystem is the system text of a BatchTask that gives none:
// DefaultSystem's rules in fewer words, since a multiplexed call's user
// message says how its answer is laid out.
const DefaultBatchSystem = `Answer with one JSON value that follows the JSON Schema, its properties filled in the order given. Properties named "_…" are your reasoning; "$…", metrics you estimate.`

// Task is one instruction to fill.
type Task struct {
	// Name names the step or chunk: the schema on the wire, and the step in
	// the prompt.
	Name string
	// System is the system text; "" means DefaultSystem.
	System string
	// Prompt is the person's request, if any: the process's prompt.
	Prompt string
	// Context is the minimal context (compile.MinimalContext); null for none.
	Context jsonv.Value
	// Schema is the schema to fill, as a model is sent it (compile.Project).
	Schema jsonv.Value
	// Previous is the model's previous attempt at this task in a loop
	// (Loop_Mixin); Attempt (from 1) and MaxAttempts say where the loop is.
	Previous             jsonv.Value
	Attempt, MaxAttempts int
}

// ContextBlock is the prompt text that carries a step's context (SPEC §6).
// The wording may change; the shape — the markers around the JSON, then the
// request naming the step — may not.
func ContextBlock(ctx jsonv.Value, step string) string {
	var b strings.Builder
	if ctx.Len() > 0 {
		b.WriteString("--- Context from previous steps ---\n")
		b.Write(jsonv.MarshalIndent(ctx, "  "))
		b.WriteString("\n--- End of context ---\n")
		fmt.Fprintf(&b, "Generate the JSON for step %s using the information above.", step)
	} else {
		fmt.Fprintf(&b, "Generate the JSON for step %s.", step)
	}
	return b.String()
}

// NewRequest builds the first request for t: the system text, one user
// message with the prompt and the context block, and the schema's bytes.
// It is exactly what is sent (vibe ask --show-prompt prints it).
func NewRequest(t Task) *Request {
	system := t.System
	if system == "" {
		system = DefaultSystem
	}
	user := ContextBlock(t.Context, t.Name)
	if p := strings.TrimSpace(t.Prompt); p != "" {
		user = p + "\n\n" + user
	}
	if !t.Previous.IsNull() {
		user += fmt.Sprintf("\n\n--- Your previous attempt (attempt %d of at most %d) ---\n%s\n--- End of previous attempt ---\n"+
			"Improve on it; mark your answer done when it needs no further attempt.", t.Attempt-1, t.MaxAttempts, jsonv.MarshalIndent(t.Previous, "  "))
	}
	return &Request{
		Name:     t.Name,
		System:   system,
		Messages: []Message{{Role: RoleUser, Content: user}},
		Schema:   jsonv.Marshal(t.Schema),
	}
}

// repairMessage asks again after an answer that was not JSON, broke the
// schema, or (checked) fit the schema but could not be carried out.
func repairMessage(parseErr error, problems []schema.Invalid, checked bool) string {
	var b strings.Builder
	switch {
	case parseErr != nil:
		fmt.Fprintf(&b, "Your answer is not valid JSON (%v).\n", parseErr)
	case checked:
		b.WriteString("Your answer fits the schema, but it cannot be carried out:\n")
	default:
		b.WriteString("Your answer does not match the schema:\n")
	}
	for _, p := range problems {
		fmt.Fprintf(&b, "- %s: %s\n", p.Path, p.Message)
	}
	b.WriteString("Answer again with the whole corrected JSON value and nothing else.")
	return b.String()
}

// BatchTask is one chunk asked of many items in one request (SPEC §5):
// Schema is the multiplexed schema (compile.Multiplex), and Legend says
// which of its properties holds which item's value of which step
// (compile.Legend): the layout is the compiler's, this package only sends
// it.
type BatchTask struct {
	// Name names the chunk; System is the system text, "" for
	// DefaultBatchSystem.
	Name, System string
	Schema       jsonv.Value
	// Legend says, in words, where each item's answer goes: "property
	// a<i> holds its assess, …".
	Legend string
	// Items are the items in order: item i is Items[i-1].
	Items []BatchItem
}

// BatchItem is one item of a BatchTask: its tag (compile.ItemTags), its
// request and its minimal context.
type BatchItem struct {
	Tag     string
	Prompt  string
	Context jsonv.Value
}

// NewBatchRequest builds the one request of a BatchTask: the system text,
// one user message, and the schema's bytes once. The message says once
// which property holds which step and that each part echoes its item's
// tag (the task's Legend), then gives each item on a line of its own that
// starts with its number in brackets — "[i] " — then its tag, its request
// as a JSON string and its context as JSON. Encoded so, no item's text can
// pose as another item: a newline or a "[2]" in a request is a character
// of a JSON string. A request every item shares is said once, before the
// items.
func NewBatchRequest(t BatchTask) *Request {
	system := t.System
	if system == "" {
		system = DefaultBatchSystem
	}
	shared := len(t.Items) > 1
	for _, it := range t.Items {
		shared = shared && it.Prompt == t.Items[0].Prompt
	}
	var b strings.Builder
	if shared {
		if p := strings.TrimSpace(t.Items[0].Prompt); p != "" {
			b.WriteString(p + "\n\n")
		}
	}
	fmt.Fprintf(&b, "Step %s for %d items, each answered from its own line only. Line [i] is item i: its tag, request and context; %s.\n", t.Name, len(t.Items), t.Legend)
	for i, it := range t.Items {
		fmt.Fprintf(&b, "[%d] %s", i+1, it.Tag)
		if p := strings.TrimSpace(it.Prompt); !shared && p != "" {
			b.WriteByte(' ')
			b.Write(jsonv.Marshal(jsonv.StringValue(p)))
		}
		if it.Context.Len() > 0 {
			b.WriteByte(' ')
			b.Write(jsonv.Marshal(it.Context))
		}
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "Answer all %d items.", len(t.Items))
	return &Request{
		Name:     t.Name,
		System:   system,
		Messages: []Message{{Role: RoleUser, Content: b.String()}},
		Schema:   jsonv.Marshal(t.Schema),
	}
}
