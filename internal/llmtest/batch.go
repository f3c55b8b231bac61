package llmtest

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/augceo/vibe/jsonv"
)

var (
	itemLine = regexp.MustCompile(`(?m)^\[(\d+)\] ([a-z0-9]+)( "(?:[^"\\]|\\.)*")?( \{.*\})?$`)
	itemProp = regexp.MustCompile(`^([a-z]+)(\d+)$`)
	legend   = regexp.MustCompile(`property ([a-z]+)<i> holds its ([^,;\n]+?)[,;.]`)
)

// Request is what a test model reads of a chat request: the answer
// schema's properties, and each item's prompt — by item number for a
// batch's multiplexed call, under 0 for a single item's request (its
// first line) — and tag (a multiplexed call's), whether it is a repair
// (it carries an earlier answer), and a multiplexed call's steps by their
// properties' prefix.
type Request struct {
	Props   []string
	Prompts map[int]string
	Tags    map[int]string
	Repair  bool
	Steps   map[string]string
}

// Read reads a request's body: an OpenAI chat request (the schema in its
// response_format, or its forced tool's parameters) or an Anthropic
// Messages request (the schema in its tool's input_schema; messages of
// text or of text blocks).
func Read(body string) Request {
	var req wireBody
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		panic(err)
	}
	_, schema := req.schema()
	s, _ := jsonv.Parse(schema)
	r := Request{Props: s.Lookup("properties").Object().Names(), Prompts: map[int]string{}, Tags: map[int]string{}, Steps: map[string]string{}}
	for _, msg := range req.Messages {
		m := struct{ Role, Content string }{msg.Role, text(msg.Content)}
		if m.Role == "assistant" {
			r.Repair = true
		}
		if m.Role != "user" || len(r.Prompts) > 0 {
			continue
		}
		for _, g := range legend.FindAllStringSubmatch(m.Content, -1) {
			r.Steps[g[1]] = g[2]
		}
		if len(r.Steps) > 0 {
			// A shared request is said once before the items.
			shared, _, _ := strings.Cut(m.Content, "\n\n")
			if strings.HasPrefix(shared, "Step ") {
				shared = ""
			}
			for _, g := range itemLine.FindAllStringSubmatch(m.Content, -1) {
				n, _ := strconv.Atoi(g[1])
				r.Prompts[n], r.Tags[n] = shared, g[2]
				if g[3] != "" {
					var request string
					if err := json.Unmarshal([]byte(g[3][1:]), &request); err != nil {
						panic(fmt.Sprintf("item %d's request is no JSON string: %v: %s", n, err, g[3]))
					}
					r.Prompts[n] = request
				}
			}
		}
		if len(r.Prompts) == 0 {
			r.Prompts[0] = strings.SplitN(m.Content, "\n", 2)[0]
		}
	}
	return r
}

// wireBody is what a test model reads of a request of either wire.
type wireBody struct {
	// System is Anthropic's system prompt: text, or text blocks.
	System   json.RawMessage `json:"system"`
	Messages []struct {
		Role string `json:"role"`
		// Content is text, or (Anthropic) content blocks.
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	ResponseFormat struct {
		JSONSchema struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`
	Tools []struct {
		Name        string          `json:"name"`         // Anthropic
		InputSchema json.RawMessage `json:"input_schema"` // Anthropic
		Function    struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"function"` // OpenAI
	} `json:"tools"`
}

// schema is the request's schema and its name: the response format's, or
// the first tool's.
func (b *wireBody) schema() (string, json.RawMessage) {
	if rf := b.ResponseFormat.JSONSchema; rf.Name != "" || len(rf.Schema) > 0 {
		return rf.Name, rf.Schema
	}
	if len(b.Tools) == 0 {
		return "", nil
	}
	if t := b.Tools[0]; t.Function.Name != "" {
		return t.Function.Name, t.Function.Parameters
	}
	return b.Tools[0].Name, b.Tools[0].InputSchema
}

// schemaName is the schema name of a request's body, "" when it has none.
func schemaName(body []byte) string {
	var b wireBody
	json.Unmarshal(body, &b)
	name, _ := b.schema()
	return name
}

// text is a message's content, or the system text: a JSON string, or the
// text of content blocks, joined.
func text(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	json.Unmarshal(raw, &blocks)
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// Multiplexed answers batch calls and single items alike: each item's
// value of each step is part(step, the item's prompt, whether the request
// is a repair), with the item's tag in each part that is an object.
func Multiplexed(part func(step, prompt string, repair bool) string) func(name, body string) string {
	return Positional(func(step, prompt string, _, _ int, repair bool) string { return part(step, prompt, repair) })
}

// Positional is Multiplexed with each item's position in its call: part
// is told the item's number i of n items in the call (i = n = 0 for a
// request of one item, not multiplexed).
func Positional(part func(step, prompt string, i, n int, repair bool) string) func(name, body string) string {
	return answerer(func(r Request, slot int) int { return slot }, part)
}

// Drifting is a model whose answers drift past position p of a
// multiplexed call: items after the p-th get drift(step, prompt) instead
// of what they get asked alone, part(step, prompt) — a model that loses
// track in a long call.
func Drifting(p int, part, drift func(step, prompt string, repair bool) string) func(name, body string) string {
	return Positional(func(step, prompt string, i, n int, repair bool) string {
		if n > 0 && i > p {
			return drift(step, prompt, repair)
		}
		return part(step, prompt, repair)
	})
}

// Swapping is a model that writes each odd item's answers under the next
// item's keys and the next item's under its own, in every multiplexed call
// (its parts carry the tags of the items they answer): a model that
// swaps slots. Alone, it answers right.
func Swapping(part func(step, prompt string, repair bool) string) func(name, body string) string {
	return answerer(func(r Request, slot int) int {
		switch {
		case slot == 0 || len(r.Tags) < 2:
			return slot
		case slot%2 == 1 && slot < len(r.Tags):
			return slot + 1
		case slot%2 == 0:
			return slot - 1
		}
		return slot
	}, func(step, prompt string, _, _ int, repair bool) string { return part(step, prompt, repair) })
}

// answerer answers each property of a request's schema — item whose(slot)
// at slot — with part, the item's tag put first in its first step's
// object part.
func answerer(whose func(r Request, slot int) int, part func(step, prompt string, i, n int, repair bool) string) func(name, body string) string {
	return func(_, body string) string {
		r := Read(body)
		var b strings.Builder
		b.WriteByte('{')
		for i, p := range r.Props {
			if i > 0 {
				b.WriteByte(',')
			}
			step, slot, first := p, 0, true
			if m := itemProp.FindStringSubmatch(p); m != nil && r.Steps[m[1]] != "" {
				step, first = r.Steps[m[1]], m[1] == "a"
				slot, _ = strconv.Atoi(m[2])
			}
			n := whose(r, slot)
			v := part(step, r.Prompts[n], n, len(r.Tags), r.Repair)
			if tag := r.Tags[n]; first && tag != "" && strings.HasPrefix(strings.TrimSpace(v), "{") {
				rest := strings.TrimPrefix(strings.TrimSpace(v), "{")
				if strings.TrimSpace(rest) != "}" {
					rest = "," + rest
				}
				v = fmt.Sprintf(`{"_item":%q`, tag) + rest
			}
			fmt.Fprintf(&b, "%q:%s", p, v)
		}
		b.WriteByte('}')
		return b.String()
	}
}
