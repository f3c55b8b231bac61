package main

import (
	"strings"
	"testing"
	"time"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/process"
)

// TestSummary: what vibe show prints on a terminal, for a process that
// completed, one that waits for a person, one whose calls wait for a
// worker with their model and action, and one that failed.
func TestSummary(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 9, 0, 0, 0, time.Local)
	at := func(ms int) *time.Time { u := t0.Add(time.Duration(ms) * time.Millisecond); return &u }
	state, _ := jsonv.Parse([]byte(`{"llmContext1": {"identifyParticipants": {"organizer": "alice@example.com"}}, "userContext": {"confirm": {"decision": "Approve"}}}`))
	form, _ := jsonv.Parse([]byte(`{"type": "object", "properties": {"confirm": {"type": "object", "properties": {"decision": {"type": "string", "enum": ["Approve", "Reject"]}}}}}`))
	usage := llm.Usage{PromptTokens: 812, CompletionTokens: 240}
	timings := []process.Timing{
		{Chunk: "LLM_llmContext1", Start: t0, End: at(1200)},
		{Chunk: "SERVER_serverContext1", Start: *at(1200), End: at(1350)},
		{Chunk: "SERVER_serverContext1", Step: "serverContext1.fetchAvailability", Start: *at(1210), End: at(1340)},
		{Chunk: "USER_userContext", Start: *at(1350), End: at(64350)},
	}
	failure := "chunk LLM_llmContext2: the model's answer broke the schema"
	tests := []struct {
		name string
		info process.Info
		want string
	}{
		{"completed", process.Info{ID: "meeting-1", Process: "schedule-meeting", StartedAt: t0, EndedAt: at(64400),
			View: process.View{Status: process.Completed, Done: []string{"LLM_llmContext1", "SERVER_serverContext1", "USER_userContext"}, State: state,
				Usage: usage, Steps: map[string]llm.Usage{"LLM_llmContext1": usage}, Calls: []process.ModelCall{{Chunk: "LLM_llmContext1"}}, Timings: timings}},
			`meeting-1  schedule-meeting
status     completed in 1m4s (started 2026-11-27 09:00:00)
tokens     812 prompt + 240 completion tokens in 1 model call

chunks
  ✓ LLM_llmContext1                     1.2s  812 prompt + 240 completion tokens
  ✓ SERVER_serverContext1               150ms
      serverContext1.fetchAvailability  130ms
  ✓ USER_userContext                    1m3s

output
{
  "llmContext1": {
    "identifyParticipants": {
      "organizer": "alice@example.com"
    }
  },
  "userContext": {
    "confirm": {
      "decision": "Approve"
    }
  }
}
`},
		{"waiting", process.Info{ID: "meeting-2", Process: "schedule-meeting", StartedAt: t0,
			View: process.View{Status: process.Waiting, Chunk: "USER_userContext", Done: []string{"LLM_llmContext1", "SERVER_serverContext1"},
				Waiting: &process.Pending{Chunk: "USER_userContext", Schema: form}, State: jsonv.NewObject(0).Value(),
				Timings: append(timings[:3:3], process.Timing{Chunk: "USER_userContext", Start: *at(1350)})}},
			`meeting-2  schedule-meeting
status     waiting (started 2026-11-27 09:00:00, 10s ago)

chunks
  ✓ LLM_llmContext1                     1.2s
  ✓ SERVER_serverContext1               150ms
      serverContext1.fetchAvailability  130ms
  ? USER_userContext                    8.7s so far

waits for a person's answer to USER_userContext; answer with
  vibe answer meeting-2 '{"confirm":{"decision":"Approve"}}'
`},
		{"stalled", process.Info{ID: "meeting-4", Process: "schedule-meeting", StartedAt: t0,
			View: process.View{Status: process.Running, Chunk: "LLM_llmContext1", Timings: []process.Timing{{Chunk: "LLM_llmContext1", Start: t0}}},
			Stalled: []process.Stalled{{Needs: "model", Queue: "vibe.model.0123456789abcdef", Since: *at(500)}, {Needs: "action", Action: "SendDraft", Queue: "vibe.action.SendDraft", Since: *at(4000)},
				{Needs: "model", Queue: "vibe.model", Since: *at(9000)}}},
			`meeting-4  schedule-meeting
status     running (started 2026-11-27 09:00:00, 10s ago)

chunks
  … LLM_llmContext1  10s so far

waits for a worker with its model: its model call has waited 9.5s on the task queue vibe.model.0123456789abcdef, which no worker polls; start a vibe serve or vibe worker with the --llm (and --llm-base-url) it was started with

waits for a worker with the action SendDraft: its call has waited 6s on the task queue vibe.action.SendDraft, which no worker polls; start a vibe serve or vibe worker whose --actions-file has it

waits for a worker with a model: its model call has waited 1s on the task queue vibe.model, which any worker with a model polls, and none does; start a vibe worker (or a vibe serve) with --llm
`},
		{"failed", process.Info{ID: "meeting-3", Process: "schedule-meeting", StartedAt: t0, EndedAt: at(2000),
			View: process.View{Status: process.Failed, Done: []string{"LLM_llmContext1"}, Chunk: "LLM_llmContext2", Error: &failure, State: state,
				Timings: []process.Timing{timings[0], {Chunk: "LLM_llmContext2", Start: *at(1200)}}}},
			`meeting-3  schedule-meeting
status     failed in 2s (started 2026-11-27 09:00:00)

chunks
  ✓ LLM_llmContext1  1.2s
  ✗ LLM_llmContext2  800ms

error
  chunk LLM_llmContext2: the model's answer broke the schema

state so far
{
  "llmContext1": {
    "identifyParticipants": {
      "organizer": "alice@example.com"
    }
  },
  "userContext": {
    "confirm": {
      "decision": "Approve"
    }
  }
}
`},
	}
	for _, tt := range tests {
		var b strings.Builder
		if err := writeSummary(&b, &tt.info, t0.Add(10*time.Second)); err != nil {
			t.Fatal(err)
		}
		if got := b.String(); got != tt.want {
			t.Errorf("%s:\n%s\nwant\n%s", tt.name, got, tt.want)
		}
	}
}
