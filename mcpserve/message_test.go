package mcpserve

import (
	"fmt"
	"strings"
	"testing"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/process"
)

// TestMessage: the elicitation's message tells the context as lines of
// text, not as JSON, and bounds it.
func TestMessage(t *testing.T) {
	ctx, _ := jsonv.Parse([]byte(`{"llmContext2": {"findCommonSlot": {"_reasoning": "both are free", "$confidence": 0.8,
		"proposedSlot": "2024-03-20T14:00:00Z", "attendees": ["alice@example.com", "bob@example.com"],
		"note": "Встреча 20 марта\nв 14:00", "rooms": [{"name": "Blue", "seats": 4}]}}}`))
	chunk, _ := jsonv.Parse([]byte(`{"title": "Confirm", "type": "object", "properties": {"confirm": {"type": "object", "description": "Approve or reject the meeting."}}}`))
	info := &process.Info{ID: "schedule-meeting-1", Process: "schedule-meeting", View: process.View{Waiting: &process.Pending{Chunk: "USER_userContext", Schema: chunk, Context: ctx}}}
	got := message(info, "")
	want := `Process schedule-meeting-1 (schedule-meeting) waits for your answer to USER_userContext.
Confirm
Approve or reject the meeting.

What the process knows so far:
• findCommonSlot › proposedSlot: 2024-03-20T14:00:00Z
• findCommonSlot › attendees: alice@example.com, bob@example.com
• findCommonSlot › note: Встреча 20 марта в 14:00
• findCommonSlot › rooms › 1 › name: Blue
• findCommonSlot › rooms › 1 › seats: 4`
	if got != want {
		t.Errorf("message:\n%s\nwant:\n%s", got, want)
	}

	var many strings.Builder
	many.WriteString(`{"a": {`)
	for i := range 30 {
		if i > 0 {
			many.WriteString(",")
		}
		fmt.Fprintf(&many, `"k%d": %q`, i, strings.Repeat("x", 300))
	}
	many.WriteString(`}, "b": 1}`)
	info.Waiting.Context, _ = jsonv.Parse([]byte(many.String()))
	lines := summary(info.Waiting.Context)
	if len(lines) != maxContextLines+1 || lines[maxContextLines] != "… and 7 more (show_process has them all)" {
		t.Errorf("%d lines, the last %q", len(lines), lines[len(lines)-1])
	}
	if !strings.HasPrefix(lines[0], "a › k0: xxx") || !strings.HasSuffix(lines[0], "x…") || len([]rune(lines[0])) != len([]rune("a › k0: "))+maxValueRunes+1 {
		t.Errorf("a long value: %q", lines[0])
	}
}
