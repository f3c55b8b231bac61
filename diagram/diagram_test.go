package diagram_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"io"
	"strings"
	"testing"

	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/diagram"
	"github.com/augceo/vibe/internal/golden"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/registry"
)

const example = "../examples/schedule-meeting/registry"

func meeting(t *testing.T) *compile.Program {
	t.Helper()
	reg, err := registry.Open(example)
	if err != nil {
		t.Fatal(err)
	}
	d, err := reg.Document("aug:processes/schedule-meeting")
	if err != nil {
		t.Fatal(err)
	}
	p, err := compile.Compile(context.Background(), d.File, d.Value, compile.Options{Registry: reg, Actions: []string{"FetchAvailability_Activity", "sendInvitation"}})
	if err != nil {
		t.Fatal(err)
	}
	return p.Program()
}

func TestDOT(t *testing.T) {
	var b bytes.Buffer
	if err := diagram.DOT(&b, meeting(t)); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/schedule-meeting.dot", b.Bytes())
}

func TestSVG(t *testing.T) {
	for _, tc := range []struct {
		name  string
		marks diagram.Marks
	}{
		{"schedule-meeting", diagram.Marks{}},
		{"schedule-meeting-waiting", diagram.Marks{Done: []string{"LLM_llmContext1", "SERVER_serverContext1", "LLM_llmContext2"}, Current: "USER_userContext", Waiting: true, Links: true}},
		{"schedule-meeting-failed", diagram.Marks{Done: []string{"LLM_llmContext1"}, Current: "SERVER_serverContext1", Failed: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := diagram.SVG(&b, meeting(t), tc.marks); err != nil {
				t.Fatal(err)
			}
			wellFormed(t, b.Bytes())
			golden.Check(t, "testdata/"+tc.name+".svg", b.Bytes())
		})
	}
}

// wellFormed fails unless data is well-formed XML.
func wellFormed(t *testing.T, data []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(data))
	for {
		_, err := d.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, data)
		}
	}
}

// TestEscaped: names that are markup are drawn as text, in both drawings.
func TestEscaped(t *testing.T) {
	doc, err := jsonv.Parse([]byte(`{"type": "object", "properties": {
		"a<script>alert(1)</script>": {"type": "object", "properties": {"x": {"type": "string"}}},
		"b\"&": {"type": "object", "references": ["a<script>alert(1)</script>.x"], "properties": {"y": {"type": "string"}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := compile.Compile(context.Background(), "evil.json", doc, compile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var svg, dot bytes.Buffer
	diagram.SVG(&svg, p.Program(), diagram.Marks{})
	diagram.DOT(&dot, p.Program())
	wellFormed(t, svg.Bytes())
	if strings.Contains(svg.String(), "<script") || !strings.Contains(svg.String(), "a&lt;script&gt;alert(1)&lt;/script&gt;") || !strings.Contains(svg.String(), "b&#34;&amp;") {
		t.Errorf("names not escaped in the SVG:\n%s", svg.String())
	}
	if !strings.Contains(dot.String(), `"b\"&"`) || !strings.Contains(dot.String(), `[label="x"]`) {
		t.Errorf("DOT:\n%s", dot.String())
	}
}
