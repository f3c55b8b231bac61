// Package diagram draws a compiled process: its chunks in execution order
// (LLM, SERVER, USER), the steps in each, and the references from a step to
// the earlier steps whose values it reads. It writes Graphviz DOT (vibe
// compile --dot) or an SVG laid out by itself (vibe compile --svg, and the
// console's process page, where Marks show how far a process has come).
//
// It reads a compile.Program, which a compiled process gives
// (compile.Process.Program) and every process workflow carries as its
// input, so a running process is drawn from exactly what it runs.
package diagram

import (
	"slices"

	"github.com/augceo/vibe/compile"
)

// Marks say how far a process has come; the zero value draws the program
// alone.
type Marks struct {
	// Done are the chunks that have finished.
	Done []string
	// Current is the chunk running or waited on, or the one that failed.
	Current string
	// Failed marks Current as the chunk the process failed in.
	Failed bool
	// Waiting marks Current as waiting for a person.
	Waiting bool
	// Links makes each chunk a link to "#chunk-N" (N its 1-based place),
	// for a page that shows the chunks below the picture.
	Links bool
}

// edge is a reference: step to reads (part of) from's value.
type edge struct {
	from, to node
	field    string // the part of from's value read, dotted; "" for all of it
}

// node is a step: its chunk's index and its own in the chunk.
type node struct{ chunk, step int }

// graph is a program's steps and references, in execution order.
type graph struct {
	p     *compile.Program
	edges []edge
}

// newGraph resolves every step's references to the step that writes them.
// (The compiler resolves every reference to a step; one that names none is
// not drawn.)
func newGraph(p *compile.Program) *graph {
	g := &graph{p: p}
	for ci := range p.Chunks {
		for si := range p.Chunks[ci].Steps {
			to := node{chunk: ci, step: si}
			for _, ref := range p.Chunks[ci].Steps[si].References {
				if from, field, ok := g.writer(ref); ok {
					g.edges = append(g.edges, edge{from: from, to: to, field: field})
				}
			}
		}
	}
	return g
}

// writer is the step whose state path is the longest prefix of ref, and the
// rest of ref, dotted.
func (g *graph) writer(ref compile.Path) (node, string, bool) {
	var best node
	bestLen := 0
	for ci, ch := range g.p.Chunks {
		for si, s := range ch.Steps {
			if len(s.State) > bestLen && len(s.State) <= len(ref) && slices.Equal(ref[:len(s.State)], s.State) {
				best, bestLen = node{chunk: ci, step: si}, len(s.State)
			}
		}
	}
	return best, compile.Path(ref[bestLen:]).String(), bestLen > 0
}

// stepAction is what a step runs, as drawn: "→ Action", "↯ Action" for a
// fire-and-forget action, or "".
func stepAction(s *compile.ProgramStep) string {
	switch {
	case s.Action == "":
		return ""
	case s.FireAndForget:
		return "↯ " + s.Action
	}
	return "→ " + s.Action
}

// state is a chunk's place in a run: "done", "current", "waiting",
// "failed" or "" (not reached, or no run).
func (m Marks) state(chunk string) string {
	switch {
	case chunk == m.Current && m.Failed:
		return "failed"
	case chunk == m.Current && m.Waiting:
		return "waiting"
	case chunk == m.Current:
		return "current"
	case slices.Contains(m.Done, chunk):
		return "done"
	}
	return ""
}
