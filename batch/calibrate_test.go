package batch_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/internal/llmtest"
	"github.com/augceo/vibe/llm/openai"
	"github.com/augceo/vibe/process"
)

// drift is a drifting model's answer past its position: the other verdict.
func drift(step, prompt string, repair bool) string {
	switch v := llmtest.Verdict(step, prompt, repair); v {
	case `{"sentiment":"negative"}`:
		return `{"sentiment":"positive"}`
	case `{"sentiment":"positive"}`:
		return `{"sentiment":"negative"}`
	case `{"decision":"hide"}`:
		return `{"decision":"publish"}`
	default:
		return `{"decision":"hide"}`
	}
}

// TestCalibrate: against a model whose answers drift past the 8th item of
// a call, calibration over 64 items chooses K between 2 and 8 and sees
// agreement at most 0.5 at K=16 and below 0.5 at K=32 and past; against
// one that does not drift, it chooses K of 32 or more. The choice is
// recorded by what makes the answers, and read back.
func TestCalibrate(t *testing.T) {
	for _, tc := range []struct {
		name     string
		model    func(name, body string) string
		low, top int
	}{
		{"drifting", llmtest.Drifting(8, llmtest.Verdict, drift), 2, 8},
		{"steady", llmtest.Multiplexed(llmtest.Verdict), 32, 64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model := llmtest.NewServer(t, tc.model, llmtest.Options{})
			p := openai.New(openai.Options{Model: "m", BaseURL: model.URL, APIKey: "k"})
			c := batch.NewClient(&process.Client{Actions: []string{"record"}})
			cal, err := c.Calibrate(context.Background(), p, batch.Options{Process: moderate(t)}, strings.NewReader(llmtest.Comments(200)), batch.CalibrateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(cal.Chunks) != 1 || cal.Sample != 64 {
				t.Fatalf("calibration %+v", cal)
			}
			cc := cal.Chunks[0]
			if !cc.Judged || cc.Floor != 1 || cc.ChosenK < tc.low || cc.ChosenK > tc.top {
				t.Errorf("chose K=%d (floor %.2f, %s), want %d to %d", cc.ChosenK, cc.Floor, cc.Why, tc.low, tc.top)
			}
			for _, r := range cc.Rows {
				switch {
				case tc.name != "drifting":
				case r.K == 16 && !r.Shuffled && r.Agreement > 0.5,
					r.K >= 32 && r.Agreement >= 0.5:
					t.Errorf("K=%d (shuffled %v): agreement %.2f", r.K, r.Shuffled, r.Agreement)
				}
				if r.Low > r.Agreement || r.High < r.Agreement || r.Requests == 0 {
					t.Errorf("row %+v", r)
				}
			}
			if last := cc.Rows[len(cc.Rows)-1]; !last.Shuffled || last.K != 64 {
				t.Errorf("the last row %+v: want the largest K shuffled", last)
			}
			// 64 items twice alone, then each K, then 64 shuffled.
			if want := 128 + 32 + 16 + 8 + 4 + 2 + 1 + 1; cal.Requests < want {
				t.Errorf("%d requests, want at least %d", cal.Requests, want)
			}

			store := &batch.CalibrationStore{Dir: t.TempDir(), Model: "m", Endpoint: model.URL}
			if err := store.Save(cal); err != nil {
				t.Fatal(err)
			}
			if k, ok := store.CalibratedK(cc.Chunk, cc.Schema, cc.System); !ok || k != cc.ChosenK {
				t.Errorf("read back K=%d %v, want %d", k, ok, cc.ChosenK)
			}
			other := &batch.CalibrationStore{Dir: store.Dir, Model: "another", Endpoint: model.URL}
			if _, ok := other.CalibratedK(cc.Chunk, cc.Schema, cc.System); ok {
				t.Error("another model read this one's calibration")
			}
			later := &batch.CalibrationStore{Dir: store.Dir, Model: "m", Endpoint: model.URL, Now: func() time.Time { return time.Now().Add(31 * 24 * time.Hour) }}
			if _, ok := later.CalibratedK(cc.Chunk, cc.Schema, cc.System); ok {
				t.Error("a calibration 31 days old still holds")
			}
		})
	}
}
