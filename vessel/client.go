package vessel

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"go.temporal.io/sdk/client"

	"github.com/augceo/vibe/process"
)

// Run runs a request on the engine c talks to (a worker with Register and
// process.Register must poll process.TaskQueue) and waits for its result.
func Run(ctx context.Context, c client.Client, in Input) (*Result, string, error) {
	b := make([]byte, 4)
	rand.Read(b)
	id := "vessel-" + slug(in.Toolset.Vessel) + "-" + hex.EncodeToString(b)
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: process.TaskQueue, Memo: map[string]any{"vessel": in.Toolset.Vessel}}, WorkflowName, in)
	if err != nil {
		return nil, id, fmt.Errorf("start request: %w", err)
	}
	var res Result
	if err := run.Get(ctx, &res); err != nil {
		return nil, id, err
	}
	return &res, id, nil
}

func slug(s string) string {
	out := make([]rune, 0, len(s))
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			out = append(out, r)
		case r >= 'A' && r <= 'Z':
			out = append(out, r+'a'-'A')
		case len(out) > 0 && out[len(out)-1] != '-':
			out = append(out, '-')
		}
	}
	if len(out) == 0 {
		return "request"
	}
	return string(out)
}
