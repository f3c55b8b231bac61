package engine_test

import (
	"context"
	"errors"
	"log"

	"github.com/augceo/vibe/engine"
	"go.temporal.io/sdk/worker"
)

// Connect to the engine another vibe process runs on ./.vibe, or start an
// embedded one there if none does.
func ExampleAttach() {
	ctx := context.Background()
	var opts engine.Options // embedded, ./.vibe, namespace "default"
	e, err := engine.Attach(ctx, opts)
	if errors.Is(err, engine.ErrNotRunning) {
		e, err = engine.Start(ctx, opts)
	}
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

// Serve the embedded engine to workers on other machines: the frontend
// listens on every interface, port 7233, and needs the client certificate
// in .vibe/tls.
func ExampleStart_listenHost() {
	e, err := engine.Start(context.Background(), engine.Options{ListenHost: "0.0.0.0", FrontendPort: 7233})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	// Copy these to the worker machines, privately.
	cert, key, ca := engine.ClientCertFiles("")
	log.Printf("engine on port 7233; workers need %s, %s and %s", cert, key, ca)
}

// A worker on another machine joins an engine served as above, with the
// client certificate, its key and the CA copied from the serving machine's
// .vibe/tls. It dials one of the serving machine's interface addresses (or
// its host name), which the server certificate lists.
func ExampleLoadClientTLS() {
	cfg, err := engine.LoadClientTLS("certs/client.pem", "certs/client-key.pem", "certs/ca.pem")
	if err != nil {
		log.Fatal(err)
	}
	e, err := engine.Start(context.Background(), engine.Options{HostPort: "192.168.1.20:7233", TLS: cfg})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	w := worker.New(e.Client(), "vibe", worker.Options{})
	if err := w.Run(worker.InterruptCh()); err != nil {
		log.Fatal(err)
	}
}
