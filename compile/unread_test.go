package compile

import (
	"context"
	"slices"
	"testing"

	"github.com/augceo/vibe/jsonv"
)

// TestUnreadInput: a model is sent only what its steps reference, so an
// input reaches a step only through a SERVER step that references nothing,
// which takes it whole; otherwise every field of it is named as read by
// no step.
func TestUnreadInput(t *testing.T) {
	reg := testRegistry(t)
	for _, tt := range []struct {
		name, pipeline, input string
		doc                   string // a process schema, instead of the pipeline
		want                  []string
	}{
		{"model steps only", `"Classify this" | Classify | Explain`, `{"k": 1, "j": [2]}`, ``, []string{"k", "j"}},
		{"a direct server call", `"Like post 42" | ComposeLike | SendLike`, `{"post": "p42"}`, ``, []string{"post"}},
		{"a server step whose inputs a model fills does not take it", `"Find her" | FindUser_Activity | Explain`, `{"k": 1}`, ``, []string{"k"}},
		{"a server step that references nothing takes it whole", ``, `{"k": 1}`, `{"type": "object", "properties": {
			"fetch_Activity": {"type": "object", "properties": {"output": {"type": ["object", "null"]}}},
			"summarize": {"type": "object", "references": ["fetch_Activity"], "properties": {"text": {"type": "string"}}}}}`, nil},
		{"an input that is no object", `"Classify this" | Classify`, `"some text"`, ``, []string{""}},
		{"no input", `"Classify this" | Classify`, ``, ``, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opts := Options{Registry: reg, Actions: []string{"FindUser_Activity", "SendLike", "fetch_Activity"}}
			var p *Process
			var err error
			if tt.doc != "" {
				p, err = Compile(context.Background(), "p.json", parse(t, tt.doc), opts)
			} else {
				p, err = CompilePipeline(context.Background(), tt.pipeline, opts)
			}
			if err != nil {
				t.Fatal(err)
			}
			var in jsonv.Value
			if tt.input != "" {
				in = parse(t, tt.input)
			}
			if got := p.Program().UnreadInput(in); !slices.Equal(got, tt.want) {
				t.Errorf("unread %q, want %q", got, tt.want)
			}
		})
	}
}
