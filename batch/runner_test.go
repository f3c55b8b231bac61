package batch_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/schema"
)

// TestStartRefusesBeforeSpooling: a batch whose process or pipeline would
// fail its run before the first line is refused by Runner.Start with the
// located errors, and nothing is spooled — not accepted, to be found
// missing later with its input left in the spool directory. The runner
// has no engine: a start that got past the check would panic.
func TestStartRefusesBeforeSpooling(t *testing.T) {
	var reg registry.Registry
	if err := reg.Add("aug:processes/moderate", moderate(t).Document); err != nil {
		t.Fatal(err)
	}
	inline := func(s string) process.StartOptions {
		v, err := jsonv.Parse([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return process.StartOptions{Document: v, File: "process"}
	}
	tests := []struct {
		name     string
		opts     process.StartOptions
		notFound bool
		want     string
	}{
		{"a process that does not compile", inline(`{"properties": {"a": {"references": ["nowhere"]}}}`), false,
			`process: /properties/a/references/0: step "a" references "nowhere", which names no step`},
		{"a pipeline that does not compile", process.StartOptions{Pipeline: `"Moderate" | Nope`}, false,
			`<pipeline>:1:14: unknown instruction "Nope"`},
		{"a fragment that names nothing", process.StartOptions{Process: "aug:processes/moderate#/nope/x"}, true,
			`fragment #/nope/x: /nope: no member "nope"`},
		{"a pattern that is no regular expression", inline(`{"properties": {"a": {"type": "object", "properties": {"b": {"type": "string", "pattern": "(["}}}}}`), false,
			`process: /properties/a/properties/b/pattern: not a valid JSON Schema: '([' is not valid regex`},
		{"a type that is no type", inline(`{"properties": {"a": {"type": "object", "properties": {"b": {"type": "strng"}}}}}`), false,
			`process: /properties/a/properties/b/type: not a valid JSON Schema: value must be one of`},
		{"a minimum that is no number", inline(`{"properties": {"a": {"type": "object", "properties": {"b": {"minimum": "5"}}}}}`), false,
			`process: /properties/a/properties/b/minimum: not a valid JSON Schema: got string, want number`},
		{"a step named \"\"", inline(`{"properties": {"": {"type": "object"}}}`), false,
			`process: /properties/: a step's name is empty`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "batches")
			r := &batch.Runner{Client: &batch.Client{Processes: &process.Client{Registry: &reg}}, Dir: dir, Logger: quiet()}
			_, _, err := r.Start(context.Background(), batch.Options{Process: tt.opts}, strings.NewReader("\"a comment\"\n"))
			var list schema.ErrorList
			if err == nil || !strings.Contains(err.Error(), tt.want) ||
				tt.notFound != errors.Is(err, registry.ErrNotFound) || !tt.notFound && !errors.As(err, &list) {
				t.Errorf("err = %v (%T), want %q (not found: %v)", err, err, tt.want, tt.notFound)
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the spool directory was made: %v", err)
			}
		})
	}
}
