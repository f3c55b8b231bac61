package batch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/augceo/vibe/compare"
	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/compose"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
)

// Calibration: is an item answered among K others answered as it is
// alone? The model is asked a sample of the items one by one, twice — how
// often it agrees with itself is the noise floor — then multiplexed at
// each K of the ladder, and once more at the largest K with the items in
// another order (an item's position can change its answer). An item agrees
// when its multiplexed answer is its first one-by-one answer by the
// comparator's rules (package compare). The chosen K is the largest whose
// agreement is at least the threshold and not significantly below the
// floor (a one-sided test at 5 %).

// CalibrateOptions configure Calibrate; the zero value samples 64 items,
// tries the whole ladder and asks for an agreement of 0.98.
type CalibrateOptions struct {
	// Sample is the items asked; 0 means 64.
	Sample int
	// Ks are the sizes tried, each a K of multiplexed calls; nil means
	// the ladder but 1 (Ladder), which the one-by-one answers are.
	Ks []int
	// Threshold is the agreement a K must reach; 0 means 0.98.
	Threshold float64
	// File names the input in errors.
	File string
}

// Calibration is what Calibrate found, per LLM chunk of the process.
type Calibration struct {
	Process string             `json:"process"`
	Chunks  []ChunkCalibration `json:"chunks"`
	// Requests and Usage are the calibration's own model calls.
	Requests int       `json:"requests"`
	Usage    llm.Usage `json:"usage"`
	Model    string    `json:"model,omitempty"`
	Sample   int       `json:"sample"`
}

// ChunkCalibration is one LLM chunk's calibration: the K chosen, the noise
// floor (the share of items the model answered alike twice, one by one),
// and a row per K tried. A chunk that is not judged — its fields are all
// free text with no rule (compare.Judged), or its context needs a server
// step or a person, which calibration does not run — keeps DefaultSize,
// and Why says why.
type ChunkCalibration struct {
	Chunk     string           `json:"chunk"`
	ChosenK   int              `json:"chosen_k"`
	Floor     float64          `json:"floor"`
	FloorLow  float64          `json:"floor_low"`
	FloorHigh float64          `json:"floor_high"`
	Judged    bool             `json:"judged"`
	Why       string           `json:"why"`
	Rows      []CalibrationRow `json:"rows"`
	// Schema and System are what the chunk is sent, by which the choice is
	// recorded (CalibrationStore).
	Schema jsonv.Value `json:"-"`
	System string      `json:"-"`
}

// CalibrationRow is one K tried: the share of items whose answer agreed
// with their one-by-one answer, its 95 % interval (Wilson's), whether it
// is significantly below the floor, and per item the prompt and completion
// tokens and the wall time of the calls. Shuffled rows asked the items in
// another order.
type CalibrationRow struct {
	K           int     `json:"k"`
	Agreement   float64 `json:"agreement"`
	Low         float64 `json:"low"`
	High        float64 `json:"high"`
	Shuffled    bool    `json:"shuffled"`
	Items       int     `json:"items"`
	Agreed      int     `json:"agreed"`
	BelowFloor  bool    `json:"below_floor"`
	Requests    int     `json:"requests"`
	PromptPer   float64 `json:"prompt_tokens_per_item"`
	OutputPer   float64 `json:"completion_tokens_per_item"`
	WallPerItem float64 `json:"wall_ms_per_item"`
	// Usage is the row's calls' tokens, for their cost.
	Usage llm.Usage `json:"usage"`
}

// Calibrate calibrates the LLM chunks of the process opts names on p with
// a sample of in's items: every call is made directly, one by one or
// multiplexed as a batch makes them (Fill), at p's own pace (its limiter,
// if any). Chunks are calibrated in program order up to the first that
// runs on a server or waits for a person: a later chunk's context holds
// what those steps bring, which calibration does not run.
func (c *Client) Calibrate(ctx context.Context, p llm.Provider, opts Options, in io.Reader, co CalibrateOptions) (*Calibration, error) {
	start, err := c.prepare(ctx, opts)
	if err != nil {
		return nil, err
	}
	co = co.withDefaults()
	items, err := sample(in, cmpOr(co.File, "input"), co.Sample)
	if err != nil {
		return nil, err
	}
	if len(items) < 2 {
		return nil, fmt.Errorf("%d items in the input: calibration needs at least 2", len(items))
	}
	cal := &Calibration{Process: start.Name, Sample: len(items)}
	// Each item's process state as the chunks fill it, one by one.
	states := make([]jsonv.Value, len(items))
	for i, it := range items {
		st := jsonv.NewObject(1)
		if !it.Input.IsNull() {
			st.Set("input", it.Input)
		}
		states[i] = st.Value()
	}
	blocked := ""
	for idx := range start.Program.Chunks {
		ch := &start.Program.Chunks[idx]
		if ch.Kind != compile.LLM {
			if blocked == "" {
				blocked = fmt.Sprintf("its context comes after %s, which calibration does not run", ch.Name)
			}
			continue
		}
		cc := ChunkCalibration{Chunk: ch.Name, ChosenK: DefaultSize, Schema: ch.Schema, System: start.System}
		switch {
		case blocked != "":
			cc.Why = "not judged: " + blocked
		case ch.Loop != nil:
			cc.Why = "not judged: a loop's chunk is asked one item at a time"
		case !compare.Judged(ch.Schema):
			cc.Why = "not judged: its fields are free text with no rule to compare them (the schema keyword \"compare\")"
		default:
			cc.Judged = true
			if err := c.calibrateChunk(ctx, p, start.Prompt, items, states, ch, &cc, co, cal); err != nil {
				return cal, fmt.Errorf("calibrate %s: %w", ch.Name, err)
			}
		}
		if !cc.Judged {
			cc.ChosenK = DefaultSize
		}
		cal.Chunks = append(cal.Chunks, cc)
		if !cc.Judged && blocked == "" {
			blocked = fmt.Sprintf("its context comes after %s, which was not judged", ch.Name)
		}
	}
	return cal, nil
}

func (co CalibrateOptions) withDefaults() CalibrateOptions {
	if co.Sample <= 0 {
		co.Sample = 64
	}
	if len(co.Ks) == 0 {
		co.Ks = Ladder[1:]
	}
	if co.Threshold <= 0 {
		co.Threshold = 0.98
	}
	return co
}

func cmpOr(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// calibrateChunk asks ch of the items one by one twice, then multiplexed
// at each K, and chooses K; the items' states take the first one-by-one
// answers, for the chunks after.
func (c *Client) calibrateChunk(ctx context.Context, p llm.Provider, prompt string, items []Item, states []jsonv.Value, ch *compile.ProgramChunk, cc *ChunkCalibration, co CalibrateOptions, cal *Calibration) error {
	fill := FillInput{Group: "calibrate", Chunk: ch.Name, StepContext: ch.StepContext(), System: cc.System, Schema: ch.Schema}
	for i, it := range items {
		mctx, err := jsonv.Pick(states[i], pointers(ch.References)...)
		if err != nil {
			return fmt.Errorf("line %d: %w", it.Line, err)
		}
		fill.Items = append(fill.Items, FillItem{ID: fmt.Sprintf("line-%d", it.Line), Prompt: cmpOr(it.Prompt, prompt), Context: mctx})
	}
	first, _, err := c.oneByOne(ctx, p, fill, cal)
	if err != nil {
		return err
	}
	second, row, err := c.oneByOne(ctx, p, fill, cal)
	if err != nil {
		return err
	}
	agreed := 0
	for i := range first {
		if first[i].ok && second[i].ok && compare.Same(ch.Schema, first[i].value, second[i].value) {
			agreed++
		}
	}
	n := len(items)
	cc.Floor = float64(agreed) / float64(n)
	cc.FloorLow, cc.FloorHigh = wilson(agreed, n)
	row.K, row.Agreement, row.Low, row.High, row.Agreed, row.Items = 1, cc.Floor, cc.FloorLow, cc.FloorHigh, agreed, n
	cc.Rows = append(cc.Rows, row)
	chosen, why := 1, "no K agreed enough"
	if cc.Floor < co.Threshold {
		why = fmt.Sprintf("the model agrees with itself on only %.2f of the items, below the threshold %.2f", cc.Floor, co.Threshold)
	}
	for _, k := range co.Ks {
		row, err := c.multiplexed(ctx, p, fill, k, false, first, ch.Schema, cal)
		if err != nil {
			return err
		}
		row.BelowFloor = belowFloor(row.Agreed, row.Items, agreed, n)
		cc.Rows = append(cc.Rows, row)
		if row.Agreement >= co.Threshold && !row.BelowFloor {
			chosen, why = k, fmt.Sprintf("the largest K agreeing at least %.2f and not significantly below the floor (one-sided test at 5%%)", co.Threshold)
		}
	}
	if len(co.Ks) > 0 {
		kmax := slices.Max(co.Ks)
		row, err := c.multiplexed(ctx, p, fill, kmax, true, first, ch.Schema, cal)
		if err != nil {
			return err
		}
		row.BelowFloor = belowFloor(row.Agreed, row.Items, agreed, n)
		cc.Rows = append(cc.Rows, row)
	}
	cc.ChosenK, cc.Why = chosen, why
	// The chunks after see what this one answered, one by one.
	for i := range items {
		if !first[i].ok {
			continue
		}
		for si := range ch.Steps {
			s := &ch.Steps[si]
			if v, ok := first[i].value.Get(s.Name); ok {
				jsonv.SetAll(states[i], s.State.Pointer(), compose.Split(v).Output)
			}
		}
	}
	return nil
}

// answer is one item's answer in a calibration: its value, or none.
type answer struct {
	value jsonv.Value
	ok    bool
}

// oneByOne asks each item of fill alone, at once (p paces them), and
// returns their answers and the row of what it cost.
func (c *Client) oneByOne(ctx context.Context, p llm.Provider, fill FillInput, cal *Calibration) ([]answer, CalibrationRow, error) {
	out := make([]answer, len(fill.Items))
	var (
		mu   sync.Mutex
		row  CalibrationRow
		errs []error
		wg   sync.WaitGroup
	)
	began := time.Now()
	for i, it := range fill.Items {
		wg.Go(func() {
			res, err := llm.Fill(ctx, p, llm.Task{Name: fill.Chunk, System: fill.System, Prompt: it.Prompt, Context: it.Context, Schema: fill.Schema}, llm.Options{MaxRepairs: -1, Logger: quietLogger})
			mu.Lock()
			defer mu.Unlock()
			var ie *llm.InvalidAnswerError
			switch {
			case err == nil:
				out[i] = answer{value: res.Value, ok: true}
				row.Requests += res.Requests
				row.Usage = row.Usage.Add(res.Usage)
			case errors.As(err, &ie):
				row.Requests += ie.Requests
				row.Usage = row.Usage.Add(ie.Usage)
			default:
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return nil, row, errs[0]
	}
	finishRow(&row, len(fill.Items), time.Since(began), cal)
	return out, row, nil
}

// multiplexed asks fill's items in calls of k (in another order when
// shuffled) and compares each item's part with its one-by-one answer.
func (c *Client) multiplexed(ctx context.Context, p llm.Provider, fill FillInput, k int, shuffled bool, alone []answer, s jsonv.Value, cal *Calibration) (CalibrationRow, error) {
	order := make([]int, len(fill.Items))
	for i := range order {
		order[i] = i
	}
	if shuffled {
		r := rand.New(rand.NewPCG(uint64(k), uint64(len(order))))
		r.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
	}
	in := fill
	in.Items = make([]FillItem, len(order))
	for i, o := range order {
		in.Items[i] = fill.Items[o]
	}
	in.Call.Sizes = map[string]int{fill.Chunk: k}
	began := time.Now()
	out, err := Fill(ctx, p, in, llm.Options{Logger: quietLogger})
	if err != nil {
		return CalibrationRow{}, err
	}
	row := CalibrationRow{K: k, Shuffled: shuffled, Items: len(order), Requests: out.Requests, Usage: out.Usage}
	for i, o := range order {
		it := out.Items[i]
		// Agreement is the multiplexed call's first answer: an item whose
		// part was repaired or asked again alone did not agree.
		if it.Error == "" && len(it.Output.Turns) == 1 && alone[o].ok && compare.Same(s, alone[o].value, it.Output.Value) {
			row.Agreed++
		}
	}
	row.Agreement = float64(row.Agreed) / float64(row.Items)
	row.Low, row.High = wilson(row.Agreed, row.Items)
	finishRow(&row, len(order), time.Since(began), cal)
	return row, nil
}

// finishRow sets a row's figures per item and counts its calls in cal.
func finishRow(row *CalibrationRow, n int, wall time.Duration, cal *Calibration) {
	row.PromptPer = float64(row.Usage.PromptTokens) / float64(n)
	row.OutputPer = float64(row.Usage.CompletionTokens) / float64(n)
	row.WallPerItem = float64(wall.Milliseconds()) / float64(n)
	cal.Requests += row.Requests
	cal.Usage = cal.Usage.Add(row.Usage)
}

// wilson is the 95 % Wilson score interval of k successes in n.
func wilson(k, n int) (low, high float64) {
	if n == 0 {
		return 0, 1
	}
	const z = 1.959964
	p, fn := float64(k)/float64(n), float64(n)
	d := 1 + z*z/fn
	c := p + z*z/(2*fn)
	r := z * math.Sqrt(p*(1-p)/fn+z*z/(4*fn*fn))
	return math.Max(0, (c-r)/d), math.Min(1, (c+r)/d)
}

// belowFloor reports whether an agreement of k in n is significantly below
// the floor of f in m: a one-sided two-proportion z-test at 5 %.
func belowFloor(k, n, f, m int) bool {
	p1, p2 := float64(k)/float64(n), float64(f)/float64(m)
	if p1 >= p2 {
		return false
	}
	pooled := float64(k+f) / float64(n+m)
	se := math.Sqrt(pooled * (1 - pooled) * (1/float64(n) + 1/float64(m)))
	if se == 0 {
		return true
	}
	return (p2-p1)/se > 1.644854
}

// sample reads in's items and keeps n of them, spread over the whole
// input by a reservoir with a fixed seed: the same input gives the same
// sample.
func sample(in io.Reader, file string, n int) ([]Item, error) {
	lr := newLineReader(in, file)
	r := rand.New(rand.NewPCG(1, 2))
	var kept []Item
	seen := 0
	err := lr.valid(func(it Item) {
		seen++
		if len(kept) < n {
			kept = append(kept, it)
		} else if j := r.IntN(seen); j < n {
			kept[j] = it
		}
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(kept, func(a, b Item) int { return a.Line - b.Line })
	return kept, nil
}

// quietLogger takes calibration's own records of each call: its rows say
// what they came to.
var quietLogger = slog.New(slog.DiscardHandler)

// pointers are the state pointers of paths.
func pointers(paths []compile.Path) []jsonv.Pointer {
	ps := make([]jsonv.Pointer, len(paths))
	for i, p := range paths {
		ps[i] = p.Pointer()
	}
	return ps
}
