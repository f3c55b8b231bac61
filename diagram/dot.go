package diagram

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/augceo/vibe/compile"
)

// kindColors are the fill and line colours of each kind of chunk, shared
// by both drawings.
var kindColors = map[compile.Kind][2]string{
	compile.LLM:    {"#e0ecff", "#2f6fdb"},
	compile.Server: {"#dcf5e3", "#1e8a4c"},
	compile.User:   {"#fff1d6", "#c27803"},
}

// DOT writes the program as a Graphviz digraph: a cluster per chunk in
// execution order, a node per step, an edge per reference (labelled with
// the field read, when it reads a part), and bold grey edges from chunk to
// chunk. Render it with `dot -Tsvg`.
func DOT(w io.Writer, p *compile.Program) error {
	g := newGraph(p)
	b := bufio.NewWriter(w)
	fmt.Fprintln(b, "digraph process {")
	fmt.Fprintln(b, "  rankdir=TB;")
	fmt.Fprintln(b, `  node [shape=box, style="rounded,filled", fillcolor=white, fontname="Helvetica"];`)
	fmt.Fprintln(b, `  edge [fontname="Helvetica", fontsize=10];`)
	for ci, ch := range p.Chunks {
		colors := kindColors[ch.Kind]
		fmt.Fprintf(b, "  subgraph cluster_%d {\n", ci+1)
		fmt.Fprintf(b, "    label=%s;\n", quote(fmt.Sprintf("%d. %s %s", ci+1, ch.Kind, chunkTitle(&ch))))
		fmt.Fprintf(b, "    style=\"rounded,filled\"; fillcolor=%s; color=%s;\n", quote(colors[0]), quote(colors[1]))
		for si := range ch.Steps {
			s := &ch.Steps[si]
			label := s.Name
			if a := stepAction(s); a != "" {
				label += "\n" + a
			}
			fmt.Fprintf(b, "    %s [label=%s];\n", dotID(node{chunk: ci, step: si}, p), quote(label))
		}
		fmt.Fprintln(b, "  }")
	}
	for ci := 1; ci < len(p.Chunks); ci++ {
		prev, next := &p.Chunks[ci-1], &p.Chunks[ci]
		if len(prev.Steps) == 0 || len(next.Steps) == 0 {
			continue
		}
		fmt.Fprintf(b, "  %s -> %s [color=\"#9aa3ad\", penwidth=2.5, arrowhead=none, weight=10];\n",
			dotID(node{chunk: ci - 1, step: len(prev.Steps) - 1}, p), dotID(node{chunk: ci}, p))
	}
	for _, e := range g.edges {
		attrs := ""
		if e.field != "" {
			attrs = " [label=" + quote(e.field) + "]"
		}
		fmt.Fprintf(b, "  %s -> %s%s;\n", dotID(e.from, p), dotID(e.to, p), attrs)
	}
	fmt.Fprintln(b, "}")
	return b.Flush()
}

// chunkTitle is a chunk's name without its kind's prefix: LLM_llmContext1
// is drawn as llmContext1 beside its kind.
func chunkTitle(ch *compile.ProgramChunk) string {
	return strings.TrimPrefix(ch.Name, string(ch.Kind)+"_")
}

// dotID is a node's identifier: the step's qualified name, quoted.
func dotID(n node, p *compile.Program) string {
	return quote(p.Chunks[n.chunk].Steps[n.step].Qualified())
}

// quote is a DOT string: Go's quoting escapes the quotes and backslashes
// DOT reads, and its \n is DOT's line break.
func quote(s string) string { return strconv.Quote(s) }
