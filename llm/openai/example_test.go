package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/llm/openai"
)

func ExampleNew() {
	// A stand-in for an OpenAI-compatible server (OpenAI, vLLM, Ollama,
	// llama.cpp) that answers every request with the same completion.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"llama3.1:8b",`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":"{\"city\":\"Lisbon\",\"country\":\"Portugal\"}"},"finish_reason":"stop"}],`+
			`"usage":{"prompt_tokens":31,"completion_tokens":12,"total_tokens":43}}`)
	}))
	defer srv.Close()

	p := openai.New(openai.Options{Model: "llama3.1:8b", BaseURL: srv.URL})
	resp, err := p.Complete(context.Background(), &llm.Request{
		Name:     "capital",
		System:   "Answer in JSON.",
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
	// llama3.1:8b 43
}
