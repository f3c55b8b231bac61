package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.temporal.io/sdk/worker"

	"github.com/augceo/vibe/compose"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/schema"
	"github.com/augceo/vibe/vessel"
)

// stickyCacheSize is how many workflows a worker of this program keeps in
// memory: more than a busy worker has in flight (a batch has C groups in
// flight, its items inside them).
const stickyCacheSize = 256

// Exit statuses.
const (
	exitOK    = 0
	exitError = 1 // bad input, a failed run: the errors are printed
	exitUsage = 2 // bad flags or arguments
	// exitInterrupted is a command stopped by Ctrl-C (SIGINT): 128 +
	// SIGINT, as a shell reports it. A command stopped by SIGTERM exits
	// with exitTerminated.
	exitInterrupted = 130
	exitTerminated  = 143 // 128 + SIGTERM
)

// stdio is where a command reads and writes; tests give buffers.
type stdio struct {
	in       io.Reader
	out, err io.Writer
	// args is the command line after "vibe", for a message that says how
	// to run the same command again.
	args []string
}

// interruptedError is the error of a command that Ctrl-C stopped: Main
// prints it and exits with exitInterrupted.
type interruptedError struct{ msg string }

func (e *interruptedError) Error() string { return e.msg }

// interrupts turns SIGINT and SIGTERM into the end of the commands'
// context. The first signal ends it, unless the command asked for a
// drain (drainOnInterrupt): then the first closes the drain channel, for
// the command to wind down in good order, and the second ends the
// context.
type interrupts struct {
	cancel context.CancelFunc
	mu     sync.Mutex
	n      int           // signals so far
	first  os.Signal     // the first signal, nil before one
	drain  chan struct{} // closed at the first signal; nil until asked for
}

type interruptsKey struct{}

// notifyInterrupts returns a context that the signals end as interrupts
// says, and a function that stops listening for them.
func notifyInterrupts(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	in := &interrupts{cancel: cancel}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case sig := <-sigs:
				in.signal(sig)
			case <-done:
				return
			}
		}
	}()
	return context.WithValue(ctx, interruptsKey{}, in), func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}

func (in *interrupts) signal(sig os.Signal) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.n++
	if in.first == nil {
		in.first = sig
	}
	if in.n == 1 && in.drain != nil {
		close(in.drain)
		return
	}
	in.cancel()
}

// stoppedBy is the signal that stopped the command of ctx, nil when none
// came.
func stoppedBy(ctx context.Context) os.Signal {
	in, _ := ctx.Value(interruptsKey{}).(*interrupts)
	if in == nil {
		return nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.first
}

// interruptStatus is the exit status of a command that sig stopped.
func interruptStatus(sig os.Signal) int {
	if sig == syscall.SIGTERM {
		return exitTerminated
	}
	return exitInterrupted
}

// drainOnInterrupt asks that the first interrupt not end ctx but close
// the channel it returns; the second then ends ctx. The channel is nil
// (never closed) when ctx is not Main's.
func drainOnInterrupt(ctx context.Context) <-chan struct{} {
	in, _ := ctx.Value(interruptsKey{}).(*interrupts)
	if in == nil {
		return nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.drain == nil {
		in.drain = make(chan struct{})
		if in.n > 0 { // interrupted before it asked: ctx has ended too
			close(in.drain)
		}
	}
	return in.drain
}

// usageError marks an error in how the command was called.
type usageError struct{ error }

// stopError is a command's refusal to go on that is no misuse of it (a
// batch stopped at a model endpoint that refuses every request): exit 2,
// without the pointer to vibe help.
type stopError struct{ error }

func (e stopError) Unwrap() error { return e.error }

// Main runs the vibe command line with args and returns the exit status.
func Main(args []string, in io.Reader, out, errOut io.Writer) int {
	// A worker keeps the workflows it ran in memory, to run their next
	// task without reading their history: 10,000 by default, too many for
	// a batch's thousands of items that finish and are not touched again.
	worker.SetStickyWorkflowCacheSize(stickyCacheSize)
	worker.SetBinaryChecksum(binaryID())
	ctx, stop := notifyInterrupts(context.Background())
	defer stop()
	io := stdio{in: in, out: out, err: errOut, args: args}
	root := newRoot(io)
	root.SetArgs(args)
	root.SetIn(in)
	root.SetOut(out)
	root.SetErr(errOut)
	err := root.ExecuteContext(ctx)
	if nm, ok := errors.AsType[*process.NoModelError](err); ok {
		// Refused before it started, as vibe ask refuses.
		err = usageError{fmt.Errorf("%w: give --llm openai:MODEL, anthropic:MODEL or replay:FILE (or set VIBE_LLM)", nm)}
	}
	if se, ok := errors.AsType[stopError](err); ok {
		fmt.Fprintf(errOut, "vibe: %v\n", se)
		return exitUsage
	}
	var ue usageError
	if err != nil && (errors.As(err, &ue) || isCobraUsage(err)) {
		fmt.Fprintf(errOut, "vibe: %v\nRun 'vibe help' for usage.\n", err)
		return exitUsage
	}
	// Ctrl-C stops every command with 130, whether it wound down in good
	// order (serve, batch) or its context's end cut it short; the command
	// may say what was left and how to go on.
	// A serve or worker that SIGTERM stopped, and whose work in flight
	// finished, stopped cleanly.
	if de, ok := errors.AsType[*drainedError](err); ok && stoppedBy(ctx) == syscall.SIGTERM {
		fmt.Fprintf(errOut, "vibe: %v\n", de)
		return exitOK
	}
	var ie *interruptedError
	isInterrupted := errors.As(err, &ie) // before the signal: a command that says how to go on says it as written
	if sig := stoppedBy(ctx); sig != nil || isInterrupted {
		switch {
		case ie != nil:
			fmt.Fprintf(errOut, "vibe: %v\n", err)
		case err != nil && !errors.Is(err, context.Canceled):
			fmt.Fprintf(errOut, "vibe: %s (interrupted)\n", durable.ErrorText(err))
		default:
			fmt.Fprintln(errOut, "vibe: interrupted")
		}
		return interruptStatus(sig)
	}
	if err == nil {
		return exitOK
	}
	// Errors about an input name its file and JSON path; others are the
	// command's own.
	var located *schema.Error
	var list schema.ErrorList
	if errors.As(err, &list) || errors.As(err, &located) {
		for _, e := range schema.Errors(err, "") {
			fmt.Fprintln(errOut, e.Error()+hint(e))
		}
		return exitError
	}
	fmt.Fprintf(errOut, "vibe: %s%s\n", durable.ErrorText(err), hint(err))
	return exitError
}

// hints say which flag mends an error the library reports in its own
// terms. An error that crossed the engine has lost its type, so its text
// is matched too.
var hints = []struct {
	err    error
	byText bool // its text is distinct enough to be found in a message
	hint   string
}{
	{registry.ErrNoRegistry, true, " (use --registry DIR)"},
	{vessel.ErrNotAllowed, false, " (allow a host with --delegate-allow HOST,…)"},
	{durable.ErrNoProvider, true, " (give the worker a model with --llm)"},
}

func hint(err error) string {
	if errors.Is(err, llm.ErrNotRecorded) || strings.Contains(err.Error(), "no recorded answer for step") {
		return " (record it by running the same command with VIBE_LLM_RECORD=FILE and a live --llm provider)"
	}
	if strings.Contains(err.Error(), "error reading server preface") {
		return " (a vibe engine takes mutual TLS only: give --tls-dir with a copy of the serving machine's DATA/tls)"
	}
	for _, h := range hints {
		if errors.Is(err, h.err) || (h.byText && strings.Contains(err.Error(), h.err.Error())) {
			return h.hint
		}
	}
	return ""
}

// isCobraUsage reports whether err is cobra's own complaint about flags or
// arguments.
func isCobraUsage(err error) bool {
	var fe *flagError
	return errors.As(err, &fe) || strings.HasPrefix(err.Error(), "unknown command ")
}

type flagError struct{ err error }

// suggestFlags is err, pflag's complaint about an unknown flag of cmd,
// with the flags of cmd nearest to it suggested, as cobra suggests
// commands; any other error as it is.
func suggestFlags(cmd *cobra.Command, err error) error {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return err
	}
	var known []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			known = append(known, f.Name)
		}
	})
	near := compose.Suggest(name, known, 3)
	if len(near) == 0 {
		return err
	}
	msg := err.Error() + "\n\nDid you mean this?\n"
	for _, n := range near {
		msg += "\t--" + n + "\n"
	}
	return errors.New(msg)
}

func (e *flagError) Error() string { return e.err.Error() }

func newRoot(io stdio) *cobra.Command {
	root := &cobra.Command{
		Use:   "vibe",
		Short: "Compiled, durable LLM workflows",
		Long: `Vibe composes Instructions (JSON Schemas a model fills in), compiles pipelines of
them into Processes, and runs them durably.

Every error names the file and the JSON path it is about, one per line:
  FILE: /json/path: message

Environment (a flag given wins):
  VIBE_DATA            the data directory of the embedded engine (--data; default .vibe)
  VIBE_REGISTRY        the registry directory (--registry)
  VIBE_LLM             the model: openai:MODEL, anthropic:MODEL or replay:FILE (--llm)
  VIBE_LLM_BASE_URL    an OpenAI-compatible or Anthropic endpoint (--llm-base-url)
  VIBE_LLM_API_KEY     the model's API key (else OPENAI_API_KEY / ANTHROPIC_API_KEY)
  VIBE_LLM_RECORD      record every answer of a live model to this FILE, for replay:FILE
  VIBE_LOG             Vibe's own log on stderr: debug, info or warn (a one-shot
                       command logs nothing unless set; vibe serve logs info)
  VIBE_TOKEN           the API token of vibe serve (--token)
  VIBE_PRICES          a prices file, to show what tokens cost (--prices)
  VIBE_DELEGATE_ALLOW  hosts delegates may be fetched from (--delegate-allow)
  VIBE_TLS_DIR, VIBE_TLS_CERT, VIBE_TLS_KEY, VIBE_TLS_CA
                       mutual TLS to a Temporal cluster (--tls-*)
  VIBE_HTTPS_CERT, VIBE_HTTPS_KEY
                       vibe serve over HTTPS (--https-cert, --https-key)
  OTEL_EXPORTER_OTLP_* where traces and metrics go (--otlp)

Exit status: 0 done, 1 failed (the errors are printed), 2 bad flags or
arguments, 130 interrupted (Ctrl-C), 143 stopped by SIGTERM.`,
		Example: `  vibe ask instruction.json --prompt "Meet Alice and Bob" --llm openai:gpt-4o-mini
  vibe run aug:processes/schedule-meeting --registry examples/schedule-meeting/registry \
      --actions-file actions.json --llm openai:gpt-4o-mini --prompt "Meet Bob on Friday"
  vibe ps --status waiting
  vibe serve --registry DIR --llm openai:gpt-4o-mini`,
		Version:       version(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("{{.Version}}")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return &flagError{suggestFlags(cmd, err)} })
	root.AddCommand(newComposeCmd(io), newCompileCmd(io), newAskCmd(io),
		newServeCmd(io), newWorkerCmd(io), newRunCmd(io), newAnswerCmd(io), newShowCmd(io), newPsCmd(io),
		newVesselCmd(io), newPlanCmd(io), newMCPCmd(io), newBatchCmd(io), newBatchesCmd(io), newReplayCmd(io), newCalibrateCmd(io), newDoctorCmd(io), newVersionCmd(io), newRequestsCmd(io))
	return root
}

// registryFlag adds --registry to cmd; its default comes from $VIBE_REGISTRY.
func registryFlag(cmd *cobra.Command, dir *string) {
	cmd.Flags().StringVar(dir, "registry", os.Getenv("VIBE_REGISTRY"), "registry directory that aug: URIs and instruction names resolve in (default $VIBE_REGISTRY)")
}

// openRegistry opens dir, or returns nil when dir is empty.
func openRegistry(dir string) (*registry.Registry, error) {
	if dir == "" {
		return nil, nil
	}
	r, err := registry.Open(dir)
	if err != nil {
		return nil, usageError{fmt.Errorf("--registry: %w", err)}
	}
	return r, nil
}

// exactArgs is cobra.ExactArgs reported as a usage error.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.ExactArgs(n)(cmd, args); err != nil {
			return &flagError{err}
		}
		return nil
	}
}

// quietLogger drops Vibe's per-call log records, which a one-shot command
// does not need on the terminal; $VIBE_LOG=debug|info|warn shows them on
// stderr.
func quietLogger() *slog.Logger {
	switch os.Getenv("VIBE_LOG") {
	case "debug":
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	case "info":
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	case "warn":
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return slog.New(slog.DiscardHandler)
}
