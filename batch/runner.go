package batch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/augceo/vibe/jsonv"
)

// Runner runs the batches a server is given. Each input is spooled to
// Dir before its id is answered, so a batch outlives the server: Resume,
// at the next start, runs the batches whose input is there and that did
// not finish — the groups that ran are read back, not run again.
type Runner struct {
	// Client runs the batches, and serves reads of them.
	*Client
	// Dir holds the spooled inputs: <id>.jsonl and <id>.json (the
	// options); both go when the batch has finished.
	Dir string
	// Logger records each batch's end; nil means slog.Default().
	Logger *slog.Logger

	mu      sync.Mutex
	running map[string]context.CancelFunc // the batches running here
	wg      sync.WaitGroup
	base    context.Context // the runs' lifetime, Resume's ctx
}

// spooled are a spooled batch's options, in <id>.json.
type spooled struct {
	Options Options `json:"options"`
}

// Start spools in, JSONL, and runs it as a batch in the background; it
// returns the batch's id once the input is on disk. Without opts.ID the
// id is derived from the process and the input (Client.ID), so that the
// same input given again names the same batch, which is not run twice. ctx
// bounds the spooling; the run lasts as long as Resume's ctx.
//
// What the run would refuse before its first line is refused here, before
// anything is spooled (Client.Check): a process or pipeline that does not
// compile gives the compiler's errors, a process URI whose fragment names
// nothing an error wrapping registry.ErrNotFound. A batch given again with
// another group size keeps the size of its first run (Options.Size). A
// batch that finished is run again only with Options.RetryFailed, to ask
// its failed items again; created is false for it.
func (r *Runner) Start(ctx context.Context, opts Options, in io.Reader) (id string, created bool, err error) {
	if opts.ID != "" {
		if err := CheckID(opts.ID); err != nil {
			return "", false, err
		}
	}
	unnamed := opts
	unnamed.Process.Name = "" // a label: the id is the process's, whatever it is called
	start, err := r.Client.prepare(ctx, unnamed)
	if err != nil {
		return "", false, err
	}
	if err := os.MkdirAll(r.Dir, 0o700); err != nil {
		return "", false, err
	}
	tmp, err := os.CreateTemp(r.Dir, ".spool-*")
	if err != nil {
		return "", false, err
	}
	defer os.Remove(tmp.Name())
	digest := NewDigest()
	var lines lineCount
	_, err = io.Copy(io.MultiWriter(tmp, digest, &lines), in)
	opts.Total = int(lines) // "of N" while the lines are read
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", false, fmt.Errorf("spool the input: %w", err)
	}
	opts.Digest = digest.Sum()
	if opts.ID == "" {
		if opts.ID, err = idOf(start, opts.Digest); err != nil {
			return "", false, err
		}
	}
	// The same id over another input is refused, running or not.
	if err := r.Client.CheckInput(ctx, opts); err != nil {
		return "", false, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running[opts.ID] != nil {
		return opts.ID, false, nil
	}
	if _, err := r.Client.Status(ctx, opts.ID); err == nil {
		if _, err := os.Stat(r.path(opts.ID, ".jsonl")); err != nil && !opts.RetryFailed {
			return opts.ID, false, nil // it ran, and finished
		}
	} else if !errors.Is(err, ErrNotFound) {
		return "", false, err
	}
	meta, err := json.Marshal(spooled{Options: opts})
	if err != nil {
		return "", false, err
	}
	if err := os.WriteFile(r.path(opts.ID, ".json"), meta, 0o600); err != nil {
		return "", false, err
	}
	if err := os.Rename(tmp.Name(), r.path(opts.ID, ".jsonl")); err != nil {
		return "", false, err
	}
	r.launch(opts)
	return opts.ID, true, nil
}

func (r *Runner) path(id, ext string) string { return filepath.Join(r.Dir, id+ext) }

// Resume runs every spooled batch that is not running. Call it once, when
// the server starts: ctx is the lifetime of every batch the runner runs;
// when it ends they stop, to be resumed at the next start.
func (r *Runner) Resume(ctx context.Context) error {
	r.mu.Lock()
	r.base = ctx
	r.mu.Unlock()
	metas, err := filepath.Glob(filepath.Join(r.Dir, "*.json"))
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	for _, m := range metas {
		id := strings.TrimSuffix(filepath.Base(m), ".json")
		if r.running[id] != nil {
			continue
		}
		data, err := os.ReadFile(m)
		var sp spooled
		if err == nil {
			err = json.Unmarshal(data, &sp)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("resume batch %s: %w", id, err))
			continue
		}
		r.launch(sp.Options)
	}
	return errors.Join(errs...)
}

// launch runs a spooled batch in the background; r.mu is held.
func (r *Runner) launch(opts Options) {
	if r.running == nil {
		r.running = map[string]context.CancelFunc{}
	}
	if r.base == nil {
		r.base = context.Background()
	}
	base, stop := context.WithCancel(r.base)
	r.running[opts.ID] = stop
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		logger := r.Logger
		if logger == nil {
			logger = slog.Default()
		}
		err := r.run(base, opts)
		r.mu.Lock()
		delete(r.running, opts.ID)
		r.mu.Unlock()
		stop()
		if errors.Is(err, ErrCancelled) {
			err = nil // its spool goes
		}
		if err != nil {
			logger.Error("batch", "id", opts.ID, "error", err)
			return
		}
		os.Remove(r.path(opts.ID, ".jsonl"))
		os.Remove(r.path(opts.ID, ".json"))
	}()
}

func (r *Runner) run(ctx context.Context, opts Options) error {
	f, err := os.Open(r.path(opts.ID, ".jsonl"))
	if err != nil {
		return err
	}
	defer f.Close()
	opts.File = opts.ID + ".jsonl"
	_, err = r.Client.Run(ctx, f, func(Result) error { return nil }, opts)
	return err
}

// Cancel cancels batch id (Client.Cancel): its run here, if any, stops
// reading, and its spooled input goes.
func (r *Runner) Cancel(ctx context.Context, id string) error {
	if err := r.Client.Cancel(ctx, id); err != nil {
		return err
	}
	r.mu.Lock()
	stop := r.running[id]
	r.mu.Unlock()
	if stop == nil {
		os.Remove(r.path(id, ".jsonl"))
		os.Remove(r.path(id, ".json"))
	}
	return nil
}

// Wait waits for the running batches to finish or ctx to end.
func (r *Runner) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Items turns items given as JSON values (POST /v1/batches with a JSON
// body) into the JSONL a batch reads.
func Items(items []jsonv.Value) io.Reader {
	var b strings.Builder
	for _, it := range items {
		b.Write(jsonv.Marshal(it))
		b.WriteByte('\n')
	}
	return strings.NewReader(b.String())
}

// lineCount counts the lines written to it.
type lineCount int

func (n *lineCount) Write(p []byte) (int, error) {
	*n += lineCount(bytes.Count(p, []byte{'\n'}))
	return len(p), nil
}
