package replay_test

import (
	"context"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/augceo/vibe/internal/llmtest"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/replay"
	"github.com/augceo/vibe/replay/record"
)

func TestWilson(t *testing.T) {
	tests := []struct {
		k, n      int
		low, high float64
	}{
		{37, 200, 0.1373, 0.2446},
		{2, 50, 0.0110, 0.1346},
		{0, 10, 0, 0.2775},
		{10, 10, 0.7225, 1},
		{0, 0, 0, 1},
	}
	for _, tc := range tests {
		low, high := replay.Wilson(tc.k, tc.n)
		if math.Abs(low-tc.low) > 5e-4 || math.Abs(high-tc.high) > 5e-4 {
			t.Errorf("Wilson(%d, %d) = %.4f–%.4f, want %.4f–%.4f", tc.k, tc.n, low, high, tc.low, tc.high)
		}
	}
}

// TestReplaySampleAndBaseline replays a seeded sample of a recorded batch
// — the same seed, the same items — and asks some of them again with the
// unchanged process of a model that answers every fourth assessment
// otherwise: the baseline reports that noise, a quarter, its requests
// counted apart, and the edit's effect beyond it.
func TestReplaySampleAndBaseline(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	const n, k = 40, 8
	ctx := context.Background()
	store := &record.Store{Dir: t.TempDir()}
	acts := &counter{}
	rec := llmtest.NewServer(t, llmtest.Multiplexed(llmtest.Verdict), llmtest.Options{})
	recs, err := store.Batch(recorded(t, rec.URL, acts, store, doc(t, "testdata/moderate.json"), n))
	if err != nil {
		t.Fatal(err)
	}
	acted := acts.calls()

	// The model: the changed process's enum makes every odd comment
	// mixed; the unchanged process's assessments come out neutral one
	// time in four, whichever item asks.
	var mu sync.Mutex
	assessed := 0
	noisy := llmtest.Multiplexed(func(step, prompt string, repair bool) string {
		if step == "assess" && !repair {
			mu.Lock()
			assessed++
			flip := assessed%4 == 0
			mu.Unlock()
			if flip {
				return `{"sentiment":"neutral"}`
			}
		}
		return llmtest.Verdict(step, prompt, repair)
	})
	edited := llmtest.Multiplexed(func(step, prompt string, repair bool) string {
		c, _ := strconv.Atoi(strings.TrimPrefix(prompt, "comment "))
		if step == "assess" && c%2 == 1 {
			return `{"sentiment":"mixed"}`
		}
		return llmtest.Verdict(step, prompt, repair)
	})
	m := llmtest.NewServer(t, func(name, body string) string {
		if strings.Contains(body, "mixed") {
			return edited(name, body)
		}
		return noisy(name, body)
	}, llmtest.Options{})
	pc := &process.Client{Actions: acts.actions().Names()}
	changed, _, err := pc.Prepare(ctx, doc(t, "testdata/moderate.json", `"enum": ["positive", "neutral", "negative"]`, `"enum": ["positive", "neutral", "negative", "mixed"]`))
	if err != nil {
		t.Fatal(err)
	}
	was, _, err := pc.Prepare(ctx, doc(t, "testdata/moderate.json"))
	if err != nil {
		t.Fatal(err)
	}
	opts := replay.Options{Name: changed.Name, Program: changed.Program, Provider: model(m.URL), Model: "test-model", Size: k}

	t.Run("sample", func(t *testing.T) {
		lines := func(seed uint64) []int {
			t.Helper()
			o := opts
			o.Sample, o.Seed = 20, seed
			rep, err := replay.Run(ctx, recs, o)
			if err != nil {
				t.Fatal(err)
			}
			s := rep.Summary
			if len(rep.Items) != 20 || s.Replayed != 20 || s.Sample == nil || *s.Sample != (replay.Sample{Items: 20, Of: n, Seed: seed}) {
				t.Fatalf("seed %d: %d items, summary %+v, sample %+v", seed, len(rep.Items), s, s.Sample)
			}
			var got []int
			odd := 0
			for _, it := range rep.Items {
				got = append(got, it.Line)
				odd += it.Line % 2
			}
			if !slices.IsSorted(got) {
				t.Errorf("seed %d: the sample is not in the records' order: %v", seed, got)
			}
			low, high := replay.Wilson(odd, 20)
			if sh := s.Share; sh == nil || sh.Changed != odd || sh.Of != 20 || sh.Low != low || sh.High != high {
				t.Errorf("seed %d: share %+v, want %d of 20, %.3f–%.3f", seed, sh, odd, low, high)
			}
			return got
		}
		a, b, c := lines(7), lines(7), lines(8)
		if !slices.Equal(a, b) {
			t.Errorf("the same seed chose %v, then %v", a, b)
		}
		if slices.Equal(a, c) {
			t.Errorf("seeds 7 and 8 chose the same sample %v", a)
		}
	})

	t.Run("baseline", func(t *testing.T) {
		const base = 24
		o := opts
		o.Baseline, o.Recorded = base, was.Program
		before := m.Requests()
		rep, err := replay.Run(ctx, recs, o)
		if err != nil {
			t.Fatal(err)
		}
		s := rep.Summary
		b := s.Baseline
		if b == nil || b.Items != base || b.Changed != base/4 || b.Share == nil || b.Share.Rate != 0.25 || len(rep.Baseline) != base {
			t.Fatalf("baseline %+v, want %d of %d changed", b, base/4, base)
		}
		if b.Fields["/assess/sentiment"] != base/4 || b.Fields["/decide/decision"] != 0 {
			t.Errorf("the baseline's fields: %v", b.Fields)
		}
		if s.Changed != n/2 || s.Share.Rate != 0.5 || s.Beyond == nil || *s.Beyond != 0.25 {
			t.Errorf("summary %+v, beyond %v; want %d changed, 25 %% beyond noise", s, s.Beyond, n/2)
		}
		if want := (n + k - 1) / k; s.Requests != want || b.Requests != base/k || m.Requests()-before != s.Requests+b.Requests {
			t.Errorf("%d requests, the baseline's %d, %d in all; want %d and %d apart", s.Requests, b.Requests, m.Requests()-before, want, base/k)
		}
		for i, it := range rep.Baseline {
			if it.Line != rep.Items[i].Line || !slices.Equal(it.Asked, []string{"LLM_llmContext1"}) {
				t.Fatalf("baseline item %d: %+v, want line %d asked again", i, it, rep.Items[i].Line)
			}
		}
		if acts.calls() != acted {
			t.Errorf("the replay ran the action %d times", acts.calls()-acted)
		}
		if _, err := replay.Run(ctx, recs, replay.Options{Program: changed.Program, Baseline: 3}); err == nil {
			t.Errorf("a baseline without the recorded process ran")
		}
	})
}
