package batch

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strconv"
	"sync"

	"github.com/augceo/vibe/compare"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/llm"
)

// A live audit (Options.Audit) asks a share of the items of each LLM
// chunk again, one by one, while the batch runs, and compares the answer
// with the one it got among K others (package compare): an audited item
// whose answers differ takes its one-by-one answer, and the disagreement
// is counted. A sequential test (Wald's, at 5 % both ways) tells from the
// stream of audits whether the agreement is significantly below the
// threshold; when it is, K halves for the groups not started yet. Until
// the test has decided, few groups run at once and more items are
// audited, so that a K that does not hold is found before most of the
// items were asked at it.

// AuditCount is what the audits of one chunk came to: the items audited
// and those whose answers differed, and the audits' own model calls,
// counted apart from the batch's.
type AuditCount struct {
	Chunk     string    `json:"chunk"`
	Audited   int       `json:"audited"`
	Disagreed int       `json:"disagreed"`
	Requests  int       `json:"requests"`
	Usage     llm.Usage `json:"usage"`
}

// Agreement is the share of the audited items whose answers agreed.
func (a AuditCount) Agreement() float64 {
	if a.Audited == 0 {
		return 1
	}
	return 1 - float64(a.Disagreed)/float64(a.Audited)
}

// mergeAudits adds counts to known, chunk by chunk.
func mergeAudits(known, counts []AuditCount) []AuditCount {
	for _, a := range counts {
		i := slices.IndexFunc(known, func(k AuditCount) bool { return k.Chunk == a.Chunk })
		if i < 0 {
			known = append(known, a)
			continue
		}
		k := &known[i]
		k.Audited, k.Disagreed, k.Requests, k.Usage = k.Audited+a.Audited, k.Disagreed+a.Disagreed, k.Requests+a.Requests, k.Usage.Add(a.Usage)
	}
	return known
}

// audit asks each audited item of call c alone and compares: an item whose
// answers differ takes its one-by-one answer. Its calls are counted in
// f.out.Audit, not in the batch's requests.
func (f *filling) audit(ctx context.Context, c call) {
	var wg sync.WaitGroup
	for i := c.first; i < c.first+c.count; i++ {
		it := f.t.Items[i]
		f.mu.Lock()
		got := f.out.Items[i]
		f.mu.Unlock()
		if !it.Audit || got.Error != "" || len(got.Output.Turns) != 1 {
			continue // not audited, or already asked alone
		}
		wg.Go(func() {
			ro := f.opts
			ro.Instance = it.ID
			res, err := llm.Fill(ctx, f.p, llm.Task{Name: f.t.Chunk, System: f.t.System, Prompt: it.Prompt, Context: it.Context, Schema: f.t.Schema}, ro)
			f.mu.Lock()
			defer f.mu.Unlock()
			a := &f.out.Audit
			a.Chunk = f.t.Chunk
			if err != nil {
				return // no verdict: the batch's answer stands
			}
			a.Audited++
			a.Requests += res.Requests
			a.Usage = a.Usage.Add(res.Usage)
			if compare.Same(f.t.Schema, res.Value, got.Output.Value) {
				return
			}
			a.Disagreed++
			out := durable.FillOutput{Value: res.Value, Usage: got.Output.Usage.Add(res.Usage), Model: res.Model, Requests: got.Output.Requests + res.Requests,
				Replayed: res.Replayed, Turns: append(slices.Clone(got.Output.Turns), res.Turns...), Split: true, Thinking: res.Thinking, Metrics: res.Metrics}
			f.out.Items[i] = ItemFill{Output: out, Disagreed: true}
		})
	}
	wg.Wait()
}

// auditor keeps a run's audit: the sequential test of each chunk, the K it
// has come to, and whether the run may open up.
type auditor struct {
	rate      float64
	threshold float64
	mu        sync.Mutex
	chunks    map[string]*sprt
	sizes     []ChunkSize // the K each chunk asks now
	halved    []string    // what the test decided, for the summary
}

// sprt is one chunk's sequential probability ratio test: H0, the agreement
// is the threshold; H1, it is 0.2 below.
type sprt struct {
	llr     float64
	decided bool
}

// Wald's bounds at α = β = 0.05.
var (
	sprtUpper = math.Log(0.95 / 0.05)
	sprtLower = math.Log(0.05 / 0.95)
)

func newAuditor(rate, threshold float64, sizes []ChunkSize) *auditor {
	if threshold <= 0 {
		threshold = 0.98
	}
	a := &auditor{rate: rate, threshold: threshold, chunks: map[string]*sprt{}, sizes: slices.Clone(sizes)}
	for _, s := range sizes {
		if s.K > 1 {
			a.chunks[s.Chunk] = &sprt{}
		}
	}
	return a
}

// deciding reports whether a chunk's test has not decided yet: while one
// has not, few groups run at once, and more items are audited.
func (a *auditor) deciding() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, s := range a.chunks {
		if !s.decided {
			return true
		}
	}
	return false
}

// audits reports whether the item of line is audited: a share of the
// items, drawn by the line, four times the rate while a test decides.
func (a *auditor) audits(line int) bool {
	rate := a.rate
	if a.deciding() {
		rate = math.Min(1, 4*a.rate)
	}
	h := fnv.New32a()
	h.Write([]byte(strconv.Itoa(line)))
	return float64(h.Sum32()%1_000_000) < rate*1_000_000
}

// take adds a group's audits to the tests; a test that shows the agreement
// significantly below the threshold halves its chunk's K for the groups
// not started yet, and starts over.
func (a *auditor) take(counts []AuditCount) {
	a.mu.Lock()
	defer a.mu.Unlock()
	p0, p1 := a.threshold, math.Max(a.threshold-0.2, 0.01)
	agree, differ := math.Log(p1/p0), math.Log((1-p1)/(1-p0))
	for _, c := range counts {
		s := a.chunks[c.Chunk]
		if s == nil {
			continue
		}
		s.llr += float64(c.Audited-c.Disagreed)*agree + float64(c.Disagreed)*differ
		switch {
		case s.llr >= sprtUpper:
			i := slices.IndexFunc(a.sizes, func(cs ChunkSize) bool { return cs.Chunk == c.Chunk })
			if i < 0 {
				continue
			}
			k := Rung(a.sizes[i].K / 2)
			a.halved = append(a.halved, fmt.Sprintf("%s: K %d → %d (audited agreement significantly below %.2f)", c.Chunk, a.sizes[i].K, k, a.threshold))
			a.sizes[i] = ChunkSize{Chunk: c.Chunk, K: k, Why: fmt.Sprintf("halved by the audit from %d", a.sizes[i].K)}
			*s = sprt{decided: k <= 1}
			if k <= 1 {
				delete(a.chunks, c.Chunk)
			}
		case s.llr <= sprtLower:
			s.decided, s.llr = true, 0 // keeps K, and goes on watching
		}
	}
}

// now are the sizes the next groups ask at.
func (a *auditor) now() []ChunkSize {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.sizes)
}

// decisions are what the tests decided so far.
func (a *auditor) decisions() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.halved)
}
