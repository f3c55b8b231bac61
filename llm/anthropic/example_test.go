package anthropic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/llm/anthropic"
)

func ExampleNew() {
	// A stand-in for the Messages API that answers every request with the
	// same forced tool call.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929",`+
			`"content":[{"type":"tool_use","id":"toolu_01","name":"capital","input":{"city":"Lisbon","country":"Portugal"}}],`+
			`"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":402,"output_tokens":38}}`)
	}))
	defer srv.Close()

	p := anthropic.New(anthropic.Options{Model: "claude-sonnet-4-5", BaseURL: srv.URL, APIKey: "sk-ant-example"})
	resp, err := p.Complete(context.Background(), &llm.Request{
		Name:     "capital",
		System:   "Answer by calling the tool.",
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "Which city is the capital of Portugal?"}},
		Schema:   json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"country":{"type":"string"}}}`),
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Content)
	fmt.Println(resp.Model, resp.Usage.Total())
	// Output:
	// {"city":"Lisbon","country":"Portugal"}
	// claude-sonnet-4-5-20250929 440
}
