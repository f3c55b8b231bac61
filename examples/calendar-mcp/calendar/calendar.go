// Package calendar is the small MCP server of the calendar-mcp example: a
// made-up calendar whose tools find the times people are all free and send
// invitations, written with the official Go SDK of the Model Context
// Protocol (the same SDK Vibe speaks MCP with). calendar-server serves it
// over stdio.
package calendar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure the server. The zero value answers every call.
type Options struct {
	// Unavailable is how many send_invitation calls fail first (isError:
	// "the mail server is unavailable"), as a flaky service's would, to
	// show Vibe's retries.
	Unavailable int
}

// busy holds the made-up calendar: each person's busy hours on any day,
// as [start, end) in minutes from midnight UTC. Anyone else is free.
var busy = map[string][][2]int{
	"alice@example.com": {{9 * 60, 10 * 60}, {11 * 60, 14 * 60}, {15 * 60, 16*60 + 30}},
	"bob@example.com":   {{9 * 60, 11 * 60}, {12 * 60, 14 * 60}, {14*60 + 30, 15 * 60}},
}

// The working day the calendar offers slots in, in minutes from midnight.
const dayStart, dayEnd = 9 * 60, 17 * 60

// FindInput is what find_free_slots takes.
type FindInput struct {
	Attendees       []string `json:"attendees" jsonschema:"everyone who is to meet, as email addresses"`
	Date            string   `json:"date" jsonschema:"the day, as YYYY-MM-DD"`
	DurationMinutes int      `json:"durationMinutes" jsonschema:"how long the meeting is, in minutes"`
}

// Slot is a time everyone is free.
type Slot struct {
	Start string `json:"start"`
	End   string `json:"end"`
}

// FindOutput is what find_free_slots returns.
type FindOutput struct {
	Slots []Slot `json:"slots"`
}

// SendInput is what send_invitation takes: the drafted invitation, and the
// person's decision about it.
type SendInput struct {
	To       []string `json:"to" jsonschema:"the recipients' email addresses"`
	Start    string   `json:"start" jsonschema:"when the meeting starts (RFC 3339)"`
	Subject  string   `json:"subject"`
	Body     string   `json:"body"`
	Decision string   `json:"decision" jsonschema:"Approve sends the invitation; anything else does not"`
}

// SendOutput is what send_invitation returns.
type SendOutput struct {
	MessageID string `json:"messageId"`
	Status    string `json:"status"`
	// Deliveries counts the calls that carried this call's idempotency key:
	// more than one when a call was retried; the invitation went once.
	Deliveries int `json:"deliveries"`
}

// MetaIdempotencyKey is where Vibe puts a call's idempotency key in the
// request's _meta (action.MetaIdempotencyKey).
const MetaIdempotencyKey = "vibe/idempotencyKey"

// outbox applies each idempotency key once: a call is delivered at least
// once (a retry, a restart of the caller), and a repeat is answered as the
// first call was.
type outbox struct {
	mu         sync.Mutex
	sent       map[string]SendOutput // by idempotency key
	deliveries map[string]int
	calls      int
}

// Server returns the calendar's MCP server.
func Server(opts Options) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "calendar", Title: "A made-up calendar", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "find_free_slots", Title: "Find free slots",
		Description: "The times on a day (09:00 to 17:00 UTC) when every attendee is free, for a meeting of the given length."}, findFreeSlots)
	o := &outbox{sent: map[string]SendOutput{}, deliveries: map[string]int{}}
	mcp.AddTool(s, &mcp.Tool{Name: "send_invitation", Title: "Send an invitation",
		Description: "Sends the invitation when the decision is Approve; each idempotency key (_meta " + MetaIdempotencyKey + ") is sent once."},
		func(ctx context.Context, req *mcp.CallToolRequest, in SendInput) (*mcp.CallToolResult, SendOutput, error) {
			return o.send(req, in, opts.Unavailable)
		})
	return s
}

// ordered is a result whose text is out's JSON in its fields' order. The
// SDK fills structuredContent from out through a Go map, which sorts its
// members; the MCP specification asks a tool to give the same JSON as
// text, and a client that keeps member order (Vibe does) takes it from
// there.
func ordered(out any) *mcp.CallToolResult {
	b, _ := json.Marshal(out)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
}

func findFreeSlots(_ context.Context, _ *mcp.CallToolRequest, in FindInput) (*mcp.CallToolResult, FindOutput, error) {
	day, err := time.Parse(time.DateOnly, in.Date)
	if err != nil {
		return nil, FindOutput{}, fmt.Errorf("date: want YYYY-MM-DD, not %q", in.Date)
	}
	if in.DurationMinutes <= 0 || len(in.Attendees) == 0 {
		return nil, FindOutput{}, errors.New("give the attendees and a duration")
	}
	free := func(from, to int) bool {
		for _, who := range in.Attendees {
			for _, b := range busy[who] {
				if from < b[1] && b[0] < to {
					return false
				}
			}
		}
		return true
	}
	out := FindOutput{Slots: []Slot{}}
	at := func(m int) string { return day.Add(time.Duration(m) * time.Minute).Format(time.RFC3339) }
	for m := dayStart; m+in.DurationMinutes <= dayEnd; m += 30 {
		if free(m, m+in.DurationMinutes) {
			out.Slots = append(out.Slots, Slot{Start: at(m), End: at(m + in.DurationMinutes)})
		}
	}
	return ordered(out), out, nil
}

func (o *outbox) send(req *mcp.CallToolRequest, in SendInput, unavailable int) (*mcp.CallToolResult, SendOutput, error) {
	key, _ := req.Params.Meta[MetaIdempotencyKey].(string)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls++
	o.deliveries[key]++
	if o.calls <= unavailable {
		return nil, SendOutput{}, errors.New("the mail server is unavailable; try again")
	}
	if out, ok := o.sent[key]; ok && key != "" {
		out.Deliveries = o.deliveries[key]
		return ordered(out), out, nil
	}
	out := SendOutput{MessageID: fmt.Sprintf("msg-%d", len(o.sent)+1), Status: "sent to " + joinAnd(in.To), Deliveries: o.deliveries[key]}
	if in.Decision != "Approve" {
		out = SendOutput{Status: "not sent: " + in.Decision, Deliveries: o.deliveries[key]}
	}
	o.sent[key] = out
	return ordered(out), out, nil
}

func joinAnd(names []string) string {
	names = slices.Clone(names)
	switch len(names) {
	case 0:
		return "nobody"
	case 1:
		return names[0]
	}
	last := names[len(names)-1]
	out := names[0]
	for _, n := range names[1 : len(names)-1] {
		out += ", " + n
	}
	return out + " and " + last
}
