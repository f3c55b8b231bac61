// Package server assembles a running Vibe: a Temporal worker that runs
// every workflow and activity of Vibe (processes, direct calls,
// fire-and-forget actions, Vessel requests and their delegates), and the
// HTTP API on a listener, with the file in the data directory by which
// other commands on the same machine find that API.
//
// The engine itself — the embedded Temporal server or a client to a
// cluster — is package engine's; the API's handlers are package api's.
package server
