package replay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/llm/replay"
)

// model stands in for a real provider.
type model struct{}

func (model) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	return &llm.Response{Content: `{"greeting":"hello"}`, Model: "some-model"}, nil
}

func Example() {
	dir, err := os.MkdirTemp("", "replay")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "answers.jsonl")
	req := &llm.Request{
		Name:     "greet",
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "Greet me."}},
		Schema:   json.RawMessage(`{"type":"object","properties":{"greeting":{"type":"string"}}}`),
	}

	// Record a real provider's answers...
	rec, err := replay.Record(model{}, path)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := rec.Complete(context.Background(), req); err != nil {
		log.Fatal(err)
	}
	rec.Close()

	// ...and replay them without a model.
	p, err := replay.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	resp, err := p.Complete(context.Background(), req)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Content, resp.Model, resp.Replayed)

	req.Messages[0].Content = "Greet me warmly."
	_, err = p.Complete(context.Background(), req)
	fmt.Println(err != nil)
	// Output:
	// {"greeting":"hello"} some-model true
	// true
}
