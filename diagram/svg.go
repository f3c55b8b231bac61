package diagram

import (
	"bufio"
	"cmp"
	"fmt"
	"html"
	"io"
	"slices"

	"github.com/augceo/vibe/compile"
)

// The SVG's geometry, in pixels. Text is monospace, so a line's width is
// known from its characters without fonts at hand.
const (
	margin    = 12
	charWidth = 7.2 // of a 12 px monospace character
	headerH   = 30  // a chunk's title row
	rowH      = 26  // a step
	rowGap    = 6
	chunkGap  = 28 // between chunks, for the arrow of execution order
	inset     = 10 // steps inside their chunk
	laneGap   = 12 // between the reference arcs right of the chunks
	minBoxW   = 300
)

// SVG writes the program as an SVG picture: the chunks top to bottom in
// execution order, each with its kind, name and steps (and the action a
// step runs), the order as arrows between them, and each reference as an
// arc on the right from the step read to the step that
// reads it (its title says which field). Marks colour the chunks a run has finished, the one it is at
// (waiting for a person, or failed) and dim those not reached yet.
// Every name is escaped; the picture needs no stylesheet.
func SVG(w io.Writer, p *compile.Program, m Marks) error {
	g := newGraph(p)
	l := layout(g)
	b := bufio.NewWriter(w)
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="the process's chunks in execution order" font-family="ui-monospace, SFMono-Regular, Menlo, Consolas, monospace" font-size="12">`+"\n",
		l.width, l.height, l.width, l.height)
	fmt.Fprintln(b, `<defs><marker id="vibe-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#5b6470"/></marker></defs>`)
	for ci := range p.Chunks {
		ch := &p.Chunks[ci]
		writeChunk(b, l, ch, ci, m)
		if ci > 0 {
			x, y0, y1 := l.boxX+24, l.chunkY[ci-1]+l.chunkH[ci-1], l.chunkY[ci]
			fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#9aa3ad" stroke-width="2.5" marker-end="url(#vibe-arrow)"/>`+"\n", x, y0+2, x, y1-3)
		}
	}
	for i, e := range g.edges {
		x0, y0 := l.anchor(e.from)
		x1, y1 := l.anchor(e.to)
		lx := l.boxX + l.boxW + laneGap + l.lanes[i]*laneGap
		title := nodeName(g, e.from)
		if e.field != "" {
			title += "." + e.field
		}
		title += " → " + nodeName(g, e.to)
		fmt.Fprintf(b, `<path d="M%d,%d C%d,%d %d,%d %d,%d" fill="none" stroke="#5b6470" stroke-width="1.3" marker-end="url(#vibe-arrow)"><title>%s</title></path>`+"\n",
			x0, y0, lx, y0, lx, y1, x1+2, y1, esc(title))
	}
	fmt.Fprintln(b, "</svg>")
	return b.Flush()
}

func writeChunk(b *bufio.Writer, l *geometry, ch *compile.ProgramChunk, ci int, m Marks) {
	colors := kindColors[ch.Kind]
	state := m.state(ch.Name)
	stroke, width, opacity := colors[1], 1.5, 1.0
	switch state {
	case "current", "waiting":
		width = 3.5
	case "failed":
		stroke, width = "#d02c2c", 3.5
	case "":
		if m.Current != "" || len(m.Done) > 0 {
			opacity = 0.55 // not reached yet
		}
	}
	y := l.chunkY[ci]
	if m.Links {
		fmt.Fprintf(b, `<a href="#chunk-%d">`, ci+1)
	}
	fmt.Fprintf(b, `<g class="chunk %s" opacity="%g"><title>%s</title>`, esc(string(ch.Kind)), opacity, esc(ch.Name))
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" rx="8" fill="%s" stroke="%s" stroke-width="%g"/>`, l.boxX, y, l.boxW, l.chunkH[ci], colors[0], stroke, width)
	fmt.Fprintf(b, `<text x="%d" y="%d" font-weight="bold"><tspan fill="%s">%d. %s</tspan> %s</text>`, l.boxX+10, y+20, colors[1], ci+1, esc(string(ch.Kind)), esc(chunkTitle(ch)))
	if label := stateLabel(state); label != "" {
		fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="end" font-weight="bold" fill="%s">%s</text>`, l.boxX+l.boxW-10, y+20, stroke, label)
	}
	for si := range ch.Steps {
		s := &ch.Steps[si]
		sy := l.stepY(ci, si)
		fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" rx="5" fill="#ffffff" stroke="%s"/>`, l.stepX, sy, l.stepW, rowH, colors[1])
		fmt.Fprintf(b, `<text x="%d" y="%d">%s</text>`, l.stepX+10, sy+17, esc(s.Name))
		if a := stepAction(s); a != "" {
			fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="end" fill="#5b6470">%s</text>`, l.stepX+l.stepW-10, sy+17, esc(a))
		}
	}
	fmt.Fprint(b, "</g>")
	if m.Links {
		fmt.Fprint(b, "</a>")
	}
	fmt.Fprintln(b)
}

func stateLabel(state string) string {
	switch state {
	case "done":
		return "✓ done"
	case "current":
		return "● running"
	case "waiting":
		return "● waiting for a person"
	case "failed":
		return "✕ failed"
	}
	return ""
}

func nodeName(g *graph, n node) string {
	return g.p.Chunks[n.chunk].Steps[n.step].Qualified()
}

// geometry is where everything goes.
type geometry struct {
	boxX, boxW, stepX, stepW int
	chunkY, chunkH           []int
	lanes                    []int // each edge's lane, right of the chunks
	width, height            int
}

// layout stacks the chunks, then gives each
// reference a lane: shorter arcs nearer the chunks, and no two arcs of one
// lane over the same rows.
func layout(g *graph) *geometry {
	l := &geometry{boxX: margin}
	widest := 0
	for _, ch := range g.p.Chunks {
		widest = max(widest, textWidth(fmt.Sprintf("%d. %s %s", len(g.p.Chunks), ch.Kind, chunkTitle(&ch)))+textWidth("● waiting for a person")-2*inset)
		for _, s := range ch.Steps {
			widest = max(widest, textWidth(s.Name)+textWidth(stepAction(&s))+30)
		}
	}
	l.stepW = max(widest+20, minBoxW-2*inset)
	l.boxW = l.stepW + 2*inset
	l.stepX = l.boxX + inset
	y := margin
	for _, ch := range g.p.Chunks {
		h := headerH + len(ch.Steps)*(rowH+rowGap) + inset - rowGap
		l.chunkY, l.chunkH = append(l.chunkY, y), append(l.chunkH, h)
		y += h + chunkGap
	}
	l.height = y - chunkGap + margin

	// Lanes: interval colouring, shortest spans first.
	type span struct{ i, top, bottom int }
	spans := make([]span, len(g.edges))
	for i, e := range g.edges {
		_, a := l.anchor(e.from)
		_, c := l.anchor(e.to)
		spans[i] = span{i, min(a, c), max(a, c)}
	}
	slices.SortStableFunc(spans, func(a, b span) int { return cmp.Compare(a.bottom-a.top, b.bottom-b.top) })
	l.lanes = make([]int, len(g.edges))
	var taken [][]span
	lanes := 0
	for _, s := range spans {
		lane := 0
		for ; lane < len(taken); lane++ {
			if !slices.ContainsFunc(taken[lane], func(t span) bool { return s.top < t.bottom+4 && t.top < s.bottom+4 }) {
				break
			}
		}
		if lane == len(taken) {
			taken = append(taken, nil)
		}
		taken[lane] = append(taken[lane], s)
		l.lanes[s.i] = lane
		lanes = max(lanes, lane+1)
	}
	l.width = l.boxX + l.boxW + (lanes+1)*laneGap + margin
	return l
}

// stepY is the top of a step's row.
func (l *geometry) stepY(ci, si int) int { return l.chunkY[ci] + headerH + si*(rowH+rowGap) }

// anchor is where a node's arcs meet it: the middle of its right side.
func (l *geometry) anchor(n node) (x, y int) {
	return l.stepX + l.stepW, l.stepY(n.chunk, n.step) + rowH/2
}

// textWidth is the width of s in the picture's monospace font; a wide
// (East Asian) character takes two cells.
func textWidth(s string) int {
	cells := 0
	for _, r := range s {
		cells++
		if r >= 0x1100 && (r <= 0x115f || (r >= 0x2e80 && r <= 0xa4cf) || (r >= 0xac00 && r <= 0xd7a3) || (r >= 0xf900 && r <= 0xfaff) || (r >= 0xff00 && r <= 0xff60) || r >= 0x1f300) {
			cells++
		}
	}
	return int(float64(cells)*charWidth + 0.5)
}

// esc escapes text and attribute values.
func esc(s string) string { return html.EscapeString(s) }
