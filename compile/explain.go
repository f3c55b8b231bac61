package compile

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Explain writes a readable table of the chunks in execution order: each
// chunk's kind and context, then its steps with what they reference and the
// action they run.
func (p *Process) Explain(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	if p.Direct != nil {
		fmt.Fprintf(tw, "direct server call: the model fills %s, then action %s runs with step %s, not awaited\n\n", p.Direct.Chunk.Name, p.Direct.Action, p.Direct.Step.Name)
	}
	fmt.Fprintln(tw, "#\tCHUNK\tKIND\tCONTEXT\tSTEP\tREFERENCES\tACTION")
	for i, ch := range p.Chunks {
		ctx := ch.Context
		if ctx == "" {
			ctx = "-"
		}
		for j, s := range ch.Steps {
			num, name, kind, c := fmt.Sprint(i+1), ch.Name, string(ch.Kind), ctx
			if j > 0 {
				num, name, kind, c = "", "", "", ""
			}
			if i == 0 && j == 0 && p.Direct == nil && ch.Kind == LLM {
				name += " (entry point)"
			}
			refs := make([]string, len(s.References))
			for k, r := range s.References {
				refs[k] = r.String()
			}
			action := s.Action
			if s.FireAndForget {
				action += " (fire and forget)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", num, name, kind, c, s.Name, orDash(strings.Join(refs, ", ")), orDash(action))
		}
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
