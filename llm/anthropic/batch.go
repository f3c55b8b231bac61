package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/augceo/vibe/llm"
)

// The Provider is one of llm's BatchAPIs.
var _ llm.BatchAPI = (*Provider)(nil)

// BatchLimits are Anthropic's bounds on one Message Batch: 100,000
// requests, a body of 256 MB.
func (p *Provider) BatchLimits() llm.BatchLimits {
	return llm.BatchLimits{MaxRequests: 100_000, MaxBytes: 256 << 20}
}

// SubmitBatch creates one Message Batch of s's requests, each under its id
// (custom_id) with the params Complete sends for it.
//
// Anthropic's batches carry no metadata, so a batch cannot be found by
// its key. With s.Since set, SubmitBatch lists the batches created since
// then (the newest first) and takes the one whose number of requests is
// len(s.Requests), when exactly one is; with none, or several it cannot
// tell apart, it creates a new batch. A batch of the same size that
// someone else created with the same credentials in that window would be
// taken for this one: keep Since close to the attempt it stands for.
func (p *Provider) SubmitBatch(ctx context.Context, s llm.BatchSubmission) (string, error) {
	if err := s.Check(p.BatchLimits()); err != nil {
		return "", fmt.Errorf("anthropic: %w", err)
	}
	body, err := p.batchBody(s)
	if err != nil {
		return "", err
	}
	if !s.Since.IsZero() {
		id, err := p.findBatch(ctx, s)
		if err != nil || id != "" {
			return id, err
		}
	}
	b, err := p.client.Messages.Batches.New(ctx, sdk.MessageBatchNewParams{}, option.WithRequestBody("application/json", body))
	if err != nil {
		return "", fmt.Errorf("anthropic: create batch %s: %w", s.Key, apiError(ctx, err))
	}
	return b.ID, nil
}

// batchBody is the body that creates a batch of s: {"requests": [{"custom_id",
// "params"}, …]}, each params the body Complete sends; refused when it is
// over the limit of bytes. It is written out by hand because the typed
// params would put each schema through a Go map.
func (p *Provider) batchBody(s llm.BatchSubmission) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(`{"requests":[`)
	for i, r := range s.Requests {
		c, err := p.build(r.Request)
		if err != nil {
			return nil, fmt.Errorf("anthropic: batch %s: request %s: %w", s.Key, r.ID, err)
		}
		if i > 0 {
			buf.WriteByte(',')
		}
		id, _ := json.Marshal(r.ID)
		buf.WriteString(`{"custom_id":`)
		buf.Write(id)
		buf.WriteString(`,"params":`)
		buf.Write(c.body)
		buf.WriteByte('}')
	}
	buf.WriteString(`]}`)
	if max := p.BatchLimits().MaxBytes; int64(buf.Len()) > max {
		return nil, fmt.Errorf("anthropic: batch %s: the body is %d bytes, over the limit of %d", s.Key, buf.Len(), max)
	}
	return buf.Bytes(), nil
}

// findBatch returns the id of the one batch created at or after s.Since
// with len(s.Requests) requests, or "" when there is none or more than
// one.
func (p *Provider) findBatch(ctx context.Context, s llm.BatchSubmission) (string, error) {
	// Anthropic's times have fractions of a second; the endpoint's clock
	// may not be ours to the second.
	since := s.Since.Truncate(time.Second)
	var found []string
	// The list is the newest first: the search stops at the first batch
	// older than since.
	it := p.client.Messages.Batches.ListAutoPaging(ctx, sdk.MessageBatchListParams{Limit: sdk.Int(100)})
	for it.Next() {
		b := it.Current()
		if b.CreatedAt.Before(since) {
			break
		}
		if total(b.RequestCounts) == int64(len(s.Requests)) {
			found = append(found, b.ID)
		}
	}
	if err := it.Err(); err != nil {
		return "", fmt.Errorf("anthropic: list batches to find batch %s: %w", s.Key, apiError(ctx, err))
	}
	if len(found) != 1 {
		return "", nil
	}
	return found[0], nil
}

// total is the number of a batch's requests.
func total(c sdk.MessageBatchRequestCounts) int64 {
	return c.Processing + c.Succeeded + c.Errored + c.Canceled + c.Expired
}

// BatchStatus reports where batch id is ("in_progress", "canceling",
// "ended"), with its request counts: Failed are those errored, canceled
// or expired.
func (p *Provider) BatchStatus(ctx context.Context, id string) (*llm.BatchStatus, error) {
	b, err := p.client.Messages.Batches.Get(ctx, id, sdk.MessageBatchGetParams{})
	if err != nil {
		return nil, fmt.Errorf("anthropic: get batch %s: %w", id, apiError(ctx, err))
	}
	c := b.RequestCounts
	return &llm.BatchStatus{
		ID:        b.ID,
		Status:    string(b.ProcessingStatus),
		Ended:     b.ProcessingStatus == sdk.MessageBatchProcessingStatusEnded,
		Total:     int(total(c)),
		Succeeded: int(c.Succeeded),
		Failed:    int(c.Errored + c.Canceled + c.Expired),
	}, nil
}

// BatchResults reads the results of ended batch id: per custom_id the
// answer of a request that succeeded, read as Complete reads one, else
// why it has none — its error, or that it was canceled or expired.
// requests give the tool names the answers are read by; without them the
// first tool call is taken, as there is only one tool.
func (p *Provider) BatchResults(ctx context.Context, id string, requests []llm.BatchRequest) (map[string]llm.BatchResult, error) {
	b, err := p.client.Messages.Batches.Get(ctx, id, sdk.MessageBatchGetParams{})
	if err != nil {
		return nil, fmt.Errorf("anthropic: get batch %s: %w", id, apiError(ctx, err))
	}
	if b.ProcessingStatus != sdk.MessageBatchProcessingStatusEnded {
		return nil, fmt.Errorf("anthropic: batch %s has not ended (status %s)", id, b.ProcessingStatus)
	}
	names := make(map[string]string, len(requests))
	for _, r := range requests {
		if r.Request != nil {
			names[r.ID] = llm.WireName(r.Request.Name)
		}
	}
	stream := p.client.Messages.Batches.ResultsStreaming(ctx, id, sdk.MessageBatchResultsParams{})
	defer stream.Close()
	out := map[string]llm.BatchResult{}
	for stream.Next() {
		r := stream.Current()
		out[r.CustomID] = result(r.Result, names[r.CustomID])
	}
	if err := stream.Err(); err != nil {
		return nil, fmt.Errorf("anthropic: read the results of batch %s: %w", id, apiError(ctx, err))
	}
	return out, nil
}

// result is the outcome of one request of a batch, whose tool is name.
func result(r sdk.MessageBatchResultUnion, name string) llm.BatchResult {
	switch r.Type {
	case "succeeded":
		resp, err := read(&r.Message, name)
		if err != nil {
			return llm.BatchResult{Error: err.Error()}
		}
		return llm.BatchResult{Response: resp}
	case "errored":
		e := r.Error.Error
		msg := e.Message
		if e.Type != "" {
			msg = e.Type + ": " + msg
		}
		return llm.BatchResult{Error: "anthropic: " + msg}
	case "canceled":
		return llm.BatchResult{Error: "anthropic: the batch was canceled before the request ran"}
	case "expired":
		return llm.BatchResult{Error: "anthropic: the batch expired before the request ran"}
	}
	return llm.BatchResult{Error: fmt.Sprintf("anthropic: a result of unknown type %q", r.Type)}
}

// CancelBatch asks Anthropic to cancel batch id; one that already ended
// is no error.
func (p *Provider) CancelBatch(ctx context.Context, id string) error {
	_, err := p.client.Messages.Batches.Cancel(ctx, id, sdk.MessageBatchCancelParams{})
	if err == nil {
		return nil
	}
	var ae *sdk.Error
	if errors.As(err, &ae) && ae.StatusCode < 500 && ctx.Err() == nil {
		// Refused: perhaps because it ended already, which is no error.
		if b, gerr := p.client.Messages.Batches.Get(ctx, id, sdk.MessageBatchGetParams{}); gerr == nil && b.ProcessingStatus != sdk.MessageBatchProcessingStatusInProgress {
			return nil
		}
	}
	return fmt.Errorf("anthropic: cancel batch %s: %w", id, apiError(ctx, err))
}
