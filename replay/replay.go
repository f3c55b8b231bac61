package replay

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/compare"
	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/compose"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/replay/record"
)

// Options are what Run replays against and how it asks the model.
type Options struct {
	// Name is the changed process's name, for the model's metrics.
	Name string
	// Program is the changed process, compiled (process.Client.Prepare).
	Program *compile.Program
	// Provider asks the model the chunks that changed; nil fails the
	// items that need it.
	Provider llm.Provider
	// Model is the model's name (llm.ModelOf(Provider)): a chunk recorded
	// with another model is asked again; a provider's dated name of the
	// model (gpt-4o-2024-08-06 for gpt-4o) is the model. "" takes any
	// recorded model.
	Model string
	// Size is K, the items one call asks at most; 0 means
	// batch.DefaultSize.
	Size int
	// Call shapes the calls: limits and, with ProviderBatch, the
	// provider's Batch API — a chunk's calls go in one provider batch
	// (batch.FillThrough), waited for in the command's process.
	Call batch.CallOptions
	// LLM are the model call's options (repairs).
	LLM llm.Options
	// Concurrency is how many calls run at once; 0 means 4.
	Concurrency int
	// Answers, when set, is a file where the model's answers to changed
	// chunks are kept as they come: a replay run again with the same
	// file (after a kill) asks none of them again.
	Answers string
	// Missing are the items asked for that have no record: they are
	// reported as not replayable, after the others.
	Missing []Missing
	// Sample, when above 0 and below the number of records, replays that
	// many of them, chosen at random by Seed (the same seed, the same
	// sample), in the records' order; the missing items are still listed.
	Sample int
	Seed   uint64
	// Baseline, when above 0, asks that many of the items replayed (the
	// first ones) again with Recorded, the process as it was recorded:
	// the LLM chunks the changed process asked are asked again, K to a
	// call as the changed process asked them, the others reused as it
	// reused them — how often the model answers the unchanged process
	// otherwise (Summary.Baseline). Its answers are kept apart
	// (BaselineAnswers).
	Baseline        int
	Recorded        *compile.Program
	BaselineAnswers string
	// Spent, when set, is told what each model call of a changed chunk
	// spent as it comes back: its requests, tokens and model. It may be
	// called from several goroutines at once.
	Spent func(requests int, usage llm.Usage, model string)
	// Progress, when set, is told how far the replay has got: as it
	// starts, after each chunk and as each model call comes back. It is
	// called one call at a time. A baseline's work is not told.
	Progress func(Progress)
}

// Progress is how far a replay has got (Options.Progress).
type Progress struct {
	// Items are the items with a record to replay; Done those whose
	// replay has ended: stopped, or past the process's last chunk (an
	// item asked the last chunk counts as its call comes back).
	Items, Done int
	// Changed are the items found changed so far: an answer differs, or
	// a step needs the server or a person. An answer counts once the
	// chunk's answers have all come back.
	Changed int
	// Requests are the model requests so far, Usage their tokens.
	Requests int
	Usage    llm.Usage
}

// tracker tells Options.Progress how far a replay has got; a nil tracker
// tells nothing.
type tracker struct {
	mu   sync.Mutex
	p    Progress
	tell func(Progress)
}

func newTracker(tell func(Progress), items int) *tracker {
	if tell == nil {
		return nil
	}
	return &tracker{p: Progress{Items: items}, tell: tell}
}

// update changes the progress with f and tells it.
func (t *tracker) update(f func(p *Progress)) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	f(&t.p)
	t.tell(t.p)
}

// count sets Done and Changed from the runs, before a chunk's calls: ask
// are the runs the chunk asks the model, and last says it is the
// process's last chunk, so that the runs not asked are done.
func (t *tracker) count(runs, ask []*run, last bool) {
	if t == nil {
		return
	}
	asking := make(map[*run]bool, len(ask))
	for _, r := range ask {
		asking[r] = true
	}
	done, changed := 0, 0
	for _, r := range runs {
		if !r.active || last && !asking[r] {
			done++
		}
		if len(r.item.Changes) > 0 || r.item.Outcome == NeedsServer || r.item.Outcome == NeedsPerson {
			changed++
		}
	}
	t.update(func(p *Progress) { p.Done, p.Changed = done, changed })
}

// Missing is an item asked for that has no record.
type Missing struct {
	ID   string `json:"id"`
	Line int    `json:"line,omitempty"`
}

// The outcomes of an item.
const (
	// Same: every answer replayed is the same answer.
	Same = "same"
	// Changed: some answer differs (Item.Changes).
	Changed = "changed"
	// NeedsServer and NeedsPerson: the item stopped at a step its record
	// cannot answer; it counts as changed.
	NeedsServer = "needs the server"
	NeedsPerson = "needs a person"
	// Failed: the model could not answer the item's changed chunk.
	Failed = "failed"
	// NoRecord: nothing was kept of the item; it was not replayed.
	NoRecord = "no record"
)

// Item is one item's replay: its report line.
type Item struct {
	Line int    `json:"line,omitempty"`
	ID   string `json:"id"`
	// Changed is true when an answer differs, or the item needs a server
	// or a person: what --fail-on-change counts.
	Changed bool             `json:"changed"`
	Outcome string           `json:"outcome"`
	Changes []compare.Change `json:"changes,omitempty"`
	// Route says when the item takes another way: a chunk it now reaches
	// that its record did not, or one it no longer does.
	Route []string `json:"route,omitempty"`
	// Needs says what a step needs that the record cannot give: the step
	// and what changed.
	Needs string `json:"needs,omitempty"`
	// Recorded is the status the item's record ended in; an item that did
	// not complete is replayed up to where it got.
	Recorded string `json:"recorded,omitempty"`
	Error    string `json:"error,omitempty"`
	// Asked are the chunks asked of the model again; the others took
	// their recorded answers.
	Asked []string `json:"asked,omitempty"`
}

// Report is a replay's outcome: an item per record, in the records'
// order, then the missing ones, and the counts.
type Report struct {
	Items   []Item  `json:"items"`
	Summary Summary `json:"summary"`
	// Baseline are the items asked again with the unchanged process
	// (Options.Baseline).
	Baseline []Item `json:"baseline,omitempty"`
}

// Summary counts a replay.
type Summary struct {
	Items    int `json:"items"`    // items reported
	Replayed int `json:"replayed"` // items with a record
	Same     int `json:"same"`
	Changed  int `json:"changed"` // answers that differ
	// NeedsServer and NeedsPerson stopped at a step; Failed, NoRecord.
	NeedsServer int `json:"needsServer"`
	NeedsPerson int `json:"needsPerson"`
	Failed      int `json:"failed"`
	NoRecord    int `json:"noRecord"`
	// Unfinished are the items whose records had not completed, replayed
	// up to where they got; UnfinishedBy counts them by the status they
	// were recorded in (failed, waiting, …).
	Unfinished   int            `json:"unfinished"`
	UnfinishedBy map[string]int `json:"unfinishedBy,omitempty"`
	// Fields counts the changes by path, Moves the values that moved
	// ("/assess/sentiment: positive → negative").
	Fields map[string]int `json:"fields,omitempty"`
	Moves  map[string]int `json:"moves,omitempty"`
	// Asked counts the items asked again by chunk, Reused those that took
	// their recorded answer.
	Asked  map[string]int `json:"asked,omitempty"`
	Reused map[string]int `json:"reused,omitempty"`
	// Requests are the model requests the replay made, Usage their
	// tokens; ActionsSkipped the actions answered from records or not
	// started.
	Requests int `json:"requests"`
	// Resumed are the answers to changed chunks an earlier run of the
	// replay had asked (Options.Answers), not asked again.
	Resumed        int       `json:"resumed,omitempty"`
	Usage          llm.Usage `json:"usage"`
	ActionsSkipped int       `json:"actionsSkipped"`
	// Sample says which sample was replayed (Options.Sample): of how many
	// records, by which seed.
	Sample *Sample `json:"sample,omitempty"`
	// Share is the changed share of the items replayed, with its 95 %
	// interval.
	Share *Share `json:"share,omitempty"`
	// Baseline is what the unchanged process changed, asked again
	// (Options.Baseline): the model's own noise. Its requests are not in
	// Requests.
	Baseline *Baseline `json:"baseline,omitempty"`
	// Beyond is the edit's effect beyond the model's noise: Share's rate
	// less Baseline's, with a baseline.
	Beyond *float64 `json:"beyondNoise,omitempty"`
}

// AnyChanged reports whether an item changed (the --fail-on-change gate).
func (r *Report) AnyChanged() bool {
	return slices.ContainsFunc(r.Items, func(it Item) bool { return it.Changed })
}

// ChangedAt reports whether an item's answer changed at path, or below it.
func (r *Report) ChangedAt(path string) bool {
	p := jsonv.Pointer(path)
	for _, it := range r.Items {
		for _, c := range it.Changes {
			if c.Path == p || len(c.Path) > len(p) && c.Path[:len(p)] == p && c.Path[len(p)] == '/' {
				return true
			}
		}
	}
	return false
}

// run is one item under replay.
type run struct {
	rec    *record.Record
	item   Item
	state  jsonv.Value
	active bool
}

// Run replays recs against opts.Program: chunk by chunk, every item at
// once, asking the model only the chunks that changed. It runs no action
// and asks no person. Its error is the context's, or the options'; what
// goes wrong for one item is that item's outcome. With Options.Sample it
// replays a seeded sample of recs; with Options.Baseline it then asks
// some of them again with the recorded process, the model's own noise
// (Summary.Baseline).
func Run(ctx context.Context, recs []record.Record, opts Options) (*Report, error) {
	if opts.Program == nil || len(opts.Program.Chunks) == 0 {
		return nil, errors.New("replay: no changed process to replay against (Options.Program)")
	}
	if opts.Baseline > 0 && (opts.Recorded == nil || len(opts.Recorded.Chunks) == 0) {
		return nil, errors.New("replay: a baseline needs the process as it was recorded (Options.Recorded)")
	}
	of := len(recs)
	recs = sample(recs, opts.Sample, opts.Seed)
	rep, asked, err := replayAll(ctx, recs, opts, nil, newTracker(opts.Progress, len(recs)))
	if err != nil {
		return nil, err
	}
	s := &rep.Summary
	if opts.Sample > 0 {
		s.Sample = &Sample{Items: len(recs), Of: of, Seed: opts.Seed}
	}
	s.Share = shareOf(rep.Items)
	if opts.Baseline > 0 && len(recs) > 0 {
		bopts := opts
		bopts.Program, bopts.Missing, bopts.Answers = opts.Recorded, nil, opts.BaselineAnswers
		// The chunks the changed process asked again are asked again with
		// the recorded one, the others reused as the replay reused them:
		// the noise the replay's own calls carry.
		base, _, err := replayAll(ctx, recs[:min(opts.Baseline, len(recs))], bopts, asked, nil)
		if err != nil {
			return nil, fmt.Errorf("replay: the baseline: %w", err)
		}
		rep.Baseline = base.Items
		b := base.Summary
		s.Baseline = &Baseline{Items: b.Replayed, Changed: b.Changed + b.NeedsServer + b.NeedsPerson, Failed: b.Failed,
			Share: shareOf(base.Items), Fields: b.Fields, Requests: b.Requests, Resumed: b.Resumed, Usage: b.Usage}
		if s.Share != nil && s.Baseline.Share != nil {
			d := s.Share.Rate - s.Baseline.Share.Rate
			s.Beyond = &d
		}
	}
	return rep, nil
}

// replayAll replays recs against opts.Program; the LLM chunks named in
// reask are asked again whatever their records hold (a baseline). It
// returns the report and the LLM chunks it asked the model, or tried to.
// It tells t how far it has got.
func replayAll(ctx context.Context, recs []record.Record, opts Options, reask map[string]bool, t *tracker) (*Report, map[string]bool, error) {
	asked := map[string]bool{}
	runs := make([]*run, len(recs))
	for i := range recs {
		r := &run{rec: &recs[i], active: true, state: jsonv.NewObject(4).Value(),
			item: Item{Line: recs[i].Line, ID: recs[i].ID, Recorded: recs[i].Status}}
		if !recs[i].Input.IsNull() {
			r.state.Object().Set("input", recs[i].Input)
		}
		runs[i] = r
	}
	kept, err := openAnswers(opts.Answers)
	if err != nil {
		return nil, nil, err
	}
	sum := Summary{Fields: map[string]int{}, Moves: map[string]int{}, Asked: map[string]int{}, Reused: map[string]int{}}
	t.count(runs, nil, false)
	for i := range opts.Program.Chunks {
		ch := &opts.Program.Chunks[i]
		var ask []*run
		for _, r := range runs {
			if !r.active {
				continue
			}
			rc := r.rec.Chunk(ch.Name)
			if rc == nil && r.rec.Status != "completed" {
				r.active = false // the recording stopped before: so does its replay
				continue
			}
			switch ch.Kind {
			case compile.LLM:
				mctx, err := pick(r.state, ch.References)
				if err != nil {
					r.stop(Failed, fmt.Sprintf("chunk %s: %v", ch.Name, err))
					continue
				}
				if !reask[ch.Name] && reusable(rc, ch, r.rec.System, mctx, opts.Model) {
					sum.Reused[ch.Name]++
					if err := r.keepLLM(ch, rc, rc.Answer, &sum); err != nil {
						r.stop(Failed, err.Error())
					}
					continue
				}
				ask = append(ask, r)
			case compile.Server:
				r.server(ch, rc, &sum)
			case compile.User:
				if rc == nil || rc.Kind != compile.User || rc.Answer.Object() == nil {
					r.item.Needs = fmt.Sprintf("chunk %s: a person's step the recorded run did not reach", ch.Name)
					r.stop(NeedsPerson, "")
					continue
				}
				if err := keepChunk(r.state, ch, rc.Answer); err != nil {
					r.stop(Failed, err.Error())
				}
			}
		}
		last := i == len(opts.Program.Chunks)-1
		t.count(runs, ask, last)
		if len(ask) > 0 {
			asked[ch.Name] = true
			if err := fill(ctx, ch, ask, opts, kept, &sum, t, last); err != nil {
				return nil, nil, err
			}
		}
	}
	t.count(runs, nil, true)
	rep := &Report{}
	for _, r := range runs {
		it := &r.item
		if it.Outcome == "" {
			it.Outcome = Same
			if len(it.Changes) > 0 {
				it.Outcome = Changed
			}
		}
		for _, c := range r.rec.Chunks {
			if !slices.ContainsFunc(opts.Program.Chunks, func(p compile.ProgramChunk) bool { return p.Name == c.Name }) {
				it.Route = append(it.Route, fmt.Sprintf("chunk %s is no longer reached", c.Name))
			}
		}
		it.Changed = it.Outcome != Same
		rep.Items = append(rep.Items, *it)
	}
	for _, m := range opts.Missing {
		rep.Items = append(rep.Items, Item{Line: m.Line, ID: m.ID, Outcome: NoRecord, Error: "no replay record: it never ended nor waited, ended before records were kept, or its record was pruned"})
	}
	for _, it := range rep.Items {
		sum.Items++
		switch it.Outcome {
		case Same:
			sum.Same++
		case Changed:
			sum.Changed++
		case NeedsServer:
			sum.NeedsServer++
		case NeedsPerson:
			sum.NeedsPerson++
		case Failed:
			sum.Failed++
		case NoRecord:
			sum.NoRecord++
		}
		if it.Outcome != NoRecord {
			sum.Replayed++
			if it.Recorded != "completed" {
				sum.Unfinished++
				if sum.UnfinishedBy == nil {
					sum.UnfinishedBy = map[string]int{}
				}
				sum.UnfinishedBy[cmp.Or(it.Recorded, "unknown")]++
			}
		}
	}
	rep.Summary = sum
	return rep, asked, nil
}

// stop ends the item's replay with outcome and why.
func (r *run) stop(outcome, why string) {
	r.active = false
	r.item.Outcome = outcome
	r.item.Error = why
}

// reusable reports whether a recorded LLM chunk's answer serves the
// changed chunk: same fingerprint, same inputs, same model.
func reusable(rc *record.Chunk, ch *compile.ProgramChunk, system string, mctx jsonv.Value, model string) bool {
	return rc != nil && rc.Kind == compile.LLM && rc.Answer.Object() != nil &&
		rc.Fingerprint == record.Fingerprint(ch, system) &&
		(jsonv.Equal(rc.Context, mctx) || rc.Context.IsNull() && mctx.Len() == 0) &&
		sameModel(rc.Model, model)
}

// sameModel reports whether the recorded model is the model: the same
// name, or a provider's dated name of it (gpt-4o-2024-08-06 for
// gpt-4o); either unknown is taken as the same.
func sameModel(recorded, model string) bool {
	return model == "" || recorded == "" || recorded == model || strings.HasPrefix(recorded, model+"-")
}

// keepLLM keeps an LLM chunk's answer in the item's state and notes what
// changed from the recorded answer; fire-and-forget steps start nothing.
func (r *run) keepLLM(ch *compile.ProgramChunk, rc *record.Chunk, answer jsonv.Value, sum *Summary) error {
	if err := keepChunk(r.state, ch, answer); err != nil {
		return err
	}
	for _, s := range ch.Steps {
		if s.FireAndForget {
			sum.ActionsSkipped++
		}
	}
	if rc == nil {
		r.item.Route = append(r.item.Route, fmt.Sprintf("chunk %s is reached now, not in the recorded run", ch.Name))
		return nil
	}
	for _, c := range compare.Diff(ch.Schema, rc.Answer, answer) {
		r.item.Changes = append(r.item.Changes, c)
		sum.Fields[string(c.Path)]++
		sum.Moves[fmt.Sprintf("%s: %s → %s", c.Path, jsonv.Marshal(c.Before), jsonv.Marshal(c.After))]++
	}
	return nil
}

// server answers a SERVER chunk's steps from the record, or stops the
// item where the record cannot serve.
func (r *run) server(ch *compile.ProgramChunk, rc *record.Chunk, sum *Summary) {
	for i := range ch.Steps {
		s := &ch.Steps[i]
		in, err := s.ActionInput(r.state)
		if err != nil {
			r.stop(Failed, err.Error())
			return
		}
		var rs *record.Step
		if rc != nil {
			rs = rc.Step(s.Qualified())
		}
		if rs == nil {
			r.item.Needs = fmt.Sprintf("step %s: the recorded run did not call it", s.Qualified())
			r.stop(NeedsServer, "")
			return
		}
		if !jsonv.Equal(rs.Input, in) {
			r.item.Needs = fmt.Sprintf("step %s: its input changed", s.Qualified())
			r.item.Changes = append(r.item.Changes, compare.Change{Path: jsonv.Pointer("/" + s.Qualified() + "/input"), Before: rs.Input, After: in})
			r.stop(NeedsServer, "")
			return
		}
		sum.ActionsSkipped++
		out := rs.Output
		if s.Blocking {
			out = jsonv.ObjectValue(jsonv.Member{Name: "input", Value: in}, jsonv.Member{Name: "output", Value: out})
		}
		if _, err := jsonv.SetAll(r.state, s.State.Pointer(), compose.Split(out).Output); err != nil {
			r.stop(Failed, fmt.Sprintf("step %s: %v", s.Qualified(), err))
			return
		}
	}
}

// fill asks the model the chunk for the items in ask, K at a time, and
// tells t of each call as it comes back; last says the chunk is the
// process's last, so that an item answered is done.
func fill(ctx context.Context, ch *compile.ProgramChunk, all []*run, opts Options, kept *answers, sum *Summary, t *tracker, last bool) error {
	k := cmp.Or(opts.Size, batch.DefaultSize)
	var ask []*run
	keys := map[*run]string{}
	for _, r := range all {
		mctx, _ := pick(r.state, ch.References)
		keys[r] = answerKey(r.rec, ch, mctx, opts.Model)
		v, ok := kept.get(keys[r])
		if !ok {
			ask = append(ask, r)
			continue
		}
		sum.Asked[ch.Name]++
		sum.Resumed++
		r.item.Asked = append(r.item.Asked, ch.Name)
		if err := r.keepLLM(ch, r.rec.Chunk(ch.Name), v, sum); err != nil {
			r.stop(Failed, err.Error())
		}
	}
	if resumed := len(all) - len(ask); last && resumed > 0 {
		t.update(func(p *Progress) { p.Done += resumed })
	}
	type group struct {
		runs []*run
		out  *batch.FillOutput
		err  error
	}
	var groups []*group
	for g := range slices.Chunk(ask, k) {
		groups = append(groups, &group{runs: g})
	}
	input := func(g *group) batch.FillInput {
		in := batch.FillInput{Group: "replay", ProcessName: opts.Name, Chunk: ch.Name, StepContext: ch.StepContext(),
			System: g.runs[0].rec.System, Schema: ch.Schema, Call: opts.Call}
		for _, r := range g.runs {
			mctx, _ := pick(r.state, ch.References)
			in.Items = append(in.Items, batch.FillItem{ID: r.rec.ID, Prompt: r.rec.Prompt, Context: mctx})
		}
		return in
	}
	// answered keeps what g's call spent and the answers it got.
	answered := func(g *group) {
		if opts.Spent != nil {
			opts.Spent(g.out.Requests, g.out.Usage, opts.Model)
		}
		t.update(func(p *Progress) {
			p.Requests += g.out.Requests
			p.Usage = p.Usage.Add(g.out.Usage)
			if last {
				p.Done += len(g.runs)
			}
		})
		var lines []answerLine
		for j, r := range g.runs {
			if it := g.out.Items[j]; it.Error == "" {
				lines = append(lines, answerLine{Key: keys[r], Value: it.Output.Value})
			}
		}
		g.err = kept.put(lines)
	}
	sem := make(chan struct{}, cmp.Or(opts.Concurrency, 4))
	var wg sync.WaitGroup
	switch {
	case len(groups) == 0:
	case opts.Provider == nil:
		for _, g := range groups {
			g.err = errors.New("no model to ask the changed chunk")
		}
	case opts.Call.ProviderBatch:
		// Every group's call in one provider batch, named by the answers
		// it asks for: a replay killed while it waits finds it again.
		ins := make([]batch.FillInput, len(groups))
		h := sha256.New()
		for i, g := range groups {
			ins[i] = input(g)
			for _, r := range g.runs {
				h.Write([]byte(keys[r]))
			}
		}
		outs, err := batch.FillThrough(ctx, opts.Provider, "vibe-replay-"+hex.EncodeToString(h.Sum(nil))[:24], ins, opts.LLM)
		for i, g := range groups {
			if g.err = err; err == nil {
				g.out = outs[i]
				answered(g)
			}
		}
	default:
		for _, g := range groups {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				if g.out, g.err = batch.Fill(ctx, opts.Provider, input(g), opts.LLM); g.err == nil {
					answered(g)
				}
			})
		}
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, g := range groups {
		if g.out != nil {
			sum.Requests += g.out.Requests
			sum.Usage = sum.Usage.Add(g.out.Usage)
		}
		for j, r := range g.runs {
			switch {
			case g.err != nil:
				r.stop(Failed, fmt.Sprintf("chunk %s: %v", ch.Name, g.err))
			case g.out.Items[j].Error != "":
				r.stop(Failed, g.out.Items[j].Error)
			default:
				sum.Asked[ch.Name]++
				r.item.Asked = append(r.item.Asked, ch.Name)
				if err := r.keepLLM(ch, r.rec.Chunk(ch.Name), g.out.Items[j].Output.Value, sum); err != nil {
					r.stop(Failed, err.Error())
				}
			}
		}
	}
	return nil
}
