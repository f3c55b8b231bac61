package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/augceo/vibe"
	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/engine"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/llm/replay"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/registry"
)

//go:embed registry answers.jsonl comments.jsonl
var files embed.FS

// Pipeline is what every comment goes through: one model call fills the
// first two steps for a whole group of comments, and the server records
// each decision.
const Pipeline = "prompt | AssessSentiment | DecideModeration | RecordDecision_Activity"

// The example's files, as they are named in what it prints.
const (
	commentsFile = "examples/moderation-stream/comments.jsonl"
	answersFile  = "examples/moderation-stream/answers.jsonl"
)

func main() {
	data := flag.String("data", engine.DefaultDataDir, "data directory of the embedded engine (and of the decisions ledger)")
	out := flag.String("out", "", "write the result lines to `FILE` (default stdout)")
	size := flag.Int("batch-size", batch.DefaultSize, "K, comments per model call (the recording holds the answers for the default only)")
	serve := flag.String("serve", "", "serve the ledger as an HTTP action at `ADDR` (POST /record) for vibe batch, and run nothing else")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if *serve != "" {
		err = serveLedger(ctx, *data, *serve, os.Stderr)
	} else {
		err = runMain(ctx, config{Data: *data, Size: *size}, *out)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "moderation-stream:", err)
		os.Exit(1)
	}
}

// runMain runs the batch with its results to the file out ("" for
// stdout), and fails when a comment failed.
func runMain(ctx context.Context, cfg config, out string) error {
	cfg.Out = os.Stdout
	if out != "" {
		f, err := os.Create(out)
		if err != nil {
			return err
		}
		defer f.Close()
		cfg.Out = f
	}
	rep, err := run(ctx, cfg, os.Stderr)
	if err != nil {
		return err
	}
	if rep.Summary.Failed > 0 {
		return fmt.Errorf("%d of %d comments failed: their result lines say why", rep.Summary.Failed, rep.Summary.Lines)
	}
	return nil
}

// Registry returns the example's registry.
func Registry() *registry.Registry {
	sub, _ := fs.Sub(files, "registry")
	return registry.NewFS(sub, "examples/moderation-stream/registry")
}

// Recording returns the replay of the recorded answers.
func Recording() (*replay.Provider, error) {
	b, _ := files.ReadFile("answers.jsonl") // embedded: it is there
	return replay.Read(answersFile, bytes.NewReader(b))
}

// Comments returns the example's input: 1,000 comments, a JSON string a
// line.
func Comments() []byte {
	b, _ := files.ReadFile("comments.jsonl")
	return b
}

// BatchID names the batch of comments at k per group: the same input
// finds the same batch, so a rerun reads back what ran. K is part of it,
// since a group's items depend on it.
func BatchID(comments []byte, k int) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%d\n", Pipeline, k)
	h.Write(comments)
	return "moderation-" + hex.EncodeToString(h.Sum(nil))[:12]
}

// config is what run runs.
type config struct {
	// Data is the data directory of the engine and the ledger.
	Data string
	// Out takes the result lines.
	Out io.Writer
	// Size is K; 0 is batch.DefaultSize, the size the recording is for.
	Size int
	// Concurrency is C, the groups in flight; 0 is the default.
	Concurrency int
	// Model answers the model calls; nil is the recording.
	Model llm.Provider
}

// report is what a run did.
type report struct {
	Summary *batch.Summary
	// Calls counts the model calls this run made (Summary.Requests counts
	// the batch's, earlier runs' included).
	Calls int64
	// Added counts the decisions this run appended to the ledger, Repeats
	// the action calls it answered from an entry already there; Held is
	// what the ledger holds in all.
	Added, Repeats, Held int
	// Decisions counts the completed comments by decision.
	Decisions map[string]int
}

// run moderates the comments as one batch on the embedded engine in
// cfg.Data, writing one result line per comment to cfg.Out and what it
// did to log.
func run(ctx context.Context, cfg config, log io.Writer) (*report, error) {
	if cfg.Size <= 0 {
		cfg.Size = batch.DefaultSize
	}
	model := cfg.Model
	if model == nil {
		rec, err := Recording()
		if err != nil {
			return nil, err
		}
		model = rec
	}
	comments := Comments()
	id := BatchID(comments, cfg.Size)
	quiet := slog.New(slog.DiscardHandler)
	// The ledger lives beside the engine's file, in a directory the engine
	// would make: make it first.
	if err := os.MkdirAll(cfg.Data, 0o700); err != nil {
		return nil, err
	}
	ledger, err := OpenLedger(filepath.Join(cfg.Data, LedgerFile))
	if err != nil {
		return nil, err
	}
	defer ledger.Close()
	acts := &action.Registry{}
	acts.Register(ledger.Action())
	counted := &counting{Provider: model}
	rt, err := vibe.Start(ctx, vibe.Options{Engine: engine.Options{DataDir: cfg.Data}, Registry: Registry(), Provider: counted, Actions: acts, Logger: quiet})
	if err != nil {
		return nil, err
	}
	defer rt.Close()

	total := bytes.Count(comments, []byte{'\n'})
	fmt.Fprintf(log, "Batch %s: %d comments from %s through\n  %s\non the embedded engine in %s, %d comments per model call.\n",
		id, total, commentsFile, Pipeline, cfg.Data, cfg.Size)
	if _, ok := model.(*replay.Provider); ok {
		fmt.Fprintf(log, "The model's answers are replayed from a recording (%s) written for this example, not asked of a live model.\n", answersFile)
		if cfg.Size != batch.DefaultSize {
			fmt.Fprintf(log, "The recording answers groups of %d comments only: at another size its calls are not there, and the comments fail.\n", batch.DefaultSize)
		}
	}
	rep := &report{Decisions: map[string]int{}}
	bw := bufio.NewWriter(cfg.Out)
	emit := func(r batch.Result) error {
		if r.Status == batch.StatusCompleted {
			if v, err := jsonv.Parse(r.Output); err == nil {
				rep.Decisions[v.Lookup(decisionStep).Lookup("decision").Str()]++
			}
		}
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		_, err = bw.Write(append(b, '\n'))
		return err
	}
	shown := time.Now()
	progress := func(s batch.Summary) {
		if time.Since(shown) >= 2*time.Second {
			shown = time.Now()
			fmt.Fprintf(log, "… %d of %d comments (%d failed)\n", s.Lines, total, s.Failed)
		}
	}
	c := rt.Batches
	sum, err := c.Run(ctx, bytes.NewReader(comments), emit, batch.Options{
		Process: process.StartOptions{Pipeline: Pipeline}, ID: id, File: commentsFile,
		Size: cfg.Size, Concurrency: cfg.Concurrency, Progress: progress})
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return nil, fmt.Errorf("interrupted: run it again on the same -data to go on (batch %s)", id)
		}
		return nil, err
	}
	rep.Summary, rep.Calls = sum, counted.calls.Load()
	rep.Added, rep.Repeats, rep.Held = ledger.Counts()
	summarize(log, rep, filepath.Join(cfg.Data, LedgerFile))
	return rep, nil
}

// summarize writes what a run did.
func summarize(log io.Writer, rep *report, ledger string) {
	s := rep.Summary
	fmt.Fprintf(log, "\n%d comments: %d ok, %d failed, in %s.\n", s.Lines, s.Done, s.Failed, s.Elapsed.Round(time.Millisecond))
	kinds := make([]string, 0, len(rep.Decisions))
	for k := range rep.Decisions {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool { return rep.Decisions[kinds[i]] > rep.Decisions[kinds[j]] })
	var ds []string
	for _, k := range kinds {
		ds = append(ds, fmt.Sprintf("%d %s", rep.Decisions[k], k))
	}
	fmt.Fprintf(log, "Decisions: %s.\n", strings.Join(ds, ", "))
	fmt.Fprintf(log, "Model: %d calls for the batch, %d prompt + %d completion tokens", s.Requests, s.Usage.PromptTokens, s.Usage.CompletionTokens)
	switch {
	case rep.Calls == 0 && s.Requests > 0:
		fmt.Fprint(log, "; all made by an earlier run: this run read their results back")
	case rep.Calls < int64(s.Requests):
		fmt.Fprintf(log, "; this run made %d of them, an earlier run the others", rep.Calls)
	}
	fmt.Fprintln(log, ".")
	fmt.Fprintf(log, "Ledger %s: %d decisions recorded by this run", ledger, rep.Added)
	if rep.Repeats > 0 {
		fmt.Fprintf(log, ", %d repeated calls answered from it as before", rep.Repeats)
	}
	fmt.Fprintf(log, "; it holds %d.\n", rep.Held)
}

// counting is a provider that counts the calls it passes on: what this
// run asked of the model, as against the batch's totals, which include
// the calls of earlier runs.
type counting struct {
	llm.Provider
	calls atomic.Int64
}

func (c *counting) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	c.calls.Add(1)
	return c.Provider.Complete(ctx, req)
}

// serveLedger serves the ledger in data as an HTTP action at addr, POST
// /record, until ctx ends.
func serveLedger(ctx context.Context, data, addr string, log io.Writer) error {
	if err := os.MkdirAll(data, 0o700); err != nil {
		return err
	}
	path := filepath.Join(data, LedgerFile)
	ledger, err := OpenLedger(path)
	if err != nil {
		return err
	}
	defer ledger.Close()
	mux := http.NewServeMux()
	mux.Handle("/record", ledger)
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	fmt.Fprintf(log, "The ledger %s takes RecordDecision_Activity at http://%s/record; Ctrl-C stops it.\n", path, addr)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	added, repeats, held := ledger.Counts()
	fmt.Fprintf(log, "%d decisions recorded, %d repeated calls answered as before; the ledger holds %d.\n", added, repeats, held)
	return nil
}
