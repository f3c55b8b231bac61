package replay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/augceo/vibe/llm"
)

// Entry is one line of a recording: one answer of a model.
type Entry struct {
	// Step is the request's Name: the step or chunk that asked.
	Step string `json:"step"`
	// Hash is Hash of the request.
	Hash string `json:"hash"`
	// Response is the answer as the model gave it.
	Response llm.Response `json:"response"`
	// RecordedAt is when the answer was recorded.
	RecordedAt time.Time `json:"recordedAt"`
}

// MissingError is the error of a request that the recording has no answer
// for: a step that was never recorded, or whose prompt or schema changed
// since.
type MissingError struct {
	Path string // the recording
	Step string // the request's Name
	Hash string // Hash of the request
}

// Error names the recording, the step and the hash, and says how to
// record the missing answer (replay.Record; the CLI: VIBE_LLM_RECORD).
func (e *MissingError) Error() string {
	h := e.Hash
	if len(h) > 12 {
		h = h[:12]
	}
	return fmt.Sprintf("no recorded answer for step %q (request %s) in %s: the step, its prompt, context or schema differ from what was recorded; "+
		"record it again against a live model",
		e.Step, h, e.Path)
}

// Is makes a MissingError match llm.ErrNotRecorded, the kind of failure it
// is, so that nobody outside package llm names this type.
func (e *MissingError) Is(target error) bool { return target == llm.ErrNotRecorded }

// Provider is an llm.Provider that answers from a recording. It is safe for
// concurrent use.
type Provider struct {
	path string

	mu sync.Mutex
	// answers holds, for each step and request hash, the recorded responses
	// in file order. Entries are never removed: a request asked more often
	// than it was recorded keeps getting the last answer.
	answers map[key][]llm.Response
	// asked counts how often each key was asked, to pick the next answer.
	asked map[key]int
}

type key struct{ step, hash string }

// Open reads the recording at path. A line that is not an Entry is an error
// naming the file and line; blank lines are skipped.
func Open(path string) (*Provider, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	defer f.Close()
	return Read(path, f)
}

// Read reads a recording from r (an embedded file, say); path names it in
// errors.
func Read(path string, r io.Reader) (*Provider, error) {
	p := &Provider{path: path, answers: map[key][]llm.Response{}, asked: map[key]int{}}
	sc := bufio.NewScanner(r)
	// An answer is as long as the model made it: allow long lines.
	sc.Buffer(make([]byte, 0, 64*1024), 64<<20)
	for line := 1; sc.Scan(); line++ {
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		e, err := parseEntry(text)
		if err != nil {
			return nil, fmt.Errorf("replay: %s:%d: %w", path, line, err)
		}
		k := key{e.Step, e.Hash}
		p.answers[k] = append(p.answers[k], e.Response)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("replay: read %s: %w", path, err)
	}
	return p, nil
}

func parseEntry(text []byte) (*Entry, error) {
	var e Entry
	// Unknown fields are allowed, so that older readers keep reading
	// recordings that newer writers add fields to.
	dec := json.NewDecoder(bytes.NewReader(text))
	if err := dec.Decode(&e); err != nil {
		return nil, fmt.Errorf("not a recorded answer: %w", err)
	}
	if dec.More() {
		return nil, errors.New("not a recorded answer: text after the JSON object")
	}
	if e.Hash == "" {
		return nil, errors.New("not a recorded answer: no hash")
	}
	return &e, nil
}

// System is "replay": the answers come from a recording.
func (p *Provider) System() string { return "replay" }

// Model is "" for a recording: each answer names the model that gave it.
func (p *Provider) Model() string { return "" }

// Complete returns the next recorded answer to req, marked Replayed, or a
// *MissingError.
func (p *Provider) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	k := key{req.Name, Hash(req)}
	p.mu.Lock()
	defer p.mu.Unlock()
	rs := p.answers[k]
	if len(rs) == 0 {
		return nil, &MissingError{Path: p.path, Step: k.step, Hash: k.hash}
	}
	n := p.asked[k]
	p.asked[k] = n + 1
	resp := rs[min(n, len(rs)-1)]
	resp.Replayed = true
	return &resp, nil
}

// Recorder is an llm.Provider that passes each request to another provider
// and appends every answer it gets to a recording. It is safe for concurrent
// use; each answer is written as one line and synced before it is returned,
// so a crash loses no answer that was already given.
type Recorder struct {
	p llm.Provider

	mu   sync.Mutex // serializes writes to f
	f    *os.File   // nil once closed
	path string
	now  func() time.Time
}

// Record returns a Recorder that answers through p and appends the answers
// to the recording at path, creating it if needed: 0600, the owner's alone,
// since it holds every prompt and answer.
func Record(p llm.Provider, path string) (*Recorder, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	return &Recorder{p: p, f: f, path: path, now: time.Now}, nil
}

// Complete asks the wrapped provider and records its answer. Errors are
// returned as they are and not recorded. An answer that cannot be recorded
// System and Model are the recorded provider's, when it says.
func (r *Recorder) System() string {
	if d, ok := r.p.(llm.Describer); ok {
		return d.System()
	}
	return ""
}

// Model is the recorded provider's model.
func (r *Recorder) Model() string {
	if d, ok := r.p.(llm.Describer); ok {
		return d.Model()
	}
	return ""
}

// is an error: the caller asked for a recording.
func (r *Recorder) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	r.mu.Lock()
	closed := r.f == nil
	r.mu.Unlock()
	if closed {
		// Fail before the model is asked: its answer could not be kept.
		return nil, fmt.Errorf("replay: record step %q: %s is closed", req.Name, r.path)
	}
	resp, err := r.p.Complete(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := r.write(req, resp); err != nil {
		return nil, err
	}
	return resp, nil
}

// write appends the answer resp to req to the recording, as one line,
// and syncs it.
func (r *Recorder) write(req *llm.Request, resp *llm.Response) error {
	line, err := json.Marshal(Entry{Step: req.Name, Hash: Hash(req), Response: *resp, RecordedAt: r.now().UTC()})
	if err != nil {
		return fmt.Errorf("replay: record step %q: %w", req.Name, err)
	}
	line = append(line, '\n')
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return fmt.Errorf("replay: record step %q: %s is closed", req.Name, r.path)
	}
	// One write per line: O_APPEND keeps lines whole even when several
	// processes record into the same file.
	if _, err := r.f.Write(line); err != nil {
		return fmt.Errorf("replay: record step %q: %w", req.Name, err)
	}
	if err := r.f.Sync(); err != nil {
		return fmt.Errorf("replay: record step %q: %w", req.Name, err)
	}
	return nil
}

// Unwrap is the provider r records (llm.Wrapper).
func (r *Recorder) Unwrap() llm.Provider { return r.p }

// BatchAPI is the Batch API of the provider r records, when it has one
// (llm.BatchAPIOf asks for it): batches go to that provider as they are,
// and each answer read from one (BatchResults) is recorded as Complete
// records an answer — under its request's step and hash — so that a run
// made through provider batches replays as direct calls. Results read
// twice (a read cut off and done again) are recorded twice; a replay gives
// the same answer either way.
func (r *Recorder) BatchAPI() (llm.BatchAPI, bool) {
	api, ok := llm.BatchAPIOf(r.p)
	if !ok {
		return nil, false
	}
	return &recordedBatches{BatchAPI: api, r: r}, true
}

// recordedBatches is a Batch API whose answers a Recorder records.
type recordedBatches struct {
	llm.BatchAPI
	r *Recorder
}

// BatchResults reads the results of batch id and records each answer, in
// the order of requests, before it returns them: an answer that could not
// be kept is an error, as in Complete.
func (b *recordedBatches) BatchResults(ctx context.Context, id string, requests []llm.BatchRequest) (map[string]llm.BatchResult, error) {
	results, err := b.BatchAPI.BatchResults(ctx, id, requests)
	if err != nil {
		return nil, err
	}
	for _, q := range requests {
		if res, ok := results[q.ID]; ok && res.Response != nil && q.Request != nil {
			if err := b.r.write(q.Request, res.Response); err != nil {
				return nil, err
			}
		}
	}
	return results, nil
}

// Close closes the recording. Later calls of Complete fail.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	if err != nil {
		return fmt.Errorf("replay: close %s: %w", r.path, err)
	}
	return nil
}
