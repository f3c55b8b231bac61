package engine_test

import (
	"context"
	"log"

	"github.com/augceo/vibe/engine"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Start an embedded engine on ./.vibe, or connect to the one another vibe
// process already runs there.
func ExampleStart() {
	ctx := context.Background()
	var opts engine.Options // embedded, ./.vibe, namespace "default"
	if addr, ok := engine.RunningAddr(opts.DataDir); ok {
		opts.HostPort = addr
	}
	e, err := engine.Start(ctx, opts)
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	w := worker.New(e.Client(), "vibe", worker.Options{})
	// w.RegisterWorkflow(...), w.RegisterActivity(...)
	if err := w.Start(); err != nil {
		log.Fatal(err)
	}
	defer w.Stop() // runs before e.Close
}

// A workflow marks itself for listing with `VibeProcess = "invoice"`.
func ExampleProcessAttribute() {
	invoice := func(ctx workflow.Context) error {
		return workflow.UpsertTypedSearchAttributes(ctx,
			engine.ProcessAttribute.ValueSet("invoice"),
			engine.StatusAttribute.ValueSet("running"),
		)
	}
	_ = invoice
}
