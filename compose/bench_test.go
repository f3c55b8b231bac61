package compose

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/augceo/vibe/registry"

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
	if _, err := Flatten(context.Background(), "tool.json", doc, opts); err != nil { // warm the registry cache
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Flatten(context.Background(), "tool.json", doc, opts); err != nil {
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
		out, err := Flatten(context.Background(), "tool.json", doc, opts)
		if err != nil {
			b.Fatal(err)
		}
		_ = jsonv.MarshalIndent(out, "  ")
	}
}

// longPipeline is a pipeline of n steps over four instructions, each step
// taking the one before: "Moderate" | Classify | Explain | Score | Decide | Classify | ….
func longPipeline(n int) string {
	names := []string{"Classify", "Explain", "Score", "Decide"}
	var b strings.Builder
	b.WriteString(`"Moderate"`)
	for i := range n {
		b.WriteString(" | ")
		b.WriteString(names[i%len(names)])
	}
	return b.String()
}

func benchmarkPipeline(b *testing.B, n int) {
	reg, err := registry.Open("../compile/testdata/registry")
	if err != nil {
		b.Fatal(err)
	}
	expr := longPipeline(n)
	opts := Options{Registry: reg, MaxSteps: n} // past MaxSteps too: the cost must stay linear

	b.ReportAllocs()
	for b.Loop() {
		if _, err := Pipeline(context.Background(), expr, opts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPipeline1000 composes a 1,000-step pipeline.
func BenchmarkPipeline1000(b *testing.B) { benchmarkPipeline(b, 1000) }

// BenchmarkPipeline2000 composes a 2,000-step pipeline (twice MaxSteps):
// twice the steps cost twice the time, not four times.
func BenchmarkPipeline2000(b *testing.B) { benchmarkPipeline(b, 2000) }

// BenchmarkRefBomb is how long composing takes to refuse a "billion
// laughs" of "$ref"s (30 levels, each referring twice to the one below):
// the work up to MaxInlined values, then the error.
func BenchmarkRefBomb(b *testing.B) {
	doc, err := schema.ReadFile("../cmd/vibe/testdata/bad/compose/ref-exponential-expansion.json")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Flatten(context.Background(), "bomb.json", doc, Options{}); err == nil {
			b.Fatal("the bomb composed")
		}
	}
}
