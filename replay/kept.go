package replay

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/internal/wfid"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/replay/record"
)

// ID is the id of a replay: the changed process's name, "replay", then a
// hash of what the replay is — the recorded work it selects (the
// selection, and the items it found: a filter that finds other records
// later is another replay), the changed program, the model, K, and a
// sample's size and seed and a baseline's size (Options). The
// same command run again over the same records is the same replay: it
// finds the record an earlier run kept (RunKept) and the answers it was
// given (Options.Answers).
func ID(name string, sel Selection, recs []record.Record, program any, opts Options) (string, error) {
	items := make([]string, 0, len(recs)+len(opts.Missing))
	for _, r := range recs {
		items = append(items, fmt.Sprintf("%s/%d", r.ID, r.Line))
	}
	for _, m := range opts.Missing {
		items = append(items, fmt.Sprintf("%s/%d", m.ID, m.Line))
	}
	var seed uint64 // a seed chooses nothing without a sample
	if opts.Sample > 0 {
		seed = opts.Seed
	}
	b, err := json.Marshal(struct {
		IDs                 []string
		From, Status, Since string
		Items               []string
		Program             any
		Model               string
		Size                int
		Sample              int    `json:",omitempty"`
		Seed                uint64 `json:",omitempty"`
		Baseline            int    `json:",omitempty"`
	}{sel.IDs, sel.From, sel.Status, sel.Since.String(), items, program, opts.Model, opts.Size, opts.Sample, seed, opts.Baseline})
	if err != nil {
		return "", fmt.Errorf("replay id: %w", err)
	}
	sum := sha256.Sum256(b)
	return wfid.Slug(name, "process") + "-replay-" + hex.EncodeToString(sum[:])[:12], nil
}

// RunKept is Run that keeps the replay's record on the engine c reaches,
// as a batch's record of its own (batch.KindReplay, under id): vibe
// batches and the console list it with the batches, with its items, the
// model requests and tokens so far (as each call comes back) and, once it
// ended, the items done, failed (the model could not answer, or no
// record) and changed. A replay killed and run again goes on under the
// same record, which counts the requests of both runs; one whose record
// ended is run again without it.
func RunKept(ctx context.Context, c *batch.Client, id string, recs []record.Record, opts Options) (*Report, error) {
	n := len(recs) + len(opts.Missing)
	ended, err := c.Keep(ctx, batch.Status{ID: id, Kind: batch.KindReplay, Process: opts.Name, Total: n,
		Size: cmp.Or(opts.Size, batch.DefaultSize), Model: opts.Model, StartedAt: time.Now().UTC()})
	if err != nil {
		return nil, err
	}
	if ended {
		return Run(ctx, recs, opts)
	}
	// What an earlier run spent (a replay killed and run again): the
	// record counts it with this run's.
	before, err := c.Status(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := c.Report(ctx, id, batch.GroupReport{Index: 0, Items: n}); err != nil {
		return nil, err
	}
	if err := c.EndInput(ctx, id, batch.End{Groups: 1, Items: n}); err != nil {
		return nil, err
	}
	var mu sync.Mutex
	spent := batch.GroupReport{Index: 0, Spent: true, Requests: before.Requests, Usage: before.Usage, Model: before.Model}
	then := opts.Spent
	opts.Spent = func(requests int, usage llm.Usage, model string) {
		if then != nil {
			then(requests, usage, model)
		}
		mu.Lock()
		spent.Requests += requests
		spent.Usage = spent.Usage.Add(usage)
		spent.Model = cmp.Or(spent.Model, model)
		r := spent
		mu.Unlock()
		// Only what the record shows while the replay runs: a report
		// that does not reach it changes nothing of the replay.
		_ = c.Report(ctx, id, r)
	}
	rep, err := Run(ctx, recs, opts)
	if err != nil {
		return nil, err
	}
	s := rep.Summary
	done := batch.GroupReport{Index: 0, Items: n, Finished: true, Done: s.Replayed - s.Failed, Failed: s.Failed + s.NoRecord,
		Changed: s.Changed + s.NeedsServer + s.NeedsPerson, Usage: before.Usage.Add(s.Usage), Requests: before.Requests + s.Requests,
		Model: cmp.Or(before.Model, opts.Model)}
	if err := c.Report(ctx, id, done); err != nil {
		return nil, err
	}
	return rep, nil
}

// ErrNoReport is the error of LoadReport for a replay whose report was
// not kept.
var ErrNoReport = errors.New("no report kept of this replay")

// SaveReport keeps rep as the report of replay id in dir (DATA/replays,
// one ID.json each), written whole: what the console's page of the
// replay shows.
func SaveReport(dir, id string, rep *Report) error {
	b, err := json.Marshal(rep)
	if err != nil {
		return fmt.Errorf("replay report: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("replay report: %w", err)
	}
	tmp, err := os.CreateTemp(dir, id+".*.tmp")
	if err != nil {
		return fmt.Errorf("replay report: %w", err)
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("replay report: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, id+".json")); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("replay report: %w", err)
	}
	return nil
}

// PruneReports removes the reports in dir (SaveReport's) written longer
// ago than retention before now (0: record.DefaultRetention), and the
// files a SaveReport stopped midway left; it returns the ids of the
// replays whose reports it removed, sorted.
func PruneReports(dir string, retention time.Duration, now time.Time) ([]string, error) {
	if retention <= 0 {
		retention = record.DefaultRetention
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("prune replay reports: %w", err)
	}
	cut := now.Add(-retention)
	var ids []string
	for _, e := range entries {
		name := e.Name()
		id, isReport := strings.CutSuffix(name, ".json")
		if e.IsDir() || !isReport && !strings.HasSuffix(name, ".tmp") {
			continue
		}
		info, err := e.Info()
		if err != nil || !info.ModTime().Before(cut) {
			continue // gone meanwhile, or young
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return ids, fmt.Errorf("prune replay reports: %w", err)
		}
		if isReport {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// LoadReport reads the report of replay id from dir; ErrNoReport when
// none was kept.
func LoadReport(dir, id string) (*Report, error) {
	if id == "" || id != filepath.Base(id) {
		return nil, ErrNoReport
	}
	b, err := os.ReadFile(filepath.Join(dir, id+".json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNoReport
	}
	if err != nil {
		return nil, fmt.Errorf("replay report: %w", err)
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("replay report %s: %w", id, err)
	}
	return &rep, nil
}
