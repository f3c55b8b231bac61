package vessel

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

// Graph is calls wired through state: a call that reads a variable
// depends on the earlier calls of its instance that write it (or a part of
// it), and calls that write the same variable keep their order.
type Graph struct {
	Calls []*Call `json:"calls"`
	// Deps[i] are the calls call i waits for, with the variable each edge
	// carries.
	Deps [][]Edge `json:"deps"`
}

// Edge is a dependency: From must run before the call, because of Var.
type Edge struct {
	From int    `json:"from"`
	Var  string `json:"var"`
}

// Overlap reports whether one state path contains the other.
func Overlap(a, b []string) bool {
	n := min(len(a), len(b))
	return slices.Equal(a[:n], b[:n])
}

// NewGraph wires calls. Dependencies join calls of the same instance only.
func NewGraph(calls []*Call) *Graph {
	g := &Graph{Calls: calls, Deps: make([][]Edge, len(calls))}
	// The calls of each instance, in order: a call's dependencies are
	// among them, so wiring costs the instance's calls, not all of them.
	byInstance := make(map[string][]int)
	for i, c := range calls {
		byInstance[c.Instance] = append(byInstance[c.Instance], i)
	}
	for i, c := range calls {
		mine := byInstance[c.Instance]
		for _, read := range c.StateReads() {
			for _, j := range mine {
				if w := calls[j]; j != i && w.Output != nil && Overlap(w.Output, read.Path) {
					g.Deps[i] = append(g.Deps[i], Edge{From: j, Var: "state." + strings.Join(read.Path, ".")})
				}
			}
		}
		if c.Output != nil {
			for _, j := range mine {
				if j >= i {
					break
				}
				if w := calls[j]; w.Output != nil && Overlap(w.Output, c.Output) && !hasEdge(g.Deps[i], j) {
					g.Deps[i] = append(g.Deps[i], Edge{From: j, Var: c.OutputString()})
				}
			}
		}
	}
	return g
}

func hasEdge(es []Edge, from int) bool {
	return slices.ContainsFunc(es, func(e Edge) bool { return e.From == from })
}

// Validate checks a graph before anything runs: every tool exists, every
// call's parameters fit its tool (a "†state…" parameter is checked when it
// runs), every variable read is written by a call or present in the
// state, every instance is known, and there is no cycle. Every problem is
// reported, naming the call and the variable.
func (g *Graph) Validate(file string, ts *Toolset, states map[string]jsonv.Value) error {
	var errs schema.ErrorList
	validators := map[*Tool]*schema.Validator{}
	for i, c := range g.Calls {
		t := ts.Tool(c.Tool)
		if t == nil {
			msg := fmt.Sprintf("%s: unknown tool %q (tools: %s)", c.Name(), c.Tool, strings.Join(ts.Names(), ", "))
			errs.Add(file, c.Path.Append("_tool"), "%s", msg)
			continue
		}
		if _, ok := states[c.Instance]; !ok {
			errs.Add(file, c.Path.Append("_instance"), "%s: unknown instance %q", c.Name(), c.Instance)
			continue
		}
		v, ok := validators[t]
		var err error
		if !ok {
			// The parameters as a call gives them: each the tool's own, or a
			// "†state" reference.
			v, err = schema.Cached(callSchema(t, DecisionRules{Global: true}))
			validators[t] = v
		}
		if err == nil && v != nil {
			withTool := c.Params.Clone().Object()
			withTool.Insert(0, "_tool", jsonv.StringValue(c.Tool))
			if c.Output != nil {
				withTool.Insert(1, OutputPathParam, jsonv.StringValue(c.OutputString()))
			}
			if err := v.Validate(withTool.Value()); err != nil {
				for _, p := range err.(*schema.ValidationError).Problems {
					errs.Add(file, c.Path+p.Path, "%s: parameters break the tool's schema: %s", c.Name(), p.Message)
				}
			}
		}
		errs.Append(file, CheckLaunch(file, c, t, c.Params))
		for _, read := range c.StateReads() {
			written := slices.ContainsFunc(g.Deps[i], func(e Edge) bool { return g.Calls[e.From].Output != nil && Overlap(g.Calls[e.From].Output, read.Path) })
			if _, err := ReadState(states[c.Instance], read.Path); err != nil && !written {
				errs.Add(file, c.Path.Append(read.Param), "%s reads †state.%s, but no call writes it and the state does not have it", c.Name(), strings.Join(read.Path, "."))
			}
		}
	}
	if cycle := g.cycle(); cycle != nil {
		var parts []string
		for k, i := range cycle {
			next := cycle[(k+1)%len(cycle)]
			v := ""
			for _, e := range g.Deps[next] {
				if e.From == i {
					v = e.Var
				}
			}
			parts = append(parts, fmt.Sprintf("%s writes %s for %s", g.Calls[i].Name(), v, g.Calls[next].Name()))
		}
		errs.Add(file, g.Calls[cycle[0]].Path, "the calls form a cycle: %s", strings.Join(parts, ", "))
	}
	return errs.Err()
}

// cycle returns the calls of a dependency cycle, or nil.
func (g *Graph) cycle() []int {
	const (
		white = iota
		grey
		black
	)
	color := make([]int, len(g.Calls))
	var stack []int
	var found []int
	var visit func(i int) bool
	visit = func(i int) bool {
		color[i] = grey
		stack = append(stack, i)
		for _, e := range g.Deps[i] {
			switch color[e.From] {
			case grey:
				at := slices.Index(stack, e.From)
				found = slices.Clone(stack[at:])
				return true
			case white:
				if visit(e.From) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[i] = black
		return false
	}
	for i := range g.Calls {
		if color[i] == white && visit(i) {
			slices.Reverse(found)
			return found
		}
	}
	return nil
}

// Layers orders the calls for running: each layer's calls depend only on
// earlier layers, so they can run in parallel. The graph must be acyclic.
func (g *Graph) Layers() [][]int {
	level := make([]int, len(g.Calls))
	for i := range level {
		level[i] = -1
	}
	var depth func(i int) int
	depth = func(i int) int {
		if level[i] >= 0 {
			return level[i]
		}
		level[i] = 0
		d := 0
		for _, e := range g.Deps[i] {
			d = max(d, depth(e.From)+1)
		}
		level[i] = d
		return d
	}
	var layers [][]int
	for i := range g.Calls {
		d := depth(i)
		for len(layers) <= d {
			layers = append(layers, nil)
		}
		layers[d] = append(layers[d], i)
	}
	return layers
}

// AssemblePlan reads the plan message of a parsed context and checks it
// before anything runs: the plan's calls, once per instance (Expand), wired
// (NewGraph) and validated against the toolset and each instance's initial
// state (Graph.Validate). Every problem is reported with file and JSON path.
// It is the one place a plan is assembled: for the command line's dry run
// and picture as for a request that runs it.
func AssemblePlan(file string, msgs []*Message, ts *Toolset) (*Graph, error) {
	var plan *Message
	for _, m := range msgs {
		if m.Type == PlanMessage {
			if plan != nil {
				return nil, &schema.Error{File: file, Path: m.Path, Message: "the context holds two plans; a request runs one"}
			}
			plan = m
		}
	}
	if plan == nil {
		return nil, &schema.Error{File: file, Message: "the context holds no plan message ({\"type\": \"plan\", \"calls\": [...]})"}
	}
	calls, err := ParseCalls(file, plan.Path.Append("calls"), plan.Data)
	if err != nil {
		return nil, err
	}
	ts.Fix(calls)
	expanded, err := Expand(calls, Instances(msgs))
	if err != nil {
		return nil, &schema.Error{File: file, Path: plan.Path, Message: err.Error()}
	}
	states, err := InitialStates(msgs)
	if err != nil {
		return nil, &schema.Error{File: file, Message: err.Error()}
	}
	g := NewGraph(expanded)
	if err := g.Validate(file, ts, states); err != nil {
		return nil, err
	}
	return g, nil
}

// Expand turns a plan into the calls it makes: the plan once per instance
// (or once, globally, without instances). A plan is never instanced
// itself, so its calls name no instance.
func Expand(plan []*Call, instances []string) ([]*Call, error) {
	for _, c := range plan {
		if c.Instance != "" {
			return nil, fmt.Errorf("%s: a plan's calls name no _instance: the plan runs once per instance", c.Name())
		}
	}
	if len(instances) == 0 {
		return plan, nil
	}
	var out []*Call
	for _, inst := range instances {
		for _, c := range plan {
			cc := *c
			cc.Instance = inst
			cc.Index = len(out)
			out = append(out, &cc)
		}
	}
	return out, nil
}

// WriteTable writes the calls in the order they run, one line each: its
// layer (calls of one layer run in parallel), number, tool, instance, the
// variables it reads (its condition's among them) and writes, the calls it
// waits for and, when a call of the plan has one, its condition.
func (g *Graph) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	conditions := slices.ContainsFunc(g.Calls, func(c *Call) bool { return c.If != nil })
	head := "STEP\tCALL\tTOOL\tINSTANCE\tREADS\tWRITES\tAFTER"
	if conditions {
		// Only a plan with conditions has the column: others read as before.
		head += "\tIF"
	}
	fmt.Fprintln(tw, head)
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	for n, layer := range g.Layers() {
		for _, i := range layer {
			c := g.Calls[i]
			var reads, after []string
			for _, r := range c.StateReads() {
				reads = append(reads, "state."+strings.Join(r.Path, "."))
			}
			for _, e := range g.Deps[i] {
				after = append(after, fmt.Sprint(e.From+1))
			}
			line := fmt.Sprintf("%d\t%d\t%s\t%s\t%s\t%s\t%s", n+1, i+1, c.Tool, dash(c.Instance), dash(strings.Join(reads, ", ")), dash(c.OutputString()), dash(strings.Join(after, ", ")))
			if conditions {
				cond := "-"
				if c.If != nil {
					cond = c.If.String()
				}
				line += "\t" + cond
			}
			fmt.Fprintln(tw, line)
		}
	}
	return tw.Flush()
}

// Dot writes the graph for Graphviz: one node per call, one edge per
// dependency labelled with its variable; a call with a condition is a
// dashed box labelled with it.
func (g *Graph) Dot() string {
	var b strings.Builder
	b.WriteString("digraph plan {\n  rankdir=LR;\n  node [shape=box, fontname=\"Helvetica\"];\n")
	for i, c := range g.Calls {
		label := fmt.Sprintf("%d. %s", i+1, c.Tool)
		if c.Instance != "" {
			label += "\\n" + c.Instance
		}
		if c.Output != nil {
			label += "\\n→ " + c.OutputString()
		}
		if c.If != nil {
			// A conditional call is a dashed box, its condition in its label.
			label += "\\nif " + c.If.String()
			fmt.Fprintf(&b, "  c%d [label=%q, style=dashed];\n", i+1, label)
			continue
		}
		fmt.Fprintf(&b, "  c%d [label=%q];\n", i+1, label)
	}
	for i := range g.Calls {
		for _, e := range g.Deps[i] {
			fmt.Fprintf(&b, "  c%d -> c%d [label=%q];\n", e.From+1, i+1, e.Var)
		}
	}
	b.WriteString("}\n")
	return strings.ReplaceAll(b.String(), `\\n`, `\n`)
}
