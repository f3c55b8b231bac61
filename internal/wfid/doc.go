// Package wfid makes Vibe's workflow ids: readable, safe in URLs and
// Temporal's UI, and — where a workflow starts another — the same on every
// replay of the starting workflow.
package wfid
