package openai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/augceo/vibe/llm"
)

// The Provider is one of llm's BatchAPIs.
var _ llm.BatchAPI = (*Provider)(nil)

// batchEndpoint is the endpoint of a batch's requests, in the request file
// and on the batch.
const batchEndpoint = "/v1/chat/completions"

// keyMetadata is the batch's metadata key that holds the submission's key,
// so that a later attempt finds the batch an earlier one created.
const keyMetadata = "vibe_key"

// BatchLimits are OpenAI's bounds on one batch: 50,000 requests, a request
// file of 200 MB.
func (p *Provider) BatchLimits() llm.BatchLimits {
	return llm.BatchLimits{MaxRequests: 50_000, MaxBytes: 200 << 20}
}

// SubmitBatch uploads s's requests as one request file named <key>.jsonl —
// each line {"custom_id", "method": "POST", "url": "/v1/chat/completions",
// "body"}, the body the one Complete sends — and creates a batch over it
// with the metadata {"vibe_key": key} and a 24-hour window. With s.Since
// set it first looks for a batch of that key created since then (the
// newest first), and else for a request file of that name uploaded since
// then, and uses what it finds instead of making it again.
func (p *Provider) SubmitBatch(ctx context.Context, s llm.BatchSubmission) (string, error) {
	if err := s.Check(p.BatchLimits()); err != nil {
		return "", fmt.Errorf("openai: %w", err)
	}
	file, err := p.requestFile(s)
	if err != nil {
		return "", err
	}
	filename := s.Key + ".jsonl"
	fileID := ""
	if !s.Since.IsZero() {
		id, err := p.findBatch(ctx, s)
		if err != nil || id != "" {
			return id, err
		}
		if fileID, err = p.findFile(ctx, filename, s.Since.Unix()); err != nil {
			return "", err
		}
	}
	if fileID == "" {
		f, err := p.client.Files.New(ctx, oai.FileNewParams{
			File:    oai.File(bytes.NewReader(file), filename, "application/jsonl"),
			Purpose: oai.FilePurposeBatch,
		})
		if err != nil {
			return "", fmt.Errorf("openai: upload the request file of batch %s: %w", s.Key, apiError(ctx, err))
		}
		fileID = f.ID
	}
	b, err := p.client.Batches.New(ctx, oai.BatchNewParams{
		InputFileID:      fileID,
		Endpoint:         oai.BatchNewParamsEndpointV1ChatCompletions,
		CompletionWindow: oai.BatchNewParamsCompletionWindow24h,
		Metadata:         shared.Metadata{keyMetadata: s.Key},
	})
	if err != nil {
		return "", fmt.Errorf("openai: create batch %s over file %s: %w", s.Key, fileID, apiError(ctx, err))
	}
	return b.ID, nil
}

// requestFile is the JSONL request file of s, refused when it is over the
// limit of bytes.
func (p *Provider) requestFile(s llm.BatchSubmission) ([]byte, error) {
	var buf bytes.Buffer
	for _, r := range s.Requests {
		c, err := p.build(r.Request)
		if err != nil {
			return nil, fmt.Errorf("openai: batch %s: request %s: %w", s.Key, r.ID, err)
		}
		id, _ := json.Marshal(r.ID)
		buf.WriteString(`{"custom_id":`)
		buf.Write(id)
		buf.WriteString(`,"method":"POST","url":"` + batchEndpoint + `","body":`)
		buf.Write(c.body)
		buf.WriteString("}\n")
	}
	if max := p.BatchLimits().MaxBytes; int64(buf.Len()) > max {
		return nil, fmt.Errorf("openai: batch %s: the request file is %d bytes, over the limit of %d", s.Key, buf.Len(), max)
	}
	return buf.Bytes(), nil
}

// findBatch returns the id of the newest batch created at or after
// s.Since with s's key in its metadata, or "" when there is none.
func (p *Provider) findBatch(ctx context.Context, s llm.BatchSubmission) (string, error) {
	since := s.Since.Unix()
	// The list is the newest first: the search stops at the first batch
	// older than since.
	it := p.client.Batches.ListAutoPaging(ctx, oai.BatchListParams{Limit: oai.Int(100)})
	for it.Next() {
		b := it.Current()
		if b.CreatedAt < since {
			return "", nil
		}
		if b.Metadata[keyMetadata] == s.Key {
			return b.ID, nil
		}
	}
	if err := it.Err(); err != nil {
		return "", fmt.Errorf("openai: list batches to find batch %s: %w", s.Key, apiError(ctx, err))
	}
	return "", nil
}

// findFile returns the id of the newest request file named filename
// uploaded at or after since (Unix seconds) that the endpoint did not
// refuse, or "" when there is none.
func (p *Provider) findFile(ctx context.Context, filename string, since int64) (string, error) {
	it := p.client.Files.ListAutoPaging(ctx, oai.FileListParams{Purpose: oai.String(string(oai.FilePurposeBatch)), Order: oai.FileListParamsOrderDesc})
	for it.Next() {
		f := it.Current()
		if f.CreatedAt < since {
			return "", nil
		}
		if f.Filename == filename {
			return f.ID, nil
		}
	}
	if err := it.Err(); err != nil {
		return "", fmt.Errorf("openai: list files to find %s: %w", filename, apiError(ctx, err))
	}
	return "", nil
}

// BatchStatus reports where batch id is, with its request counts; Ended
// once it is completed, failed, expired or cancelled.
func (p *Provider) BatchStatus(ctx context.Context, id string) (*llm.BatchStatus, error) {
	b, err := p.client.Batches.Get(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("openai: get batch %s: %w", id, apiError(ctx, err))
	}
	return batchStatus(b), nil
}

func batchStatus(b *oai.Batch) *llm.BatchStatus {
	st := &llm.BatchStatus{
		ID:        b.ID,
		Status:    string(b.Status),
		Ended:     ended(b.Status),
		Total:     int(b.RequestCounts.Total),
		Succeeded: int(b.RequestCounts.Completed),
		Failed:    int(b.RequestCounts.Failed),
	}
	var msgs []string
	for _, e := range b.Errors.Data {
		m := e.Message
		if e.Line > 0 {
			m = fmt.Sprintf("line %d: %s", e.Line, m)
		}
		if e.Code != "" {
			m += " (" + e.Code + ")"
		}
		msgs = append(msgs, m)
	}
	st.Error = strings.Join(msgs, "; ")
	return st
}

// ended reports whether a batch of status s answers no more requests.
func ended(s oai.BatchStatus) bool {
	switch s {
	case oai.BatchStatusCompleted, oai.BatchStatusFailed, oai.BatchStatusExpired, oai.BatchStatusCancelled:
		return true
	}
	return false
}

// BatchResults reads the output and error files of ended batch id: per
// custom_id the answer of a request answered with status 200, read as
// Complete reads one (strict mode undone with requests' schemas), else
// the request's error — the endpoint's error answer, or that the batch
// expired or was cancelled before the request ran.
func (p *Provider) BatchResults(ctx context.Context, id string, requests []llm.BatchRequest) (map[string]llm.BatchResult, error) {
	b, err := p.client.Batches.Get(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("openai: get batch %s: %w", id, apiError(ctx, err))
	}
	if !ended(b.Status) {
		return nil, fmt.Errorf("openai: batch %s has not ended (status %s)", id, b.Status)
	}
	byID := make(map[string]*llm.Request, len(requests))
	for _, r := range requests {
		byID[r.ID] = r.Request
	}
	out := map[string]llm.BatchResult{}
	for _, f := range []string{b.OutputFileID, b.ErrorFileID} {
		if f == "" {
			continue
		}
		if err := p.readResults(ctx, id, f, byID, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// resultLine is one line of a batch's output or error file.
type resultLine struct {
	CustomID string `json:"custom_id"`
	Response *struct {
		StatusCode int             `json:"status_code"`
		RequestID  string          `json:"request_id"`
		Body       json.RawMessage `json:"body"`
	} `json:"response"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// readResults reads the result file fileID of batch id into out.
func (p *Provider) readResults(ctx context.Context, id, fileID string, requests map[string]*llm.Request, out map[string]llm.BatchResult) error {
	res, err := p.client.Files.Content(ctx, fileID)
	if err != nil {
		return fmt.Errorf("openai: download file %s of batch %s: %w", fileID, id, apiError(ctx, err))
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	// A line holds one whole answer.
	sc.Buffer(nil, 64<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var l resultLine
		if err := json.Unmarshal(line, &l); err != nil {
			return fmt.Errorf("openai: file %s of batch %s: line %d: %w", fileID, id, n, err)
		}
		out[l.CustomID] = p.result(l, requests[l.CustomID])
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("openai: read file %s of batch %s: %w", fileID, id, err)
	}
	return nil
}

// result is the outcome of one result line; req is its request as
// submitted, nil when the caller did not give it.
func (p *Provider) result(l resultLine, req *llm.Request) llm.BatchResult {
	switch {
	case l.Error != nil && l.Error.Message != "":
		return llm.BatchResult{Error: errorText(l.Error.Code, l.Error.Message)}
	case l.Response == nil:
		return llm.BatchResult{Error: "openai: the batch gave no response"}
	case l.Response.StatusCode != http.StatusOK:
		msg := http.StatusText(l.Response.StatusCode)
		var e struct {
			Error struct {
				Message string `json:"message"`
				Code    string `json:"code"`
			} `json:"error"`
		}
		if json.Unmarshal(l.Response.Body, &e) == nil && e.Error.Message != "" {
			msg = e.Error.Message
		} else if m, ok := foreignErrorMessage(l.Response.Body); ok && m != "" {
			msg = m
		}
		return llm.BatchResult{Error: fmt.Sprintf("openai: HTTP %d: %s", l.Response.StatusCode, msg)}
	}
	var resp oai.ChatCompletion
	if err := json.Unmarshal(l.Response.Body, &resp); err != nil {
		return llm.BatchResult{Error: fmt.Sprintf("openai: the response is no chat completion: %v", err)}
	}
	c := &call{name: "output"}
	if req != nil {
		c.name = llm.WireName(req.Name)
		if p.opts.Strict {
			b, err := p.build(req)
			if err != nil {
				return llm.BatchResult{Error: err.Error()}
			}
			c = b
		}
	} else if p.opts.Strict {
		return llm.BatchResult{Error: "openai: no request given to undo strict mode on its answer"}
	}
	r, err := p.read(&resp, c)
	if err != nil {
		return llm.BatchResult{Error: err.Error()}
	}
	return llm.BatchResult{Response: r}
}

// errorText is the error of a request the batch did not run.
func errorText(code, msg string) string {
	switch code {
	case "batch_expired":
		return "openai: the batch expired before the request ran: " + msg
	case "batch_cancelled":
		return "openai: the batch was cancelled before the request ran: " + msg
	case "":
		return "openai: " + msg
	}
	return "openai: " + code + ": " + msg
}

// CancelBatch asks the endpoint to cancel batch id; one that already ended
// is no error.
func (p *Provider) CancelBatch(ctx context.Context, id string) error {
	_, err := p.client.Batches.Cancel(ctx, id)
	if err == nil {
		return nil
	}
	var ae *oai.Error
	if errors.As(err, &ae) && ae.StatusCode < 500 && ctx.Err() == nil {
		// Refused: perhaps because it ended already, which is no error.
		if b, gerr := p.client.Batches.Get(ctx, id); gerr == nil && (ended(b.Status) || b.Status == oai.BatchStatusCancelling) {
			return nil
		}
	}
	return fmt.Errorf("openai: cancel batch %s: %w", id, apiError(ctx, err))
}
