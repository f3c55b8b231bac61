package main

import (
	"context"
	"embed"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/augceo/vibe"
	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/engine"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm/replay"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/registry"
)

func main() {
	data := flag.String("data", engine.DefaultDataDir, "data directory of the embedded engine")
	actions := flag.String("actions", "examples/calendar-mcp/actions.json", "the actions file: the calendar's MCP server and tools")
	decision := flag.String("decision", "Approve", "your answer to the draft: Approve or Reject")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *data, *actions, *decision, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "calendar-mcp:", err)
		os.Exit(1)
	}
}

//go:embed registry answers.jsonl
var files embed.FS

// Prompt is the person's request.
const Prompt = "Book 30 minutes with Bob (bob@example.com) on 20 March 2024. I am Alice, alice@example.com."

// Recorded returns the example's registry, and the model's answers as the
// recording replays them.
func Recorded() (*registry.Registry, *replay.Provider, error) {
	sub, _ := fs.Sub(files, "registry")
	answers, err := files.Open("answers.jsonl")
	if err != nil {
		return nil, nil, err
	}
	defer answers.Close()
	model, err := replay.Read("examples/calendar-mcp/answers.jsonl", answers)
	return registry.NewFS(sub, "examples/calendar-mcp/registry"), model, err
}

// run books the meeting on the embedded engine in data, with the actions
// of actionsFile (the calendar's MCP tools), answering the approval with
// decision.
func run(ctx context.Context, data, actionsFile, decision string, out io.Writer) error {
	reg, model, err := Recorded()
	if err != nil {
		return err
	}
	var pool action.MCPPool // one session with the calendar, for both tools
	defer pool.Close()
	list, err := action.Load(actionsFile, &pool)
	if err != nil {
		return err
	}
	acts := &action.Registry{}
	for _, a := range list {
		if err := acts.Register(a); err != nil {
			return err
		}
	}
	logger := slog.New(slog.DiscardHandler)
	rt, err := vibe.Start(ctx, vibe.Options{Engine: engine.Options{DataDir: data}, Registry: reg, Provider: model, Actions: acts, Logger: logger})
	if err != nil {
		return err
	}
	defer rt.Close()

	// The runtime's client checks each step that runs an MCP tool against
	// the tool's input schema before the process starts.
	c := rt.Processes
	started, err := c.Start(ctx, process.StartOptions{Process: "aug:processes/book-meeting", Prompt: Prompt})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Started %s on the embedded engine in %s; its server steps are tools of the calendar's MCP server (%s).\n"+
		"The model's answers are replayed from a recording (examples/calendar-mcp/answers.jsonl), not asked of a live model.\n\n", started.ID, data, actionsFile)
	// The watch yields the process each time it has changed, and ends
	// with it: the last view is the completed or failed process.
	var info *process.Info
	shown := 0
	for info, err = range c.Watch(ctx, started.ID, process.WatchOptions{}) {
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("%w: %s goes on in %s", err, started.ID, data)
			}
			return err
		}
		for ; shown < len(info.Done); shown++ {
			fmt.Fprintf(out, "✓ %s\n", info.Done[shown])
		}
		if info.Status == process.Waiting {
			draft := info.Waiting.Context.Lookup("llmContext2").Lookup("draftInvitation")
			fmt.Fprintf(out, "\nThe draft to approve:\n%s\nYour decision (-decision): %s\n\n", jsonv.MarshalIndent(draft, "  "), decision)
			answer := jsonv.ObjectValue(jsonv.Member{Name: "approveInvitation", Value: jsonv.ObjectValue(jsonv.Member{Name: "decision", Value: jsonv.StringValue(decision)})})
			if _, err := c.Answer(ctx, started.ID, answer); err != nil {
				return err
			}
		}
	}
	if info.Status == process.Failed {
		return fmt.Errorf("the process failed: %s", *info.Error)
	}
	fmt.Fprintf(out, "\nCompleted. State:\n%s\n", jsonv.MarshalIndent(info.State, "  "))
	return nil
}
