// Package watch follows a value that changes somewhere else — a process, a
// Vessel request, a batch, a console page — by reading it again and again
// and yielding it each time it has changed. It is the one polling loop of
// Vibe's clients: process.Watch, request.Watch, batch results and the
// console's event streams are built on it, so that none of them keeps a
// loop of its own.
package watch
