package record

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/jsonv"
)

// Record is what a replay needs of one finished (or stopped) process or
// batch item.
type Record struct {
	// ID is the process's id (a batch item's: batch.ItemID).
	ID string `json:"id"`
	// Process is the name of the process it ran.
	Process string `json:"process"`
	// Batch and Line say which batch and input line (from 1) an item
	// comes from; empty for a process of its own.
	Batch string `json:"batch,omitempty"`
	Line  int    `json:"line,omitempty"`
	// Status is the status it ended in (completed, failed, or running or
	// waiting when it was stopped there), Error why it failed.
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
	// Ended is when the record was written.
	Ended time.Time `json:"ended"`
	// System, Prompt and Input are what the process was started with.
	System string      `json:"system,omitempty"`
	Prompt string      `json:"prompt,omitempty"`
	Input  jsonv.Value `json:"input,omitzero"`
	// Chunks are the chunks it finished, in order.
	Chunks []Chunk `json:"chunks"`
}

// Chunk is one finished chunk of a Record.
type Chunk struct {
	Name string       `json:"name"`
	Kind compile.Kind `json:"kind"`
	// Fingerprint is an LLM chunk's Fingerprint when it was answered.
	Fingerprint string `json:"fingerprint,omitempty"`
	// Context is the minimal context the chunk was given.
	Context jsonv.Value `json:"context,omitzero"`
	// Answer is an LLM chunk's whole answer, or a person's answer to a
	// USER chunk; null for a SERVER chunk.
	Answer jsonv.Value `json:"answer,omitzero"`
	// Model is the model that answered an LLM chunk.
	Model string `json:"model,omitempty"`
	// Steps are a SERVER chunk's actions: what each was given and what
	// it returned.
	Steps []Step `json:"steps,omitempty"`
}

// Step is one server step's action of a Record: its qualified name, the
// input it was given and the output it returned.
type Step struct {
	Name   string      `json:"name"`
	Input  jsonv.Value `json:"input"`
	Output jsonv.Value `json:"output"`
}

// Chunk returns the record's chunk of that name, or nil.
func (r *Record) Chunk(name string) *Chunk {
	for i := range r.Chunks {
		if r.Chunks[i].Name == name {
			return &r.Chunks[i]
		}
	}
	return nil
}

// Step returns the chunk's step of that qualified name, or nil.
func (c *Chunk) Step(name string) *Step {
	for i := range c.Steps {
		if c.Steps[i].Name == name {
			return &c.Steps[i]
		}
	}
	return nil
}

// Fingerprint is what makes an LLM chunk's answer, but for its inputs and
// the model: its compiled schema (its instructions, the descriptions,
// within it) and the system text, hashed. It changes with the schema, not
// with how a request lays them out.
func Fingerprint(ch *compile.ProgramChunk, system string) string {
	h := sha256.New()
	h.Write([]byte(ch.Kind))
	h.Write([]byte{0})
	h.Write(jsonv.Marshal(ch.Schema))
	h.Write([]byte{0})
	h.Write([]byte(system))
	return hex.EncodeToString(h.Sum(nil)[:16])
}
