package batch

import (
	"encoding/json"
	"time"

	"github.com/augceo/vibe/llm"
)

// Status is what a batch has done so far.
type Status struct {
	ID      string `json:"id"`
	Process string `json:"process"`
	// Kind is "" for a batch of items run through a process, and KindReplay
	// for a replay's record (Client.Keep): the same record, listed with
	// the batches.
	Kind string `json:"kind,omitempty"`
	// Status is "running", "held" (running, but its work is held: the
	// data directory's disk is full, Held says so), "completed" (every
	// item finished), "failed" (every item finished, some failed) or
	// "canceled". The console shows "failed" with items done as
	// "completed with failures"; the value stays "failed" here, in the API
	// and in vibe batches, where scripts read it.
	Status string `json:"status"`
	// Held, for a held batch, says why and what frees it: the disk-space
	// guard's word, naming the data directory and the space free.
	Held string `json:"held,omitempty"`
	// Items counts the items read so far; Done, Failed and Waiting those
	// completed, failed and waiting for a person.
	Items   int `json:"items"`
	Done    int `json:"done"`
	Failed  int `json:"failed"`
	Waiting int `json:"waiting"`
	// Changed counts, in a replay's record, the items whose answers came
	// out changed (or that need the server or a person).
	Changed int `json:"changed,omitempty"`
	// Usage totals the model calls answered so far; Requests counts them
	// (repair turns included): a running group's as it last reported them
	// (GroupReport.Spent), a cancelled fill's as far as it went.
	Usage    llm.Usage `json:"usage"`
	Requests int       `json:"requests"`
	// Model is the model that answered, as the provider named it: what
	// the usage is priced by (llm.Prices); "" before any call.
	Model string `json:"model,omitempty"`
	// Groups counts the groups started; Ended is set once the input ended,
	// when the batch knows how many items it has.
	Groups int `json:"groups"`
	// Size is K, the items per group the batch's input was cut into at
	// its first run, and Calls the items each LLM chunk's model calls held
	// (K, or fewer where a provider's limits split a group's call): a run
	// over the same batch cuts it the same way, whatever it asks (0 and
	// nil in records older than these fields).
	Size  int            `json:"size,omitempty"`
	Calls map[string]int `json:"calls,omitempty"`
	// Digest is the input's (Digest) when the first run knew it before
	// reading: a file's, or a spooled input's.
	Digest string `json:"digest,omitempty"`
	// Splits are the chunks whose calls could not be answered whole at
	// their K: the size asked, the size that passed, and why.
	Splits []Split `json:"splits,omitempty"`
	// Audits are what the audit of the items asked alone too came to, by
	// chunk (Options.Audit); their calls are not in Requests and Usage.
	Audits []AuditCount `json:"audits,omitempty"`
	// Total is the input's lines as the first run knew them before reading
	// (Options.Total): how many items there will be, until Ended says
	// Items holds them all; 0 when unknown.
	Total      int        `json:"total,omitempty"`
	Ended      bool       `json:"ended"`
	StartedAt  time.Time  `json:"startedAt"`
	FinishedAt *time.Time `json:"finishedAt,omitempty"`
	// Provider is where the batch's provider batches are, for a batch
	// that sends its calls through the provider's Batch API
	// (CallOptions.ProviderBatch); nil for one that does not.
	Provider *ProviderState `json:"provider,omitempty"`
}

// KindReplay is the Status.Kind of a replay's record (package replay).
const KindReplay = "replay"

// An item's status in its result line.
const (
	StatusCompleted = "completed"
	StatusFailed    = "failed"
)

// A batch's status (Status.Status) while it runs, and while its work is
// held (Client.Held); it ends "completed", "failed" or "canceled".
const (
	StatusRunning = "running"
	StatusHeld    = "held"
)

// Result is one item's result line.
type Result struct {
	// Line is the item's 1-based line in the input.
	Line int `json:"line"`
	// ID is the item's process id (its workflow id).
	ID string `json:"id,omitempty"`
	// Status is StatusCompleted or StatusFailed.
	Status string `json:"status"`
	// Output is the process's output when completed.
	Output json.RawMessage `json:"output,omitempty"`
	// Error says why the item failed: the line number and JSON path for a
	// bad input line.
	Error string `json:"error,omitempty"`
	// Systemic, set when the item failed for a reason not its own, says
	// which (durable.Systemic): no model on the worker, a model endpoint
	// that refuses every request or was down past the worker's patience.
	// Run writes no such result: it stops, and a rerun asks the item
	// again.
	Systemic string `json:"systemic,omitempty"`
}
