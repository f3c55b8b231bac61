package diagram_test

import (
	"context"
	"fmt"
	"os"

	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/diagram"
	"github.com/augceo/vibe/jsonv"
)

// A process drawn as Graphviz DOT: a model drafts, a person approves, and
// the server sends what was drafted once it is approved.
func ExampleDOT() {
	doc, _ := jsonv.Parse([]byte(`{"type": "object", "properties": {
		"draft": {"type": "object", "properties": {"text": {"type": "string"}}},
		"approve_User": {"type": "object", "references": ["draft"], "properties": {"ok": {"type": "boolean"}}},
		"send_Activity": {"type": "object", "references": ["draft.text", "approve_User"], "properties": {"id": {"type": "string"}}}}}`))
	p, err := compile.Compile(context.Background(), "post.json", doc, compile.Options{Actions: []string{"send_Activity"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	diagram.DOT(os.Stdout, p.Program())
	// Output:
	// digraph process {
	//   rankdir=TB;
	//   node [shape=box, style="rounded,filled", fillcolor=white, fontname="Helvetica"];
	//   edge [fontname="Helvetica", fontsize=10];
	//   subgraph cluster_1 {
	//     label="1. LLM draft";
	//     style="rounded,filled"; fillcolor="#e0ecff"; color="#2f6fdb";
	//     "draft" [label="draft"];
	//   }
	//   subgraph cluster_2 {
	//     label="2. USER approve_User";
	//     style="rounded,filled"; fillcolor="#fff1d6"; color="#c27803";
	//     "approve_User" [label="approve_User"];
	//   }
	//   subgraph cluster_3 {
	//     label="3. SERVER send_Activity";
	//     style="rounded,filled"; fillcolor="#dcf5e3"; color="#1e8a4c";
	//     "send_Activity" [label="send_Activity\n→ send_Activity"];
	//   }
	//   "draft" -> "approve_User" [color="#9aa3ad", penwidth=2.5, arrowhead=none, weight=10];
	//   "approve_User" -> "send_Activity" [color="#9aa3ad", penwidth=2.5, arrowhead=none, weight=10];
	//   "draft" -> "approve_User";
	//   "draft" -> "send_Activity" [label="text"];
	//   "approve_User" -> "send_Activity";
	// }
}
