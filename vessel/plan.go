package vessel

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

// Call is one tool call of a decision or a plan.
type Call struct {
	// Index is the call's position in its decision or plan.
	Index int    `json:"index"`
	Tool  string `json:"tool"`
	// Instance is the instance the call is for; "" for a global call.
	Instance string `json:"instance,omitempty"`
	// Output is where the result goes in state (nil: nowhere).
	Output []string `json:"output,omitempty"`
	// Params are the call's parameters, without the call's own fields.
	Params jsonv.Value `json:"params"`
	// Path is where the call is in its file.
	Path jsonv.Pointer `json:"path"`
}

// Name is how errors name a call: "call 3 (sendReport)".
func (c *Call) Name() string {
	s := fmt.Sprintf("call %d (%s", c.Index+1, c.Tool)
	if c.Instance != "" {
		s += ", instance " + c.Instance
	}
	return s + ")"
}

// OutputString is the call's output path as written.
func (c *Call) OutputString() string {
	if c.Output == nil {
		return ""
	}
	return strings.Join(append([]string{"state"}, c.Output...), ".")
}

// Reads are the state paths the call's parameters read.
func (c *Call) Reads() map[string][]string {
	out := map[string][]string{}
	for name, v := range c.Params.Members() {
		if IsRef(v) {
			if p, err := ParsePath(v.Str()); err == nil {
				out[name] = p
			}
		}
	}
	return out
}

// ParseCalls reads the calls of a decision or a plan.
func ParseCalls(file string, at jsonv.Pointer, v jsonv.Value) ([]*Call, error) {
	var errs schema.ErrorList
	var calls []*Call
	for i, raw := range v.Array() {
		p := at.AppendIndex(i)
		if raw.Object() == nil {
			errs.Add(file, p, "a call is an object with \"_tool\", not %s", raw.Kind())
			continue
		}
		c := &Call{Index: i, Path: p}
		params := jsonv.NewObject(raw.Len())
		for name, val := range raw.Members() {
			switch name {
			case "_tool":
				c.Tool = val.Str()
			case "_instance":
				if val.Kind() != jsonv.KindString {
					errs.Add(file, p.Append(name), "_instance must be a string")
				}
				c.Instance = val.Str()
			case "_outputPath":
				path, err := ParsePath(val.Str())
				if err != nil {
					errs.Add(file, p.Append(name), "%v", err)
					continue
				}
				c.Output = path
			case "output":
				// "output": "†state…" is the seed's other way to write an
				// output path.
				if val.Kind() == jsonv.KindString && strings.HasPrefix(val.Str(), "†") {
					path, err := ParsePath(val.Str())
					if err != nil {
						errs.Add(file, p.Append(name), "%v", err)
						continue
					}
					c.Output = path
					continue
				}
				params.Set(name, val)
			default:
				params.Set(name, val)
			}
		}
		if c.Tool == "" {
			errs.Add(file, p, "a call needs \"_tool\": the name of the tool to call")
			continue
		}
		c.Params = params.Value()
		calls = append(calls, c)
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return calls, nil
}

// Graph is calls wired through state: a call that reads a variable
// depends on the earlier calls of its instance that write it (or a part of
// it), and calls that write the same variable keep their order.
type Graph struct {
	Calls []*Call
	// Deps[i] are the calls call i waits for, with the variable each edge
	// carries.
	Deps [][]Edge
}

// Edge is a dependency: From must run before the call, because of Var.
type Edge struct {
	From int
	Var  string
}

// overlap reports whether one state path contains the other.
func overlap(a, b []string) bool {
	n := min(len(a), len(b))
	return slices.Equal(a[:n], b[:n])
}

// NewGraph wires calls. Dependencies join calls of the same instance only.
func NewGraph(calls []*Call) *Graph {
	g := &Graph{Calls: calls, Deps: make([][]Edge, len(calls))}
	for i, c := range calls {
		for _, read := range sortedReads(c) {
			for j, w := range calls {
				if j != i && w.Instance == c.Instance && w.Output != nil && overlap(w.Output, read) {
					g.Deps[i] = append(g.Deps[i], Edge{From: j, Var: "state." + strings.Join(read, ".")})
				}
			}
		}
		if c.Output != nil {
			for j := 0; j < i; j++ {
				w := calls[j]
				if w.Instance == c.Instance && w.Output != nil && overlap(w.Output, c.Output) && !hasEdge(g.Deps[i], j) {
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

func sortedReads(c *Call) [][]string {
	reads := c.Reads()
	names := make([]string, 0, len(reads))
	for n := range reads {
		names = append(names, n)
	}
	slices.Sort(names)
	out := make([][]string, len(names))
	for i, n := range names {
		out[i] = reads[n]
	}
	return out
}

// Validate checks a graph before anything runs: every tool exists, every
// call's parameters fit its tool (a "†state…" parameter is checked when it
// runs), every variable read is written by a call or present in the
// state, every instance is known, and there is no cycle. Every problem is
// reported, naming the call and the variable.
func (g *Graph) Validate(file string, ts *Toolset, states map[string]jsonv.Value) error {
	var errs schema.ErrorList
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
		v, err := schema.NewValidator(t.Name, callSchema(t), schema.ValidatorOptions{})
		if err == nil {
			withTool := c.Params.Clone().Object()
			withTool.Insert(0, "_tool", jsonv.StringValue(c.Tool))
			if err := v.Validate(withTool.Value()); err != nil {
				for _, p := range err.(*schema.ValidationError).Problems {
					errs.Add(file, c.Path+p.Path, "%s: parameters break the tool's schema: %s", c.Name(), p.Message)
				}
			}
		}
		for _, name := range slices.Sorted(maps.Keys(c.Reads())) {
			read := c.Reads()[name]
			written := slices.ContainsFunc(g.Deps[i], func(e Edge) bool { return g.Calls[e.From].Output != nil && overlap(g.Calls[e.From].Output, read) })
			if _, err := Read(states[c.Instance], read); err != nil && !written {
				errs.Add(file, c.Path.Append(name), "%s reads †state.%s, but no call writes it and the state does not have it", c.Name(), strings.Join(read, "."))
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

// Dot writes the graph for Graphviz: one node per call, one edge per
// dependency labelled with its variable.
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
