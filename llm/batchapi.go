package llm

import (
	"context"
	"fmt"
	"time"
)

// BatchAPI is a provider's Batch API: many requests sent as one provider
// batch and answered within the provider's window (24 hours, most within
// the hour) at a discount — half price at OpenAI and Anthropic. llm/openai
// (OpenAI's Batch API, and compatible servers that offer it) and
// llm/anthropic (Message Batches) implement it with their SDKs' batch
// clients; a Provider that has no Batch API does not.
type BatchAPI interface {
	// SubmitBatch sends s.Requests as one provider batch and returns its
	// id. With s.Since set — an earlier SubmitBatch of the same key may
	// have been cut off — it first looks for what that call made (the
	// uploaded file, the created batch) and goes on from there instead of
	// sending anything twice.
	SubmitBatch(ctx context.Context, s BatchSubmission) (string, error)
	// BatchStatus reports where a provider batch is.
	BatchStatus(ctx context.Context, id string) (*BatchStatus, error)
	// BatchResults reads the answers of an ended batch by request id. A
	// request the batch has no answer for is absent. requests are the
	// batch's requests as submitted (BatchSubmission.Requests): a provider
	// that adapted a request for its wire (OpenAI's strict mode) needs the
	// original to undo that on the answer, and the provider keeps nothing
	// between calls — a durable caller may ask from another process.
	BatchResults(ctx context.Context, id string, requests []BatchRequest) (map[string]BatchResult, error)
	// CancelBatch asks the provider to cancel a batch; one that already
	// ended is no error.
	CancelBatch(ctx context.Context, id string) error
	// BatchLimits are the provider's bounds on one batch.
	BatchLimits() BatchLimits
}

// BatchSubmission is one provider batch to send.
type BatchSubmission struct {
	// Key names the submission: letters, digits, '-' and '_', at most 64
	// bytes. The same work always has the same key.
	Key string
	// Requests are the batch's requests; their IDs are unique within it
	// (letters, digits, '-' and '_', at most 64 bytes: Anthropic's
	// custom_id).
	Requests []BatchRequest
	// Since, when set, is when an earlier attempt of this submission
	// began: what it made at or after then is found and used.
	Since time.Time
}

// BatchRequest is one request of a provider batch, under its id
// (custom_id).
type BatchRequest struct {
	ID      string   `json:"id"`
	Request *Request `json:"request"`
}

// BatchStatus is where a provider batch is.
type BatchStatus struct {
	ID string `json:"id"`
	// Status is the provider's own word for it ("validating",
	// "in_progress", "finalizing", "completed", "failed", "expired",
	// "cancelling", "cancelled" at OpenAI; "in_progress", "canceling",
	// "ended" at Anthropic).
	Status string `json:"status"`
	// Ended is true once no request of it will be answered any more: its
	// results (BatchResults) are final.
	Ended bool `json:"ended,omitempty"`
	// The requests by outcome so far.
	Total     int `json:"total"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	// Error is why the whole batch failed, when it did (a request file the
	// provider refused).
	Error string `json:"error,omitempty"`
}

// BatchResult is the outcome of one request of a provider batch: its
// answer, or why there is none.
type BatchResult struct {
	// Response is the answer; nil when the request failed.
	Response *Response `json:"response,omitempty"`
	// Error says why the request has no answer: the provider's error for
	// it, or that the batch expired or was cancelled before it was
	// answered.
	Error string `json:"error,omitempty"`
}

// BatchLimits bound one provider batch.
type BatchLimits struct {
	// MaxRequests is the most requests (50,000 at OpenAI, 100,000 at
	// Anthropic); MaxBytes the largest request file or body (200 MB,
	// 256 MB).
	MaxRequests int
	MaxBytes    int64
}

// Wrapper is a Provider that wraps another (a recorder, a counter): its
// Unwrap returns the provider it wraps.
type Wrapper interface {
	Unwrap() Provider
}

// batchAPIHolder is a wrapper whose Batch API is not its own methods but
// one it makes from what it wraps (replay.Recorder records the answers of
// the batches of the provider it records).
type batchAPIHolder interface {
	BatchAPI() (BatchAPI, bool)
}

// BatchAPIOf is the Batch API of p, or of the provider p wraps
// (Wrapper), and whether it has one. A wrapper with a method
// BatchAPI() (BatchAPI, bool) gives its own (replay.Recorder does).
func BatchAPIOf(p Provider) (BatchAPI, bool) {
	for p != nil {
		if b, ok := p.(BatchAPI); ok {
			return b, true
		}
		if h, ok := p.(batchAPIHolder); ok {
			return h.BatchAPI()
		}
		w, ok := p.(Wrapper)
		if !ok {
			break
		}
		p = w.Unwrap()
	}
	return nil, false
}

// Check reports whether s fits limits: a valid key, at least one request
// and no more than limits.MaxRequests, each with a valid id unique within
// the submission and a request. The size in bytes is the provider's to
// check, on what it sends.
func (s BatchSubmission) Check(limits BatchLimits) error {
	if !batchName(s.Key) {
		return fmt.Errorf("batch key %q: want 1 to 64 letters, digits, '-' or '_'", s.Key)
	}
	if len(s.Requests) == 0 {
		return fmt.Errorf("batch %s: no requests", s.Key)
	}
	if limits.MaxRequests > 0 && len(s.Requests) > limits.MaxRequests {
		return fmt.Errorf("batch %s: %d requests, over the provider's limit of %d", s.Key, len(s.Requests), limits.MaxRequests)
	}
	seen := make(map[string]bool, len(s.Requests))
	for i, r := range s.Requests {
		switch {
		case !batchName(r.ID):
			return fmt.Errorf("batch %s: request %d: id %q: want 1 to 64 letters, digits, '-' or '_'", s.Key, i, r.ID)
		case seen[r.ID]:
			return fmt.Errorf("batch %s: request %d: id %q is not unique", s.Key, i, r.ID)
		case r.Request == nil:
			return fmt.Errorf("batch %s: request %s: no request", s.Key, r.ID)
		}
		seen[r.ID] = true
	}
	return nil
}

// batchName reports whether s is a valid batch key or request id: 1 to 64
// letters, digits, '-' or '_' (Anthropic's custom_id).
func batchName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
