package batch_test

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/internal/llmtest"
)

var benchItems = flag.Int("batch.items", 1000, "items per run of BenchmarkBatch")

// BenchmarkBatch runs a batch of -batch.items comments (one LLM chunk of
// two steps, then a server step) through the embedded engine at K = 1, 8
// and 32 items per call, against a test model that answers at once and one
// that takes 200 ms; about 256 items are in flight in each (C = 256/K).
// It reports items/s, the model calls per run and the prompt tokens per
// item (the request's bytes / 4, counted at the model).
//
//	go test ./batch -run XXX -bench BenchmarkBatch -benchtime 1x -batch.items 10000
func BenchmarkBatch(b *testing.B) {
	input := llmtest.Comments(*benchItems)
	for _, latency := range []time.Duration{0, 200 * time.Millisecond} {
		for _, k := range []int{1, 8, 32} {
			b.Run(fmt.Sprintf("latency=%s/K=%d", latency, k), func(b *testing.B) {
				model := llmtest.NewServer(b, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{Tokens: true, Delay: latency})
				c := stack(b, model.URL, (&recorder{}).actions())
				var sum *batch.Summary
				run := 0
				for b.Loop() {
					run++
					var err error
					sum, err = c.Run(context.Background(), strings.NewReader(input), func(batch.Result) error { return nil },
						batch.Options{Process: moderate(b), ID: fmt.Sprintf("bench-%d", run), Size: k, Concurrency: max(1, 256/k)})
					if err != nil {
						b.Fatal(err)
					}
					if sum.Done != *benchItems {
						b.Fatalf("%d of %d items done", sum.Done, *benchItems)
					}
				}
				b.ReportMetric(float64(sum.Lines)/sum.Elapsed.Seconds(), "items/s")
				b.ReportMetric(float64(sum.Requests), "calls/op")
				b.ReportMetric(float64(sum.Usage.PromptTokens)/float64(sum.Lines), "prompt-tokens/item")
			})
		}
	}
}
