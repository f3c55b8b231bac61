package replay_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/internal/llmtest"
	"github.com/augceo/vibe/replay"
	"github.com/augceo/vibe/replay/record"
)

// BenchmarkReplay10k replays 10,000 recorded items of three — two model
// chunks, then a server step, then the third model chunk — against an
// edit of the third chunk's instructions, and runs the batch of the
// changed process again from scratch over the same 10,000 comments, to
// compare the two.
//
// The replay reads the records from their files (a group of 32 items to
// a file, as a batch's worker keeps them) and replays them: the first two
// chunks take their recorded answers, the server step its recorded
// output, and only the third is asked, 32 items to a call. The batch runs
// on an embedded engine already started (as a vibe serve's), K = 32 and C
// as vibe batch chooses it: every chunk is asked and every action run,
// and its worker keeps its records. Each has a test model of its own on
// the same cores that answers at once and counts a request's prompt
// tokens as its body's bytes / 4 (its answer's the same way).
//
// It reports, per run of each: wall time (replay-s, scratch-s), model
// requests, prompt and completion tokens, and the replay's share of the
// batch's (…-ratio). ns/op is both together.
//
//	go test ./replay -run XXX -bench BenchmarkReplay10k -benchtime 1x -count 3 -timeout 0
func BenchmarkReplay10k(b *testing.B) {
	const n, k = 10_000, 32
	ctx := context.Background()
	store := &record.Store{Dir: b.TempDir()}
	acts := &counter{}
	// Two items recorded on the engine, copied to 10,000 kept under the
	// batch "bench": what a replay reads of a batch of that many.
	two := recordedTwo(b, acts, store)
	recs := copies(two, "bench", n)
	for g := range slices.Chunk(recs, k) {
		if err := store.Keep(ctx, g); err != nil {
			b.Fatal(err)
		}
	}
	changed := oddThree(b)
	m := llmtest.NewServer(b, llmtest.Multiplexed(thirdOnly(b)), llmtest.Options{Tokens: true})
	start := prepare(b, acts, changed)
	opts := replay.Options{Name: start.Name, Program: start.Program, Provider: model(m.URL), Model: "test-model", Size: k}

	scratch := llmtest.NewServer(b, llmtest.Multiplexed(odd), llmtest.Options{Tokens: true})
	pc, stop := recordingEngine(b, scratch.URL, acts, &record.Store{Dir: b.TempDir()})
	defer stop()
	c := batch.NewClient(pc)
	pc.Hosts = c
	input := llmtest.Comments(n)

	var (
		replayWall, scratchWall time.Duration
		replayUse, scratchUse   [2]int64 // prompt, completion tokens
		rep                     *replay.Report
		sum                     *batch.Summary
		runs                    int
	)
	replayReqs, scratchReqs := m.Requests(), scratch.Requests()
	for b.Loop() {
		runs++
		t0 := time.Now()
		kept, err := store.Batch("bench")
		if err != nil {
			b.Fatal(err)
		}
		if rep, err = replay.Run(ctx, kept, opts); err != nil {
			b.Fatal(err)
		}
		replayWall += time.Since(t0)
		replayUse[0] += rep.Summary.Usage.PromptTokens
		replayUse[1] += rep.Summary.Usage.CompletionTokens

		t0 = time.Now()
		sum, err = c.Run(ctx, strings.NewReader(input), func(batch.Result) error { return nil },
			batch.Options{Process: changed, ID: fmt.Sprintf("scratch-%d", runs), Size: k})
		if err != nil {
			b.Fatal(err)
		}
		scratchWall += time.Since(t0)
		scratchUse[0] += sum.Usage.PromptTokens
		scratchUse[1] += sum.Usage.CompletionTokens
		if sum.Done != n {
			b.Fatalf("the batch from scratch did %d of %d items: %+v", sum.Done, n, sum)
		}
	}
	b.StopTimer()
	if s := rep.Summary; s.Replayed != n || s.Changed != n/2 || s.Asked["LLM_llmContext3"] != n || s.Requests != (n+k-1)/k {
		b.Fatalf("summary %+v", s)
	}
	per := func(x float64) float64 { return x / float64(runs) }
	rw, sw := per(replayWall.Seconds()), per(scratchWall.Seconds())
	rr, sr := per(float64(m.Requests()-replayReqs)), per(float64(scratch.Requests()-scratchReqs))
	rp, sp := per(float64(replayUse[0])), per(float64(scratchUse[0]))
	rc, sc := per(float64(replayUse[1])), per(float64(scratchUse[1]))
	for _, m := range []struct {
		unit, ratio     string
		replay, scratch float64
	}{
		{"s", "wall-ratio", rw, sw},
		{"requests", "requests-ratio", rr, sr},
		{"prompt-tokens", "prompt-ratio", rp, sp},
		{"completion-tokens", "completion-ratio", rc, sc},
	} {
		b.ReportMetric(m.replay, "replay-"+m.unit)
		b.ReportMetric(m.scratch, "scratch-"+m.unit)
		b.ReportMetric(m.replay/m.scratch, m.ratio)
	}
}
