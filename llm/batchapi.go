package llm

import (
	"context"
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
	// request the batch has no answer for is absent.
	BatchResults(ctx context.Context, id string) (map[string]BatchResult, error)
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

// BatchAPIOf is the Batch API of p, or of the provider p wraps
// (Wrapper), and whether it has one.
func BatchAPIOf(p Provider) (BatchAPI, bool) {
	for p != nil {
		if b, ok := p.(BatchAPI); ok {
			return b, true
		}
		w, ok := p.(Wrapper)
		if !ok {
			break
		}
		p = w.Unwrap()
	}
	return nil, false
}
