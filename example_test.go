package vibe_test

import (
	"context"
	"fmt"
	"log"

	"github.com/augceo/vibe"
	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/engine"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/registry"
)

// A Vibe in a Go program: the embedded engine in a data directory, a
// worker with the program's actions, and a process started and followed
// to its end. (Not run as a test: it needs a model and a registry.)
func ExampleStart() {
	ctx := context.Background()
	reg, err := registry.Open("registry") // aug:processes/schedule-meeting and its instructions
	if err != nil {
		log.Fatal(err)
	}
	acts := &action.Registry{}
	action.RegisterFunc(acts, "SendInvitation", func(ctx context.Context, in struct{ To string }) (string, error) {
		return "sent to " + in.To, nil
	}, action.Options{})
	rt, err := vibe.Start(ctx, vibe.Options{
		Engine:   engine.Options{DataDir: ".vibe"},
		Registry: reg,
		Actions:  acts,
		// Provider: a model (llm/openai, llm/anthropic or llm/replay).
	})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()
	started, err := rt.Processes.Start(ctx, process.StartOptions{Process: "aug:processes/schedule-meeting", Prompt: "Meet Bob next week"})
	if err != nil {
		log.Fatal(err)
	}
	for info, err := range rt.Processes.Watch(ctx, started.ID, process.WatchOptions{}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(info.Status, info.Done)
	}
}
