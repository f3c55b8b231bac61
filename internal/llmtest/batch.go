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
	itemLine = regexp.MustCompile(`(?m)^\[(\d+)\] ?(.*)$`)
	itemProp = regexp.MustCompile(`^([a-z]+)(\d+)$`)
	legend   = regexp.MustCompile(` property ([a-z]+)<i> holds its ([^,\n]+?)[,.]`)
)

// Request is what a test model reads of a chat request: the answer
// schema's properties, and each item's prompt — by item number for a
// batch's multiplexed call, under 0 for a single item's request (its
// first line) — whether it is a repair (it carries an earlier answer),
// and a multiplexed call's steps by their properties' prefix.
type Request struct {
	Props   []string
	Prompts map[int]string
	Repair  bool
	Steps   map[string]string
}

// Read reads a chat request's body.
func Read(body string) Request {
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
		ResponseFormat struct {
			JSONSchema struct {
				Schema json.RawMessage `json:"schema"`
			} `json:"json_schema"`
		} `json:"response_format"`
	}
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		panic(err)
	}
	s, _ := jsonv.Parse(req.ResponseFormat.JSONSchema.Schema)
	r := Request{Props: s.Lookup("properties").Object().Names(), Prompts: map[int]string{}, Steps: map[string]string{}}
	for _, m := range req.Messages {
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
			for _, g := range itemLine.FindAllStringSubmatch(m.Content, -1) {
				n, _ := strconv.Atoi(g[1])
				r.Prompts[n] = g[2]
			}
		}
		if len(r.Prompts) == 0 {
			r.Prompts[0] = strings.SplitN(m.Content, "\n", 2)[0]
		}
	}
	return r
}

// Multiplexed answers batch calls and single items alike: each item's
// value of each step is part(step, the item's prompt, whether the request
// is a repair).
func Multiplexed(part func(step, prompt string, repair bool) string) func(name, body string) string {
	return func(_, body string) string {
		r := Read(body)
		var b strings.Builder
		b.WriteByte('{')
		for i, p := range r.Props {
			if i > 0 {
				b.WriteByte(',')
			}
			step, n := p, 0
			if m := itemProp.FindStringSubmatch(p); m != nil && r.Steps[m[1]] != "" {
				step = r.Steps[m[1]]
				n, _ = strconv.Atoi(m[2])
			}
			fmt.Fprintf(&b, "%q:%s", p, part(step, r.Prompts[n], r.Repair))
		}
		b.WriteByte('}')
		return b.String()
	}
}
