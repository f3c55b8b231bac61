package replay

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"time"

	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/replay/record"
)

// Selection names recorded work: batches' items and processes by id, and
// the processes of their own a filter keeps (From, Status, Since; none
// set: no filter).
type Selection struct {
	// IDs are batch ids (their items) or process ids.
	IDs []string `json:"ids,omitempty"`
	// From keeps the processes of that name, Status those that ended in
	// it, Since those that ended within it before now.
	From   string        `json:"from,omitempty"`
	Status string        `json:"status,omitempty"`
	Since  time.Duration `json:"-"`
}

// Empty reports whether s selects nothing.
func (s Selection) Empty() bool {
	return len(s.IDs) == 0 && s.From == "" && s.Status == "" && s.Since == 0
}

// Select reads the records sel names from store: each id's batch items
// (by line) or process, then the processes the filter keeps (oldest
// first); and the items asked for that have none — an id with no record,
// a batch's lines before its last recorded one that have none.
func Select(store *record.Store, sel Selection) ([]record.Record, []Missing, error) {
	var recs []record.Record
	var missing []Missing
	for _, id := range sel.IDs {
		items, err := store.Batch(id)
		if err != nil {
			return nil, nil, err
		}
		if len(items) > 0 {
			have := map[int]bool{}
			for _, r := range items {
				have[r.Line] = true
			}
			for line := 1; line < items[len(items)-1].Line; line++ {
				if !have[line] {
					missing = append(missing, Missing{ID: batch.ItemID(id, line), Line: line})
				}
			}
			recs = append(recs, items...)
			continue
		}
		r, err := store.Process(id)
		if errors.Is(err, record.ErrNoRecord) {
			missing = append(missing, Missing{ID: id})
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		recs = append(recs, r)
	}
	if sel.From != "" || sel.Status != "" || sel.Since > 0 {
		after := time.Now().Add(-sel.Since)
		found, err := store.Processes(func(r *record.Record) bool {
			return (sel.From == "" || r.Process == sel.From) && (sel.Status == "" || r.Status == sel.Status) && (sel.Since == 0 || r.Ended.After(after))
		})
		if err != nil {
			return nil, nil, err
		}
		recs = append(recs, found...)
	}
	return recs, missing, nil
}

// Request is a replay as POST /v1/replays takes it: the recorded work and
// the changed process (a registry URI, an inline schema or a pipeline).
type Request struct {
	Selection
	// Since is Selection.Since as a Go duration ("72h").
	Since    string      `json:"since,omitempty"`
	Process  string      `json:"process,omitempty"`
	Document jsonv.Value `json:"document,omitzero"`
	Pipeline string      `json:"pipeline,omitempty"`
	// Size is K (Options.Size).
	Size int `json:"batchSize,omitempty"`
	// Sample and Seed replay a random sample (Options.Sample); a Seed of
	// 0 is drawn at random, and the summary says it.
	Sample int    `json:"sample,omitempty"`
	Seed   uint64 `json:"seed,omitempty"`
	// Baseline asks that many items again with the process as it was
	// recorded (Options.Baseline): BaselineProcess, a registry URI, or
	// BaselineDocument, an inline schema, or BaselinePipeline.
	Baseline         int         `json:"baseline,omitempty"`
	BaselineProcess  string      `json:"baselineProcess,omitempty"`
	BaselineDocument jsonv.Value `json:"baselineDocument,omitzero"`
	BaselinePipeline string      `json:"baselinePipeline,omitempty"`
	// ProviderBatch sends the changed chunks' calls through the
	// provider's Batch API (batch.CallOptions.ProviderBatch);
	// ProviderPoll is the first wait between looks at a provider batch, a
	// Go duration ("15s").
	ProviderBatch bool   `json:"providerBatch,omitempty"`
	ProviderPoll  string `json:"providerBatchPoll,omitempty"`
}

// Service replays requests against the records of a Store: what a server
// runs for POST /v1/replays.
type Service struct {
	Records *record.Store
	// Processes compiles the changed process (its registry and actions'
	// names); it starts nothing.
	Processes *process.Client
	// Provider asks the changed chunks; nil fails the items that need it.
	Provider llm.Provider
	// Call shapes the calls.
	Call batch.CallOptions
	// Batches, when set, keeps each replay's record as a batch of its
	// own (RunKept): listed with the batches. Reports, when set too, is
	// the directory where its report is kept (SaveReport).
	Batches *batch.Client
	Reports string
}

// ErrNothingSelected is the error of a replay that names no recorded work.
var ErrNothingSelected = errors.New("give the recorded work: ids (batches or processes), or a filter (from, status, since)")

// BadRequestError is a Request that cannot be run as it is: the JSON path
// of the field at fault and why.
type BadRequestError struct {
	Path    string
	Message string
}

func (e *BadRequestError) Error() string { return e.Path + ": " + e.Message }

func (e *BadRequestError) Unwrap() error {
	if e.Path == "/ids" {
		return ErrNothingSelected
	}
	return nil
}

// Replay runs a replay request: it selects the records, compiles the
// changed process and replays them (Run), keeping the model's answers
// beside the records so that the same request sent again asks none of
// them again.
func (s *Service) Replay(ctx context.Context, req Request) (*Report, error) {
	if req.Since != "" {
		d, err := time.ParseDuration(req.Since)
		if err != nil || d <= 0 {
			return nil, &BadRequestError{Path: "/since", Message: fmt.Sprintf("%q is no duration: want one such as 72h", req.Since)}
		}
		req.Selection.Since = d
	}
	call := s.Call
	if req.ProviderBatch {
		call.ProviderBatch = true
	}
	if req.ProviderPoll != "" {
		d, err := time.ParseDuration(req.ProviderPoll)
		if err != nil || d <= 0 || d > batch.MaxProviderPoll {
			return nil, &BadRequestError{Path: "/providerBatchPoll", Message: fmt.Sprintf("%q: want a duration such as 15s, at most %s", req.ProviderPoll, batch.MaxProviderPoll)}
		}
		call.ProviderPoll = d
	}
	if req.Selection.Empty() {
		return nil, &BadRequestError{Path: "/ids", Message: ErrNothingSelected.Error()}
	}
	pc := s.Processes
	if pc == nil {
		pc = &process.Client{}
	}
	start, _, err := pc.Prepare(ctx, process.StartOptions{Process: req.Process, Document: req.Document, File: "document", Pipeline: req.Pipeline})
	if err != nil {
		return nil, err
	}
	if req.Sample < 0 {
		return nil, &BadRequestError{Path: "/sample", Message: "a sample is a number of items above 0"}
	}
	if req.Baseline < 0 {
		return nil, &BadRequestError{Path: "/baseline", Message: "a baseline is a number of items above 0"}
	}
	opts := Options{Name: start.Name, Program: start.Program, Provider: s.Provider, Model: llm.ModelOf(s.Provider), Size: req.Size,
		Call: call, Answers: AnswersFile(s.Records, start.Program), Sample: req.Sample, Seed: req.Seed, Baseline: req.Baseline}
	if opts.Sample > 0 && opts.Seed == 0 {
		opts.Seed = rand.Uint64()
	}
	if req.Baseline > 0 {
		if req.BaselineProcess == "" && req.BaselineDocument.IsNull() && req.BaselinePipeline == "" {
			return nil, &BadRequestError{Path: "/baselineProcess", Message: "a baseline needs the process as it was recorded: baselineProcess (a URI or an inline schema) or baselinePipeline"}
		}
		was, _, err := pc.Prepare(ctx, process.StartOptions{Process: req.BaselineProcess, Document: req.BaselineDocument, File: "baselineProcess", Pipeline: req.BaselinePipeline})
		if err != nil {
			return nil, fmt.Errorf("the baseline's process: %w", err)
		}
		opts.Recorded, opts.BaselineAnswers = was.Program, BaselineAnswersFile(s.Records, was.Program)
	}
	recs, missing, err := Select(s.Records, req.Selection)
	if err != nil {
		return nil, err
	}
	opts.Missing = missing
	if s.Batches == nil {
		return Run(ctx, recs, opts)
	}
	id, err := ID(start.Name, req.Selection, recs, start.Program, opts)
	if err != nil {
		return nil, err
	}
	rep, err := RunKept(ctx, s.Batches, id, recs, opts)
	if err == nil && s.Reports != "" {
		err = SaveReport(s.Reports, id, rep)
	}
	return rep, err
}

// AnswersFile is where a replay against program keeps the model's answers
// as they come (Options.Answers): DATA/replay/answers/HASH.jsonl beside
// the records, pruned with them; "" for a store that keeps nothing.
func AnswersFile(store *record.Store, program any) string {
	if store == nil || store.Dir == "" {
		return ""
	}
	b, err := json.Marshal(program)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return filepath.Join(store.Dir, "answers", hex.EncodeToString(sum[:12])+".jsonl")
}

// BaselineAnswersFile is where a baseline with the recorded process
// program keeps its answers (Options.BaselineAnswers): apart from a
// replay's against the same process, which reuses what a baseline asks
// again.
func BaselineAnswersFile(store *record.Store, program any) string {
	return AnswersFile(store, struct {
		Baseline any `json:"baseline"`
	}{program})
}
