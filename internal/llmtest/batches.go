package llmtest

import (
	"fmt"
	"maps"
	"sync"
	"time"
)

// Event is a step a client took through a test server's Batch API, as
// Options.OnEvent and Batches.Await report it.
type Event struct {
	Kind string // EventUpload, EventBatch, EventPoll, EventCancel or EventResults
	ID   string // the uploaded file's id (EventUpload), else the batch's
}

// The kinds of Event.
const (
	// EventUpload: a request file was uploaded (OpenAI).
	EventUpload = "upload"
	// EventBatch: a batch was created.
	EventBatch = "batch"
	// EventPoll: a batch's status was read (and it moved, unless held).
	EventPoll = "poll"
	// EventCancel: a batch was asked to cancel.
	EventCancel = "cancel"
	// EventResults: a batch's results were read (OpenAI: its output or
	// error file was downloaded).
	EventResults = "results"
)

// The wires a Batches speaks.
const (
	wireOpenAI    = "openai"
	wireAnthropic = "anthropic"
)

// Batches is a test server's Batch API: the batches it holds, the clock
// that moves them, the faults a test injects, and what clients did.
//
// The clock is the clients' polls: each read of a batch (its status)
// moves it one step before it is answered, unless Hold holds the batches;
// Advance moves one without a poll. OpenAI's batches go validating →
// in_progress → (requests answered) → finalizing → completed, a request
// file that breaks OpenAI's rules failing at the first step; Anthropic's
// go in_progress → (requests answered) → ended. While in progress a step
// answers Pace requests (all of them by default), each with what the
// server's answer func gives its body — the same answer a direct request
// with that body gets. A cancel moves a batch to cancelling (Anthropic:
// canceling); its next step ends it (cancelled; Anthropic: ended), its
// unanswered requests cancelled.
//
// Faults are set by request id (custom_id), for any batch, before or
// after it is created: Fail answers a request with an error, Expire
// leaves it unanswered until the rest are done and then expires the batch
// (it ends "expired", Anthropic "ended", the request expired).
// ExpireBatch and FailBatch end one whole batch at its next step.
//
// It is safe for concurrent use.
type Batches struct {
	wire    string
	onEvent func(Event)
	// answer gives the status and body of the answer to a batch request's
	// body.
	answer func(body []byte) (int, []byte)

	mu       sync.Mutex
	held     bool
	pace     int
	failures map[string]string // custom_id → the error it is answered with
	expiring map[string]bool   // custom_ids left unanswered
	batches  []*batch          // in creation order
	byID     map[string]*batch
	files    []*file // in upload order
	fileByID map[string]*file
	seq      int

	uploads, created, cancels, reads int
	submitted                        map[string]int // custom_id → in how many created batches
	waiters                          map[string][]chan Event
}

func newBatches(wire string, onEvent func(Event), answer func([]byte) (int, []byte)) *Batches {
	return &Batches{wire: wire, onEvent: onEvent, answer: answer,
		failures: map[string]string{}, expiring: map[string]bool{}, byID: map[string]*batch{},
		fileByID: map[string]*file{}, submitted: map[string]int{}, waiters: map[string][]chan Event{}}
}

// phase is where a batch is, on either wire.
type phase int

const (
	validating phase = iota // OpenAI only
	running
	finalizing // OpenAI only
	cancelling
	done
)

// batch is one provider batch.
type batch struct {
	id        string
	created   time.Time
	phase     phase
	end       string // how it ended: "completed", "failed", "expired", "cancelled"
	endedAt   time.Time
	cancelAt  time.Time
	endpoint  string            // OpenAI
	inputFile string            // OpenAI
	metadata  map[string]string // OpenAI
	requests  []batchRequest    // in order
	outcomes  map[string]outcome
	errors    []lineError // why the batch failed
	expire    bool        // ExpireBatch: it expires at its next step
	fail      string      // FailBatch: it fails at its next step
	output    string      // OpenAI: the output file's id
	errorFile string      // OpenAI: the error file's id
}

// batchRequest is one request of a batch.
type batchRequest struct {
	line     int // 1-based line of the request file (OpenAI) or index + 1
	customID string
	method   string // OpenAI
	url      string // OpenAI
	body     []byte
}

// outcome is what became of one request of a batch.
type outcome struct {
	kind    string // "succeeded", "errored", "expired", "canceled"
	status  int    // the answer's HTTP status (succeeded, errored)
	body    []byte // the answer's body (succeeded, errored)
	message string // errored without an answer
}

// lineError is an error of a request file (OpenAI's batch errors.data).
type lineError struct {
	Code    string `json:"code"`
	Line    int    `json:"line,omitempty"`
	Message string `json:"message"`
}

// file is an uploaded or produced file (OpenAI).
type file struct {
	id       string
	name     string
	purpose  string
	created  time.Time
	contents []byte
	batch    string // the batch whose results it holds
}

// Hold stops the clock: polls no longer move batches, until Release.
func (b *Batches) Hold() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.held = true
}

// Release starts the clock again after Hold.
func (b *Batches) Release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.held = false
}

// Pace sets how many requests one step of an in-progress batch answers;
// 0, the default, is all of them.
func (b *Batches) Pace(n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pace = n
}

// Advance moves batch id one step, held or not, as a poll would; false
// when there is no such batch.
func (b *Batches) Advance(id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	bt := b.byID[id]
	if bt != nil {
		b.step(bt)
	}
	return bt != nil
}

// Fail makes the request customID of any batch fail with message (OpenAI:
// an answer of status 400 with that error; Anthropic: an errored result
// of an invalid_request_error).
func (b *Batches) Fail(customID, message string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failures[customID] = message
}

// Expire leaves the requests customIDs of any batch unanswered: once its
// other requests are done, the batch expires with them.
func (b *Batches) Expire(customIDs ...string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, id := range customIDs {
		b.expiring[id] = true
	}
}

// ExpireBatch makes batch id expire at its next step, its unanswered
// requests expired; false when there is no such batch.
func (b *Batches) ExpireBatch(id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	bt := b.byID[id]
	if bt != nil {
		bt.expire = true
	}
	return bt != nil
}

// FailBatch makes batch id fail at its next step with message: OpenAI's
// batch becomes "failed" with that error and answers nothing more;
// Anthropic's, which has no such state, ends with its unanswered requests
// errored with message. False when there is no such batch.
func (b *Batches) FailBatch(id, message string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	bt := b.byID[id]
	if bt != nil {
		bt.fail = message
	}
	return bt != nil
}

// Status is batch id's status as the wire says it ("" when there is no
// such batch), without moving it.
func (b *Batches) Status(id string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if bt := b.byID[id]; bt != nil {
		return b.status(bt)
	}
	return ""
}

// IDs are the ids of the batches created so far, in order.
func (b *Batches) IDs() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	ids := make([]string, len(b.batches))
	for i, bt := range b.batches {
		ids[i] = bt.id
	}
	return ids
}

// Uploads counts the request files uploaded (OpenAI; 0 on Anthropic's
// wire, where a batch carries its requests).
func (b *Batches) Uploads() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.uploads
}

// Uploaded returns the contents of the request files uploaded (OpenAI),
// in order.
func (b *Batches) Uploaded() [][]byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out [][]byte
	for _, f := range b.files {
		if f.purpose == "batch" {
			out = append(out, f.contents)
		}
	}
	return out
}

// Created counts the batches created.
func (b *Batches) Created() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.created
}

// Cancels counts the cancel requests.
func (b *Batches) Cancels() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cancels
}

// ResultsRead counts the reads of batches' results (OpenAI: downloads of
// output and error files).
func (b *Batches) ResultsRead() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reads
}

// Submitted counts, per request id, the created batches that carried it:
// a request submitted twice counts 2.
func (b *Batches) Submitted() map[string]int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return maps.Clone(b.submitted)
}

// Answered counts the batch requests answered (succeeded or errored).
func (b *Batches) Answered() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, bt := range b.batches {
		for _, o := range bt.outcomes {
			if o.kind == "succeeded" || o.kind == "errored" {
				n++
			}
		}
	}
	return n
}

// Await returns a channel that receives the next event of kind, once.
func (b *Batches) Await(kind string) <-chan Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	ch := make(chan Event, 1)
	b.waiters[kind] = append(b.waiters[kind], ch)
	return ch
}

// event reports e to Options.OnEvent and the waiters of its kind. It is
// called without b.mu held.
func (b *Batches) event(e Event) {
	b.mu.Lock()
	ws := b.waiters[e.Kind]
	delete(b.waiters, e.Kind)
	b.mu.Unlock()
	for _, ch := range ws {
		ch <- e
	}
	if b.onEvent != nil {
		b.onEvent(e)
	}
}

// nextID is a new id with prefix.
func (b *Batches) nextID(prefix string) string {
	b.seq++
	return fmt.Sprintf("%s%d", prefix, b.seq)
}

// add creates a batch of requests; b.mu is held.
func (b *Batches) add(bt *batch) {
	bt.id = b.nextID(map[string]string{wireOpenAI: "batch_", wireAnthropic: "msgbatch_"}[b.wire])
	bt.created = time.Now()
	bt.outcomes = map[string]outcome{}
	if b.wire == wireAnthropic {
		bt.phase = running
	}
	b.batches = append(b.batches, bt)
	b.byID[bt.id] = bt
	b.created++
	for _, r := range bt.requests {
		b.submitted[r.customID]++
	}
}

// poll moves bt one step unless the clock is held; b.mu is held.
func (b *Batches) poll(bt *batch) {
	if !b.held {
		b.step(bt)
	}
}

// step moves bt one step; b.mu is held.
func (b *Batches) step(bt *batch) {
	switch {
	case bt.phase == done:
		return
	case bt.fail != "":
		if b.wire == wireOpenAI {
			bt.errors = append(bt.errors, lineError{Code: "batch_failed", Message: bt.fail})
			b.finish(bt, "failed", "")
			return
		}
		for _, r := range bt.requests {
			if _, ok := bt.outcomes[r.customID]; !ok {
				bt.outcomes[r.customID] = outcome{kind: "errored", message: bt.fail}
			}
		}
		b.finish(bt, "completed", "")
		return
	case bt.expire:
		b.finish(bt, "expired", "expired")
		return
	}
	switch bt.phase {
	case validating:
		if bt.errors = validate(bt); len(bt.errors) > 0 {
			b.finish(bt, "failed", "")
			return
		}
		bt.phase = running
	case running:
		n := 0
		left := 0
		for _, r := range bt.requests {
			if _, ok := bt.outcomes[r.customID]; ok || b.expiring[r.customID] {
				if !ok {
					left++
				}
				continue
			}
			if b.pace > 0 && n >= b.pace {
				left++
				continue
			}
			n++
			if msg, ok := b.failures[r.customID]; ok {
				bt.outcomes[r.customID] = b.failure(msg)
				continue
			}
			status, body := b.answer(r.body)
			bt.outcomes[r.customID] = outcome{kind: "succeeded", status: status, body: body}
		}
		if left > 0 {
			if n == 0 {
				// Only expiring requests are left: the window closes on them.
				b.finish(bt, "expired", "expired")
			}
			return
		}
		if b.wire == wireOpenAI {
			bt.phase = finalizing
			return
		}
		b.finish(bt, "completed", "")
	case finalizing:
		b.finish(bt, "completed", "")
	case cancelling:
		b.finish(bt, "cancelled", "canceled")
	}
}

// failure is the outcome of a request failed with msg.
func (b *Batches) failure(msg string) outcome {
	if b.wire == wireOpenAI {
		body := fmt.Appendf(nil, `{"error":{"message":%q,"type":"invalid_request_error","param":null,"code":null}}`, msg)
		return outcome{kind: "errored", status: 400, body: body, message: msg}
	}
	return outcome{kind: "errored", message: msg}
}

// finish ends bt as end, its unanswered requests given the outcome
// unanswered ("" leaves them without one); b.mu is held.
func (b *Batches) finish(bt *batch, end, unanswered string) {
	if unanswered != "" {
		for _, r := range bt.requests {
			if _, ok := bt.outcomes[r.customID]; !ok {
				bt.outcomes[r.customID] = outcome{kind: unanswered}
			}
		}
	}
	bt.phase, bt.end, bt.endedAt = done, end, time.Now()
	if b.wire == wireOpenAI {
		b.writeFiles(bt)
	}
}

// cancel asks bt to cancel; false when it has ended. b.mu is held.
func (b *Batches) cancel(bt *batch) bool {
	b.cancels++
	if bt.phase == done {
		return false
	}
	if bt.phase != cancelling {
		bt.phase, bt.cancelAt = cancelling, time.Now()
	}
	return true
}

// status is bt's status as the wire says it; b.mu is held.
func (b *Batches) status(bt *batch) string {
	if b.wire == wireAnthropic {
		switch bt.phase {
		case cancelling:
			return "canceling"
		case done:
			return "ended"
		}
		return "in_progress"
	}
	switch bt.phase {
	case validating:
		return "validating"
	case running:
		return "in_progress"
	case finalizing:
		return "finalizing"
	case cancelling:
		return "cancelling"
	}
	return bt.end
}

// counts are bt's requests by outcome; b.mu is held.
func (bt *batch) counts() (succeeded, errored, expired, canceled, processing int) {
	for _, r := range bt.requests {
		o, ok := bt.outcomes[r.customID]
		switch {
		case !ok:
			processing++
		case o.kind == "succeeded":
			succeeded++
		case o.kind == "errored":
			errored++
		case o.kind == "expired":
			expired++
		case o.kind == "canceled":
			canceled++
		}
	}
	return
}
