package llm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/augceo/vibe/internal/llmtest"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/llm/openai"
	"github.com/augceo/vibe/schema"
)

// newChatServer is a test model that answers with contents in turn.
func newChatServer(t *testing.T, contents ...string) *llmtest.Server {
	return llmtest.New(t, llmtest.Sequence(contents...))
}

func mustParse(t *testing.T, s string) jsonv.Value {
	t.Helper()
	v, err := jsonv.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func task(t *testing.T) llm.Task {
	return llm.Task{
		Name:    "step5_draft_email",
		Prompt:  "Write to the user we found.",
		Context: mustParse(t, `{"step4_find_user":{"output":{"userId":"u-12345","userName":"Jane Doe"}}}`),
		Schema: mustParse(t, `{"type":"object","properties":{
			"_plan":{"type":"string"},
			"recipientName":{"type":"string","minLength":2},
			"emailBody":{"type":"string"},
			"$confidence":{"type":"number","minimum":0,"maximum":1}},
			"required":["_plan","recipientName","emailBody"]}`),
	}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

const valid = `{"_plan":"greet Jane","recipientName":"Jane Doe","emailBody":"Hello Jane","$confidence":0.9}`

func TestFillRepairsOnce(t *testing.T) {
	srv := newChatServer(t, `{"_plan":"x","recipientName":"J"}`, valid)
	p := openai.New(openai.Options{Model: "m", BaseURL: srv.URL, APIKey: "k"})
	res, err := llm.Fill(context.Background(), p, task(t), llm.Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	reqs := srv.Bodies()
	if len(reqs) != 2 || res.Requests != 2 {
		t.Fatalf("%d requests (result says %d), want exactly 2", len(reqs), res.Requests)
	}
	if got := string(jsonv.Marshal(res.Output)); got != `{"recipientName":"Jane Doe","emailBody":"Hello Jane"}` {
		t.Errorf("output %s", got)
	}
	if res.Usage != (llm.Usage{PromptTokens: 200, CompletionTokens: 60}) || res.Model != "test-model" {
		t.Errorf("usage %+v model %q: both requests count", res.Usage, res.Model)
	}
	// The repair turn shows the model its answer and the errors by path.
	var second struct {
		Messages []struct{ Role, Content string } `json:"messages"`
	}
	json.Unmarshal([]byte(reqs[1]), &second)
	if len(second.Messages) != 4 || second.Messages[2].Role != "assistant" || second.Messages[2].Content != `{"_plan":"x","recipientName":"J"}` {
		t.Fatalf("repair conversation %+v", second.Messages)
	}
	repair := second.Messages[3].Content
	for _, want := range []string{"does not match the schema", "- /: missing property 'emailBody'", "- /recipientName: minLength: got 1, want 2"} {
		if !strings.Contains(repair, want) {
			t.Errorf("repair turn lacks %q:\n%s", want, repair)
		}
	}
}

func TestFillGivesUp(t *testing.T) {
	srv := newChatServer(t, `{"recipientName":"J"}`, `not json at all`, `{"_plan":"p","recipientName":"J","emailBody":"b","$confidence":7}`)
	p := openai.New(openai.Options{Model: "m", BaseURL: srv.URL, APIKey: "k"})
	_, err := llm.Fill(context.Background(), p, task(t), llm.Options{Logger: quiet()})
	var ie *llm.InvalidAnswerError
	if !errors.As(err, &ie) {
		t.Fatalf("err = %v, want *llm.InvalidAnswerError", err)
	}
	if len(srv.Bodies()) != 3 || ie.Requests != 3 {
		t.Errorf("%d requests, want 3 (one and two repairs)", len(srv.Bodies()))
	}
	var paths []string
	for _, p := range ie.Problems {
		paths = append(paths, string(p.Path))
	}
	if strings.Join(paths, " ") != "/$confidence /recipientName" {
		t.Errorf("last problems %v", ie.Problems)
	}
	if !strings.Contains(err.Error(), "step step5_draft_email: the model's answer breaks the schema after 3 requests: /$confidence: maximum: got 7, want 1; /recipientName: minLength: got 1, want 2") {
		t.Errorf("message: %v", err)
	}
	// The second answer was not JSON: its repair turn says so.
	var third struct {
		Messages []struct{ Role, Content string } `json:"messages"`
	}
	json.Unmarshal([]byte(srv.Bodies()[2]), &third)
	if !strings.Contains(third.Messages[5].Content, "Your answer is not valid JSON") {
		t.Errorf("repair after prose: %q", third.Messages[5].Content)
	}
	// MaxRepairs -1: one request, no repair.
	srv2 := newChatServer(t, `{}`)
	_, err = llm.Fill(context.Background(), openai.New(openai.Options{Model: "m", BaseURL: srv2.URL, APIKey: "k"}), task(t), llm.Options{MaxRepairs: -1, Logger: quiet()})
	if !errors.As(err, &ie) || len(srv2.Bodies()) != 1 {
		t.Errorf("MaxRepairs -1: %v after %d requests", err, len(srv2.Bodies()))
	}
}

func TestFillPromptShape(t *testing.T) {
	srv := newChatServer(t, "Sure! Here it is:\n```json\n"+valid+"\n```\nAnything else?")
	p := openai.New(openai.Options{Model: "m", BaseURL: srv.URL, APIKey: "k"})
	res, err := llm.Fill(context.Background(), p, task(t), llm.Options{Logger: quiet()})
	if err != nil {
		t.Fatalf("a fenced answer with prose around it: %v", err)
	}
	if len(res.Thinking) != 1 || res.Thinking[0].Name != "_plan" || len(res.Metrics) != 1 || res.Metrics[0].Value.Literal() != "0.9" {
		t.Errorf("thinking %v metrics %v", res.Thinking, res.Metrics)
	}
	var body struct {
		Messages []struct{ Role, Content string } `json:"messages"`
	}
	json.Unmarshal([]byte(srv.Bodies()[0]), &body)
	want := "Write to the user we found.\n\n--- Context from previous steps ---\n{\n  \"step4_find_user\": {\n    \"output\": {\n      \"userId\": \"u-12345\",\n      \"userName\": \"Jane Doe\"\n    }\n  }\n}\n--- End of context ---\nGenerate the JSON for step step5_draft_email using the information above."
	if len(body.Messages) != 2 || body.Messages[0].Role != "system" || body.Messages[0].Content != llm.DefaultSystem || body.Messages[1].Content != want {
		t.Errorf("messages:\n%+v\nwant user message:\n%s", body.Messages, want)
	}
}

func TestFillAccounting(t *testing.T) {
	srv := newChatServer(t, valid)
	reader := sdkmetric.NewManualReader()
	meter := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("test")
	metrics, err := llm.NewMetrics(meter)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	p := openai.New(openai.Options{Model: "m", BaseURL: srv.URL, APIKey: "k"})
	if _, err := llm.Fill(context.Background(), p, task(t), llm.Options{Logger: logger, Metrics: metrics, Process: "mail-7f3a", Instance: "c1"}); err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	json.Unmarshal(logs.Bytes(), &rec)
	for k, want := range map[string]any{"msg": "llm: filled", "step": "step5_draft_email", "model": "test-model", "prompt_tokens": 100.0, "completion_tokens": 30.0, "requests": 1.0, "process": "mail-7f3a", "instance": "c1", "$confidence": "0.9"} {
		if rec[k] != want {
			t.Errorf("log %s = %v, want %v (record %s)", k, rec[k], want, logs.String())
		}
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					kind, _ := dp.Attributes.Value("kind")
					got[m.Name+"/"+kind.AsString()] += float64(dp.Value)
				}
			case metricdata.Histogram[float64]:
				for _, dp := range d.DataPoints {
					name, _ := dp.Attributes.Value("metric")
					got[m.Name+"/"+name.AsString()] += dp.Sum
				}
			}
		}
	}
	for k, want := range map[string]float64{"vibe.llm.tokens/prompt": 100, "vibe.llm.tokens/completion": 30, "vibe.llm.requests/": 1, "vibe.instruction.metric/$confidence": 0.9} {
		if got[k] != want {
			t.Errorf("metric %s = %v, want %v (all: %v)", k, got[k], want, got)
		}
	}
}

func TestParseAnswer(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"a":1}`, `{"a":1}`},
		{"\ufeff  {\"a\":1}\n", `{"a":1}`},
		{"```json\n{\"b\":2,\"a\":1}\n```", `{"b":2,"a":1}`},
		{"```\n[1,2]\n```", `[1,2]`},
		{"Here you go: {\"a\": {\"x\": true}} — hope it helps {!}", `{"a":{"x":true}}`},
		{"Thinking {about it}... then {\"ok\": 1}", `{"ok":1}`},
	}
	for _, tt := range tests {
		v, err := llm.ParseAnswer(tt.in)
		if err != nil || string(jsonv.Marshal(v)) != tt.want {
			t.Errorf("ParseAnswer(%q) = %s, %v; want %s", tt.in, jsonv.Marshal(v), err, tt.want)
		}
	}
	for _, bad := range []string{"", "   ", "no json here", "{\"a\": "} {
		if _, err := llm.ParseAnswer(bad); err == nil {
			t.Errorf("ParseAnswer(%q) accepted", bad)
		}
	}
}

func TestFillCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	srv := newChatServer(t, valid)
	_, err := llm.Fill(ctx, openai.New(openai.Options{Model: "m", BaseURL: srv.URL, APIKey: "k"}), task(t), llm.Options{Logger: quiet()})
	if !errors.Is(err, context.Canceled) || len(srv.Bodies()) != 0 {
		t.Errorf("cancelled: %v, %d requests", err, len(srv.Bodies()))
	}
}

// TestFillCheck: an answer that fits the schema but that the engine cannot
// carry out goes back to the model as a repair turn naming the problem,
// counted like the schema's; every turn is recorded.
func TestFillCheck(t *testing.T) {
	wrong := `{"_plan":"greet","recipientName":"Nobody","emailBody":"Hello"}`
	srv := newChatServer(t, wrong, valid)
	p := openai.New(openai.Options{Model: "m", BaseURL: srv.URL, APIKey: "k"})
	check := func(v jsonv.Value) []schema.Invalid {
		if v.Lookup("recipientName").Str() != "Jane Doe" {
			return []schema.Invalid{{Path: "/recipientName", Message: "no user of that name was found"}}
		}
		return nil
	}
	res, err := llm.Fill(context.Background(), p, task(t), llm.Options{Logger: quiet(), Check: check})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 2 || len(res.Turns) != 2 || res.Usage.PromptTokens != 200 {
		t.Fatalf("requests %d, turns %d, usage %+v", res.Requests, len(res.Turns), res.Usage)
	}
	if tr := res.Turns[0]; tr.Answer != wrong || len(tr.Problems) != 1 || tr.Problems[0].Path != "/recipientName" || tr.Usage.PromptTokens != 100 {
		t.Errorf("first turn %+v", tr)
	}
	if len(res.Turns[1].Problems) != 0 {
		t.Errorf("the answer taken has problems %+v", res.Turns[1].Problems)
	}
	var second struct {
		Messages []struct{ Role, Content string } `json:"messages"`
	}
	json.Unmarshal([]byte(srv.Bodies()[1]), &second)
	repair := second.Messages[len(second.Messages)-1].Content
	for _, want := range []string{"fits the schema, but it cannot be carried out", "- /recipientName: no user of that name was found"} {
		if !strings.Contains(repair, want) {
			t.Errorf("repair turn lacks %q:\n%s", want, repair)
		}
	}
	// Past the bound, the request fails listing the engine's problems.
	srv = newChatServer(t, wrong)
	p = openai.New(openai.Options{Model: "m", BaseURL: srv.URL, APIKey: "k"})
	_, err = llm.Fill(context.Background(), p, task(t), llm.Options{Logger: quiet(), Check: check})
	var ie *llm.InvalidAnswerError
	if !errors.As(err, &ie) || ie.Requests != 3 || !strings.Contains(err.Error(), "/recipientName: no user of that name was found") {
		t.Errorf("err = %v", err)
	}
}

func TestApportion(t *testing.T) {
	for _, c := range []struct {
		u       llm.Usage
		weights []int
		want    string
	}{
		{llm.Usage{PromptTokens: 100, CompletionTokens: 10}, []int{1, 1}, "[{50 5 0 0 <nil>} {50 5 0 0 <nil>}]"},
		{llm.Usage{PromptTokens: 100, CompletionTokens: 10}, []int{3, 1}, "[{75 8 0 0 <nil>} {25 2 0 0 <nil>}]"},
		{llm.Usage{PromptTokens: 10, CompletionTokens: 1}, []int{1, 1, 1}, "[{4 1 0 0 <nil>} {3 0 0 0 <nil>} {3 0 0 0 <nil>}]"},
		{llm.Usage{PromptTokens: 7, CompletionTokens: 3}, []int{0, 0}, "[{4 2 0 0 <nil>} {3 1 0 0 <nil>}]"},
		{llm.Usage{PromptTokens: 100, CompletionTokens: 10, CachedPromptTokens: 60, CacheWriteTokens: 9}, []int{1, 2}, "[{33 3 20 3 <nil>} {67 7 40 6 <nil>}]"},
		{llm.Usage{PromptTokens: 5}, nil, "[]"},
	} {
		got := llm.Apportion(c.u, c.weights)
		if fmt.Sprint(got) != c.want {
			t.Errorf("Apportion(%v, %v) = %v, want %s", c.u, c.weights, got, c.want)
		}
		var sum llm.Usage
		for _, g := range got {
			sum = sum.Add(g)
		}
		if len(got) > 0 && sum != c.u {
			t.Errorf("shares %v add up to %v, not %v", got, sum, c.u)
		}
	}
	// A batched part is split alike, and adds up again.
	u := llm.Usage{PromptTokens: 100, CompletionTokens: 10}.AsBatched()
	got := llm.Apportion(u.Add(llm.Usage{PromptTokens: 20, CompletionTokens: 2}), []int{1, 3})
	if got[0].Batched == nil || *got[0].Batched != (llm.Usage{PromptTokens: 25, CompletionTokens: 3}) || got[0].PromptTokens != 30 {
		t.Errorf("batched shares %+v %+v", got[0], got[0].Batched)
	}
	if sum := got[0].Add(got[1]); *sum.Batched != *u.Batched || sum.PromptTokens != 120 {
		t.Errorf("batched shares add up to %+v %+v", sum, sum.Batched)
	}
}

// TestFillBounds: an answer past llm.MaxAnswerSize is refused before a
// repair turn would send it back, and negative usage (from a model or a
// recording) is refused as a malformed answer; neither is asked again.
func TestFillBounds(t *testing.T) {
	huge := `{"_plan":"` + strings.Repeat("x", llm.MaxAnswerSize) + `"}` // breaks the schema, too
	srv := llmtest.NewServer(t, func(string, string) string { return huge }, llmtest.Options{})
	_, err := llm.Fill(context.Background(), openai.New(openai.Options{Model: "m", BaseURL: srv.URL, APIKey: "k"}), task(t), llm.Options{Logger: quiet()})
	if _, ok := errors.AsType[*llm.AnswerTooLargeError](err); !ok || len(srv.Bodies()) != 1 {
		t.Errorf("an answer past the limit: %v after %d requests", err, len(srv.Bodies()))
	}

	neg := &negative{}
	_, err = llm.Fill(context.Background(), neg, task(t), llm.Options{Logger: quiet()})
	if !errors.Is(err, llm.ErrMalformedAnswer) || neg.calls != 1 || !strings.Contains(err.Error(), "negative token counts (-3 prompt") {
		t.Errorf("negative usage: %v after %d requests", err, neg.calls)
	}
}

// negative is a provider whose answers count negative prompt tokens.
type negative struct{ calls int }

func (n *negative) Complete(context.Context, *llm.Request) (*llm.Response, error) {
	n.calls++
	return &llm.Response{Content: valid, Usage: llm.Usage{PromptTokens: -3, CompletionTokens: 5}}, nil
}
