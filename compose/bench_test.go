package compose

import (
	"os"
	"testing"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

// BenchmarkCompose composes seed 001's Vessel tool schema (StartProcess,
// Introspect_Mixin, Loop_Mixin, an instruction and a process step by
// fragment) with the registry's files already read: the cost of composing,
// not of disk.
func BenchmarkCompose(b *testing.B) {
	reg := exampleRegistry(b)
	doc, err := schema.ReadFile(exampleDir + "/tool.json")
	if err != nil {
		b.Fatal(err)
	}
	opts := Options{Registry: reg}
	if _, err := Flatten("tool.json", doc, opts); err != nil { // warm the registry cache
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Flatten("tool.json", doc, opts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkComposeParseEmit adds parsing the tool file and emitting the
// result: what "vibe compose" does per file.
func BenchmarkComposeParseEmit(b *testing.B) {
	reg := exampleRegistry(b)
	raw, err := os.ReadFile(exampleDir + "/tool.json")
	if err != nil {
		b.Fatal(err)
	}
	opts := Options{Registry: reg}
	b.ReportAllocs()
	for b.Loop() {
		doc, err := schema.Parse("tool.json", raw)
		if err != nil {
			b.Fatal(err)
		}
		out, err := Flatten("tool.json", doc, opts)
		if err != nil {
			b.Fatal(err)
		}
		_ = jsonv.MarshalIndent(out, "  ")
	}
}
