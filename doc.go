// Package vibe assembles a running Vibe: the engine (the embedded Temporal
// server, or a client to a cluster), a worker that runs every workflow and
// activity of Vibe — processes, direct calls, fire-and-forget actions,
// Vessel requests and their delegates, batches — with its model, actions
// and telemetry, and the clients that start, read, watch and answer them.
// The command line, the examples and a Go program share this one assembly:
//
//	rt, err := vibe.Start(ctx, vibe.Options{
//		Engine:   engine.Options{DataDir: "vibe-data"},
//		Registry: reg,
//		Provider: model,
//		Actions:  acts,
//	})
//	if err != nil { … }
//	defer rt.Close()
//	started, err := rt.Processes.Start(ctx, process.StartOptions{Process: "aug:processes/schedule-meeting"})
//
// Serve serves an HTTP handler (the API of package api, with the console
// and MCP mounted on it), over HTTPS with ServeOptions.TLS (ServerTLS),
// and leaves the file by which other commands on the same machine find it
// (RunningEndpoint). NewWorker alone is a worker for
// another machine that joins a cluster.
//
// What each part does is its own package's: engine, process, request,
// batch, action, api. A program that only composes or compiles schemas
// imports those packages (compose, compile), not this one, and pays
// nothing for the engine.
package vibe
