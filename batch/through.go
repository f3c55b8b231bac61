package batch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/augceo/vibe/llm"
)

// FillThrough fills LLM chunks for many items through p's Batch API, in
// the command's own process: for work outside a batch's groups (a
// replay), whose calls go through the provider's Batch API as a batch's
// do (CallOptions.ProviderBatch). The calls of every fill go in one
// provider batch, named by key — the same work has the same key, and a
// run again after a kill finds the provider batch the killed run made
// (llm.BatchSubmission.Since) instead of sending another. It is looked at
// every fills[0].Call.ProviderPoll (DefaultProviderPoll), each wait half
// as long again as the one before up to MaxProviderPoll, until it ended;
// then each fill's answers are taken as Activities.Collect takes a
// group's: each item's part checked on its own, repaired alone by a direct
// call. An item of a call the provider batch did not answer has its
// error, Unanswered. The outputs are by fill.
func FillThrough(ctx context.Context, p llm.Provider, key string, fills []FillInput, opts llm.Options) ([]*FillOutput, error) {
	api, ok := llm.BatchAPIOf(p)
	if !ok {
		return nil, errors.New("the model provider has no Batch API (OpenAI's or Anthropic's): run without --provider-batch")
	}
	outs := make([]*FillOutput, len(fills))
	plans := make([][]call, len(fills))
	var reqs []llm.BatchRequest
	for i, f := range fills {
		outs[i] = &FillOutput{Items: make([]ItemFill, len(f.Items))}
		calls, err := plan(f)
		if err != nil {
			for j := range outs[i].Items {
				outs[i].Items[j].Error = err.Error()
			}
			continue
		}
		plans[i] = calls
		for n, c := range calls {
			reqs = append(reqs, llm.BatchRequest{ID: requestID(fillKey(key, i), n), Request: c.req})
		}
	}
	if len(reqs) == 0 {
		return outs, nil
	}
	// An earlier run of the same work, killed, may have made it: it is
	// looked for over the provider's window.
	id, err := api.SubmitBatch(ctx, llm.BatchSubmission{Key: key, Requests: reqs, Since: time.Now().Add(-24 * time.Hour)})
	if err != nil {
		return nil, fmt.Errorf("submit provider batch %s: %w", key, err)
	}
	first := cmp.Or(fills[0].Call.ProviderPoll, DefaultProviderPoll)
	wait := first
	var st *llm.BatchStatus
	for {
		if st, err = api.BatchStatus(ctx, id); err != nil {
			return nil, fmt.Errorf("provider batch %s: %w", id, err)
		}
		if st.Ended {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(wait*3/2, MaxProviderPoll, 20*first)
	}
	done := ProviderDone{Key: key, ID: id, Error: st.Error}
	results, err := api.BatchResults(ctx, id, reqs)
	if err != nil {
		return nil, fmt.Errorf("provider batch %s: %w", id, err)
	}
	for i, f := range fills {
		if plans[i] == nil {
			continue
		}
		if err := take(ctx, p, fillKey(key, i), done, f, plans[i], results, opts, outs[i]); err != nil {
			return nil, err
		}
	}
	return outs, nil
}

// fillKey is the key of fill i of the provider batch key (requestID).
func fillKey(key string, i int) string { return key + "/" + strconv.Itoa(i) }
