package main

import (
	"bufio"
	"context"
	"embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.temporal.io/sdk/temporal"
	"golang.org/x/term"

	"github.com/augceo/vibe"
	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/engine"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/llm/replay"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/registry"
)

//go:embed registry answers.jsonl
var files embed.FS

// Prompt is the request of seed 001.
const Prompt = "Ассистент, запланируй встречу между Алисой и Бобом!"

func main() {
	data := flag.String("data", engine.DefaultDataDir, "data directory of the embedded engine")
	decision := flag.String("decision", "", "answer for the person: Approve or Reject (default: ask on the terminal, or approve when there is none)")
	serve := flag.String("serve-actions", "", "serve the two actions over HTTP at `ADDR` (for actions.json and the vibe command) instead of running the process")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if *serve != "" {
		err = serveActions(ctx, *serve, os.Stdout)
	} else {
		err = run(ctx, *data, *decision, os.Stdin, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "schedule-meeting:", err)
		os.Exit(1)
	}
}

// Registry returns the example's registry.
func Registry() *registry.Registry {
	sub, _ := fs.Sub(files, "registry")
	return registry.NewFS(sub, "examples/schedule-meeting/registry")
}

// Recording returns the replay of the recorded answers.
func Recording() (*replay.Provider, error) {
	f, err := files.Open("answers.jsonl")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return replay.Read("examples/schedule-meeting/answers.jsonl", f)
}

// Actions registers the two server actions of the process.
func Actions() *action.Registry {
	acts := &action.Registry{}
	acts.Register(action.Action{Name: "FetchAvailability_Activity", Run: fetchAvailability})
	acts.Register(action.Action{Name: "sendInvitation", Run: sendInvitation})
	return acts
}

// fetchAvailability answers from a made-up calendar: both people are free
// at a few fixed hours of the day asked about.
func fetchAvailability(ctx context.Context, in jsonv.Value) (jsonv.Value, error) {
	q := in.Lookup("llmContext1").Lookup("fetchAvailability")
	start, err := time.Parse(time.RFC3339, q.Lookup("timeRange").Lookup("start").Str())
	if err != nil {
		return jsonv.Value{}, action.NonRetryable(fmt.Errorf("timeRange.start: %w", err))
	}
	day := start.UTC().Truncate(24 * time.Hour)
	slots := func(hours ...int) jsonv.Value {
		var vs []jsonv.Value
		for _, h := range hours {
			vs = append(vs, jsonv.StringValue(day.Add(time.Duration(h)*time.Hour).Format(time.RFC3339)))
		}
		return jsonv.ArrayValue(vs...)
	}
	return jsonv.ObjectValue(
		jsonv.Member{Name: "organizerSlots", Value: slots(10, 14, 16)},
		jsonv.Member{Name: "attendeeSlots", Value: slots(11, 14)},
	), nil
}

// sent holds the invitations sent, by the call's idempotency key: an
// action is delivered at least once (a crash can run it again), so the
// outbox applies each key once and answers a repeat as it did the first
// time.
var sent = struct {
	sync.Mutex
	byKey map[string]jsonv.Value
}{byKey: map[string]jsonv.Value{}}

// sendInvitation "sends" the approved invitation: it prints it, once per
// idempotency key.
func sendInvitation(ctx context.Context, in jsonv.Value) (jsonv.Value, error) {
	key := action.IdempotencyKey(ctx)
	sent.Lock()
	defer sent.Unlock()
	if out, ok := sent.byKey[key]; ok && key != "" {
		return out, nil
	}
	who := in.Lookup("llmContext1").Lookup("identifyParticipants")
	draft := in.Lookup("llmContext2").Lookup("draftInvitation")
	decision := in.Lookup("userContext").Lookup("confirmInvitation").Lookup("decision").Str()
	status := "sent"
	if decision != "Approve" {
		status = "not sent: " + strings.ToLower(decision)
	} else {
		fmt.Printf("\n  To: %s\n  From: %s\n  Subject: %s\n\n  %s\n\n", who.Lookup("attendee").Str(), who.Lookup("organizer").Str(),
			draft.Lookup("subject").Str(), strings.ReplaceAll(draft.Lookup("body").Str(), "\n", "\n  "))
	}
	out := jsonv.ObjectValue(
		jsonv.Member{Name: "messageId", Value: jsonv.StringValue("msg-" + who.Lookup("attendee").Str())},
		jsonv.Member{Name: "status", Value: jsonv.StringValue(status)},
	)
	sent.byKey[key] = out
	return out, nil
}

func run(ctx context.Context, data, decision string, in io.Reader, out io.Writer) error {
	model, err := Recording()
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	rt, err := vibe.Start(ctx, vibe.Options{Engine: engine.Options{DataDir: data}, Registry: Registry(), Provider: model, Actions: Actions(), Logger: logger})
	if err != nil {
		return err
	}
	defer rt.Close()

	c := rt.Processes
	started, err := c.Start(ctx, process.StartOptions{Process: "aug:processes/schedule-meeting", Prompt: Prompt})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Started %s on the embedded engine in %s.\nThe model's answers are replayed from a recording (examples/schedule-meeting/answers.jsonl), not asked of a live model.\n"+
		"The prompt and the answers are in Russian, the language of the seed document this example comes from (seed 001); the lines \"In English:\" say what they hold.\n\n", started.ID, data)
	// The watch yields the process each time it has changed, and ends
	// with it: the last view is the completed or failed process.
	var info *process.Info
	shown := 0
	for info, err = range c.Watch(ctx, started.ID, process.WatchOptions{}) {
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("%w: %s keeps waiting in %s", err, started.ID, data)
			}
			return err
		}
		for ; shown < len(info.Done); shown++ {
			fmt.Fprintf(out, "✓ %s\n", info.Done[shown])
		}
		if info.Status == process.Waiting {
			answer, err := approve(info, decision, in, out)
			if err != nil {
				return err
			}
			if _, err := c.Answer(ctx, started.ID, answer); err != nil {
				return err
			}
		}
	}
	if info.Status == process.Failed {
		return fmt.Errorf("the process failed: %s", *info.Error)
	}
	b := jsonv.MarshalIndent(info.State, "  ")
	fmt.Fprintf(out, "\nIn English: %s\n", summary(info.State))
	fmt.Fprintf(out, "\nCompleted. Model usage: %d prompt + %d completion tokens (replayed).\nState:\n%s\n", info.Usage.PromptTokens, info.Usage.CompletionTokens, b)
	return nil
}

// approve gets the person's decision: from -decision, from the terminal, or
// — with neither — approval on the person's behalf, said out loud.
func approve(info *process.Info, decision string, in io.Reader, out io.Writer) (jsonv.Value, error) {
	draft := info.Waiting.Context.Lookup("llmContext2").Lookup("draftInvitation")
	fmt.Fprintf(out, "\nThe process waits for your approval of this invitation:\n\n  Subject: %s\n\n  %s\n\n",
		draft.Lookup("subject").Str(), strings.ReplaceAll(draft.Lookup("body").Str(), "\n", "\n  "))
	who := info.State.Lookup("llmContext1").Lookup("identifyParticipants")
	fmt.Fprintf(out, "In English: an invitation from %s to %s to meet at %s.\n\n", who.Lookup("organizer").Str(), who.Lookup("attendee").Str(),
		info.State.Lookup("llmContext2").Lookup("findCommonSlot").Lookup("selectedSlot").Str())
	if decision == "" {
		f, ok := in.(*os.File)
		if !ok || !term.IsTerminal(int(f.Fd())) {
			fmt.Fprintln(out, "No terminal to ask on: approving on your behalf (use -decision Reject to decline).")
			decision = "Approve"
		} else {
			sc := bufio.NewScanner(in)
			for decision == "" {
				fmt.Fprint(out, "Approve or Reject? ")
				if !sc.Scan() {
					return jsonv.Value{}, errors.New("no decision given")
				}
				switch strings.ToLower(strings.TrimSpace(sc.Text())) {
				case "approve", "a", "y", "yes":
					decision = "Approve"
				case "reject", "r", "n", "no":
					decision = "Reject"
				}
			}
		}
	}
	return jsonv.Parse([]byte(`{"confirmInvitation":{"decision":"` + decision + `"}}`))
}

// summary says in English what the process's (Russian) state holds: who
// meets when, and what became of the invitation.
func summary(state jsonv.Value) string {
	who := state.Lookup("llmContext1").Lookup("identifyParticipants")
	slot := state.Lookup("llmContext2").Lookup("findCommonSlot").Lookup("selectedSlot").Str()
	sent := state.Lookup("serverContext2").Lookup("sendInvitation")
	return fmt.Sprintf("%s and %s meet at %s (the slot the model chose from both calendars); the invitation: %s (%s).",
		who.Lookup("organizer").Str(), who.Lookup("attendee").Str(), slot, sent.Lookup("status").Str(), sent.Lookup("messageId").Str())
}

// serveActions serves the two actions over HTTP — POST /FetchAvailability_Activity
// and POST /sendInvitation, as actions.json names them — so that the vibe
// command (vibe run, vibe serve) can run the process with its own model:
// the command line takes actions from an actions file, not Go functions.
// The body is the action's input, the reply its output; the Idempotency-Key
// header is the call's key.
func serveActions(ctx context.Context, addr string, out io.Writer) error {
	srv := &http.Server{Addr: addr, Handler: actionsHandler(out), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	fmt.Fprintf(out, "Serving the actions FetchAvailability_Activity and sendInvitation at http://%s/ (examples/schedule-meeting/actions.json); Ctrl-C stops.\n", addr)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// actionsHandler answers POST /NAME with the action NAME's result.
func actionsHandler(out io.Writer) http.Handler {
	mux := http.NewServeMux()
	acts := Actions()
	for _, name := range acts.Names() {
		act, _ := acts.Resolve(name)
		mux.HandleFunc("POST /"+name, func(w http.ResponseWriter, r *http.Request) {
			body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			in, err := jsonv.Parse(body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			res, err := act.Run(action.WithIdempotencyKey(r.Context(), r.Header.Get("Idempotency-Key")), in)
			if err != nil {
				// 4xx fails the step at once; 5xx is retried.
				status := http.StatusInternalServerError
				if ae := (*temporal.ApplicationError)(nil); errors.As(err, &ae) && ae.NonRetryable() {
					status = http.StatusUnprocessableEntity
				}
				http.Error(w, err.Error(), status)
				return
			}
			fmt.Fprintf(out, "%s: answered %s\n", name, r.Header.Get("Idempotency-Key"))
			w.Header().Set("Content-Type", "application/json")
			w.Write(jsonv.Marshal(res))
		})
	}
	return mux
}

// compile-time check that the replay provider is a provider.
var _ llm.Provider = (*replay.Provider)(nil)
