package compile

import (
	"context"
	"strings"
	"testing"

	"github.com/augceo/vibe/schema"
)

// BenchmarkCompile compiles the schedule-meeting process (flatten,
// classify, partition, resolve references, emit).
func BenchmarkCompile(b *testing.B) {
	doc, err := schema.ReadFile("../examples/schedule-meeting/registry/processes/schedule-meeting@2.json")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(context.Background(), "schedule-meeting.json", doc, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMultiplex32x4 projects a 4-step LLM chunk and multiplexes it
// over 32 items (128 properties), as one call of a batch sends.
func BenchmarkMultiplex32x4(b *testing.B) {
	p, err := CompilePipeline(context.Background(), `"Moderate" | Classify | Explain | Score | Decide`, Options{Registry: testRegistry(b)})
	if err != nil {
		b.Fatal(err)
	}
	def := p.Document.Lookup("$defs").Lookup(p.Chunks[0].Name)
	b.ReportAllocs()
	for b.Loop() {
		chunk := Project(def, ProjectOptions{Strict: true}).Schema
		bs, err := Batches(chunk, 32, Limits{}, MultiplexOptions{})
		if err != nil || len(bs) != 1 {
			b.Fatal(err, bs)
		}
		m, err := Multiplex(chunk, 32, MultiplexOptions{})
		if err != nil || len(schema.Properties(m).Names()) != 128 {
			b.Fatal(err)
		}
	}
}

// BenchmarkDemultiplex32x4 splits a 32-item answer back per item.
func BenchmarkDemultiplex32x4(b *testing.B) {
	steps := []string{"step1_classify", "step2_explain", "step3_score", "step4_decide"}
	var sb strings.Builder
	sb.WriteString("{")
	for i := range steps {
		for j := 1; j <= 32; j++ {
			if i+j > 1 {
				sb.WriteString(",")
			}
			sb.WriteString(`"` + ItemKey(i, j) + `":{"v":1}`)
		}
	}
	sb.WriteString("}")
	answer := parse(b, sb.String())
	b.ReportAllocs()
	for b.Loop() {
		if parts := Demultiplex(answer, steps, 32, nil); parts[31].Err != nil {
			b.Fatal(parts[31].Err)
		}
	}
}

// BenchmarkCompilePipeline2000 composes and compiles a 2,000-step pipeline
// (twice compose.MaxSteps): classify, partition, resolve and emit stay
// linear in the steps.
func BenchmarkCompilePipeline2000(b *testing.B) {
	names := []string{"Classify", "Explain", "Score", "Decide"}
	var sb strings.Builder
	sb.WriteString(`"Moderate"`)
	for i := range 2000 {
		sb.WriteString(" | " + names[i%len(names)])
	}
	opts := Options{Registry: testRegistry(b), MaxSteps: 2000}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := CompilePipeline(context.Background(), sb.String(), opts); err != nil {
			b.Fatal(err)
		}
	}
}
