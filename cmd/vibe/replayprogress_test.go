package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/replay"
)

// TestReplayProgress: vibe replay's progress says the items replayed of
// the total, the items changed, the model requests and tokens so far: off
// a terminal, a line at most every 5 s, as vibe batch's; on one, a bar
// that the end clears.
func TestReplayProgress(t *testing.T) {
	t.Parallel()
	now := replay.Progress{Items: 100, Done: 40, Changed: 10, Requests: 5, Usage: llm.Usage{PromptTokens: 900, CompletionTokens: 100}}

	var lines bytes.Buffer
	p, show := replayProgress(stdio{err: &lines}, "moderate-replay-1", 100)
	show(replay.Progress{Items: 100})
	show(now)
	if lines.Len() != 0 {
		t.Fatalf("a line before 5 s: %q", lines.String())
	}
	p.last = time.Now().Add(-6 * time.Second)
	show(now)
	show(now)
	want := regexp.MustCompile(`^vibe: replay moderate-replay-1: item 40 of 100; 10 changed, 5 LLM requests, 1000 tokens, [0-9.]+ items/s, about \S+ left\n$`)
	if !want.MatchString(lines.String()) {
		t.Errorf("off a terminal: %q, want one line matching %s", lines.String(), want)
	}

	var term bytes.Buffer
	p, show = replayProgress(stdio{err: &bytes.Buffer{}}, "moderate-replay-1", 100)
	p.barTo(&term, 0)
	show(now)
	time.Sleep(250 * time.Millisecond) // past the bar's throttle
	show(now)
	p.finish()
	got := term.String()
	if !strings.Contains(got, "replay moderate-replay-1: 10 changed, 5 LLM requests, 1000 tokens") || !strings.Contains(got, "40/100") {
		t.Errorf("on a terminal: %q", got)
	}
}
