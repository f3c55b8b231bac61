package compose

import (
	"context"
	"testing"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/schema"
)

// TestSourcesLocate: a place of a composed schema is found in the file
// whose schema holds the same value there — the deepest such — and a value
// the composition made (a joined "required") stays where it is.
func TestSourcesLocate(t *testing.T) {
	reg := &registry.Registry{}
	for uri, text := range map[string]string{
		"aug:instructions/Ok":   `{"type": "object", "properties": {"reply": {"type": "string"}, "more": {"$ref": "aug:instructions/More"}}, "required": ["reply"]}`,
		"aug:instructions/More": `{"type": "object", "properties": {"n": {"type": "integer"}}}`,
	} {
		doc, _ := jsonv.Parse([]byte(text))
		if err := reg.Add(uri, doc); err != nil {
			t.Fatal(err)
		}
	}
	doc, _ := jsonv.Parse([]byte(`{"type": "object", "properties": {
		"a": {"$ref": "aug:instructions/Ok", "required": ["x"]},
		"b": {"$ref": "aug:instructions/Ok"}}}`))
	var sources Sources
	flat, err := Flatten(context.Background(), "p.json", doc, Options{Registry: reg, Sources: &sources})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ at, want string }{
		{"/properties/a/properties/reply/type", "aug:instructions/Ok: /properties/reply/type"},
		{"/properties/b/properties/reply", "aug:instructions/Ok: /properties/reply"},
		{"/properties/b/properties/more/properties/n/type", "aug:instructions/More: /properties/n/type"}, // inlined twice: the second shares the first's sources
		{"/properties/a/properties/more/properties/n/type", "aug:instructions/More: /properties/n/type"},
		{"/properties/a/required", "p.json: /properties/a/required"}, // joined: ["reply", "x"]
		{"/properties/a/required/0", "aug:instructions/Ok: /required/0"},
		{"/properties/a/required/1", "p.json: /properties/a/required/1"},
		{"/properties/nope", "p.json: /properties/nope"},
	} {
		e := &schema.Error{File: "p.json", Path: jsonv.Pointer(tt.at), Message: "m"}
		if got := sources.Locate(flat, e).Error(); got != tt.want+": m" {
			t.Errorf("%s: %s, want %s", tt.at, got, tt.want)
		}
	}
}
