package replay_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/augceo/vibe/internal/llmtest"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/replay"
	"github.com/augceo/vibe/replay/record"
)

// BenchmarkReplay10k replays 10,000 recorded items of three — two model
// chunks, then a server step, then the third model chunk — against an
// edit of the third chunk's instructions: the first two chunks take their
// recorded answers, the server step its recorded output, and only the
// third is asked, 32 items to a call of a local test model. It reports
// the requests and items of a replay; its wall is ns/op.
//
//	go test ./replay -run XXX -bench BenchmarkReplay10k -benchtime 3x -count 3
func BenchmarkReplay10k(b *testing.B) {
	const n, k = 10_000, 32
	ctx := context.Background()
	store := &record.Store{Dir: b.TempDir()}
	acts := &counter{}
	number := func(step, prompt string, _ bool) string {
		var c int
		fmt.Sscanf(prompt, "comment %d", &c)
		if step == "third" {
			return map[bool]string{true: `{"kind":"even"}`, false: `{"kind":"odd"}`}[c%2 == 0]
		}
		return fmt.Sprintf(`{"n":%d}`, c)
	}
	rec := llmtest.NewServer(b, llmtest.Multiplexed(number), llmtest.Options{})
	// Two items recorded on the engine, the odd and the even, copied to
	// 10,000: what a replay reads of a batch of that many.
	two, err := store.Batch(recorded(b, model(rec.URL), acts.actions(), store, doc(b, "testdata/three.json"), 2))
	if err != nil || len(two) != 2 {
		b.Fatalf("%d records, %v", len(two), err)
	}
	recs := make([]record.Record, n)
	for i := range recs {
		r := two[i%2]
		r.Line, r.ID, r.Prompt = i+1, fmt.Sprintf("bench-%d", i+1), fmt.Sprintf("comment %d", i+1)
		recs[i] = r
	}
	m := llmtest.NewServer(b, llmtest.Multiplexed(func(step, prompt string, repair bool) string {
		if step == "third" {
			return `{"kind":"odd"}`
		}
		b.Errorf("the replay asked the model for %s", step)
		return number(step, prompt, repair)
	}), llmtest.Options{})
	start, _, err := (&process.Client{Actions: acts.actions().Names()}).Prepare(ctx,
		doc(b, "testdata/three.json", `"enum": ["even", "odd"]`, `"enum": ["even", "odd"], "description": "Odd, whatever the number"`))
	if err != nil {
		b.Fatal(err)
	}
	opts := replay.Options{Name: start.Name, Program: start.Program, Provider: model(m.URL), Model: "test-model", Size: k}
	var rep *replay.Report
	before := m.Requests()
	runs := 0
	b.ResetTimer()
	for b.Loop() {
		if rep, err = replay.Run(ctx, recs, opts); err != nil {
			b.Fatal(err)
		}
		runs++
	}
	b.StopTimer()
	if s := rep.Summary; s.Replayed != n || s.Changed != n/2 || s.Asked["LLM_llmContext3"] != n || s.Requests != (n+k-1)/k {
		b.Fatalf("summary %+v", s)
	}
	b.ReportMetric(float64(m.Requests()-before)/float64(runs), "requests/op")
	b.ReportMetric(float64(rep.Summary.Replayed), "items/op")
}
