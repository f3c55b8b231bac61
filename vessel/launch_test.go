package vessel

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/schema"
)

// TestHandMadeLaunches: seed 001's composed StartProcess tool, listed as a
// Vessel's tool, is checked when the toolset is built. One whose name
// names no process of the registry is refused, naming the tool and the
// process; one whose llmContext1 can be proven never to fit the process's
// entry chunk — a property the chunk requires that the tool does not
// offer or forbids, constants or types that differ — is refused with each
// reason at its path. What cannot be proven from the two schemas (a
// property offered but not required) is left to each call's check.
func TestHandMadeLaunches(t *testing.T) {
	seed, err := os.ReadFile("../examples/schedule-meeting/tool.json")
	if err != nil {
		t.Fatal(err)
	}
	seedTool := func(from, to string) string { return strings.Replace(string(seed), from, to, 1) }
	// A tool written out by hand around the process's entry chunk, with
	// fetchAvailability as given.
	handMade := func(fetch string) string {
		return `{"type": "object", "properties": {
			"name": {"const": "ScheduleMeeting"},
			"llmContext1": {"type": "object", "properties": {
				"identifyParticipants": {"$ref": "aug:processes/schedule-meeting:2#identifyParticipants"},
				"fetchAvailability": ` + fetch + `},
				"required": ["identifyParticipants", "fetchAvailability"]}},
			"required": ["name", "llmContext1"]}`
	}
	timeRange := `"timeRange": {"$ref": "aug:processes/schedule-meeting:2#/properties/llmContext1/properties/fetchAvailability/properties/timeRange"}`
	for _, tt := range []struct {
		name, tool string
		want       []string // the errors; none: it builds
	}{
		{"the seed's tool", string(seed), nil},
		{"the emails offered, not required: each call is checked", handMade(`{"type": "object", "properties": {
			"organizerEmail": {"type": "string"}, "attendeeEmail": {"type": "string"}, ` + timeRange + `}, "required": ["timeRange"]}`), nil},
		{"a name that names no process", seedTool(`"const": "ScheduleMeeting"`, `"const": "ScheduleMeting"`),
			[]string{`scheduler.vessel.json: /tools/0: tool startScheduling launches the process "ScheduleMeting", which is none of the registry's (its processes: ScheduleMeeting): its calls would launch nothing`}},
		{"composed from an older version of the process", seedTool("aug:processes/schedule-meeting:2#", "aug:processes/schedule-meeting:1#"),
			[]string{
				`scheduler.vessel.json: /tools/0: tool startScheduling: parameter /llmContext1/fetchAvailability: the entry chunk requires "organizerEmail", which the tool does not offer the model, so no call of it can launch process schedule-meeting (chunk LLM_llmContext1)`,
				`scheduler.vessel.json: /tools/0: tool startScheduling: parameter /llmContext1/fetchAvailability: the entry chunk requires "attendeeEmail", which the tool does not offer the model`,
			}},
		{"a required email forbidden", handMade(`{"type": "object", "properties": {
			"organizerEmail": false, "attendeeEmail": {"type": "string"}, ` + timeRange + `}}`),
			[]string{`scheduler.vessel.json: /tools/0: tool startScheduling: parameter /llmContext1/fetchAvailability/organizerEmail: the entry chunk requires "organizerEmail", which the tool forbids`}},
		{"types and constants that differ", handMade(`{"type": "object", "properties": {
			"organizerEmail": {"type": "integer"}, "attendeeEmail": {"const": 7}, "timeRange": {"type": "string"}}}`),
			[]string{
				`scheduler.vessel.json: /tools/0: tool startScheduling: parameter /llmContext1/fetchAvailability/organizerEmail: the tool's type integer is not the entry chunk's string`,
				`scheduler.vessel.json: /tools/0: tool startScheduling: parameter /llmContext1/fetchAvailability/attendeeEmail: the tool's const 7 is not of the entry chunk's type string`,
				`scheduler.vessel.json: /tools/0: tool startScheduling: parameter /llmContext1/fetchAvailability/timeRange: the tool's type string is not the entry chunk's object`,
			}},
		{"open to more properties: nothing proven", handMade(`{"type": "object", "properties": {` + timeRange + `}, "additionalProperties": true}`), nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reg, err := registry.Open("../examples/schedule-meeting/registry")
			if err != nil {
				t.Fatal(err)
			}
			doc, err := schema.Parse("tool.json", []byte(tt.tool))
			if err != nil {
				t.Fatal(err)
			}
			if err := reg.Add("aug:tools/startScheduling", doc); err != nil {
				t.Fatal(err)
			}
			v := &Vessel{Name: "scheduler", Tools: []string{"aug:tools/startScheduling"}, File: "scheduler.vessel.json"}
			ts, err := Build(context.Background(), v, BuildOptions{Registry: reg, Actions: []string{"FetchAvailability_Activity", "sendInvitation"}})
			var got []string
			for _, e := range schema.Errors(err, "") {
				got = append(got, e.Error())
			}
			if len(got) != len(tt.want) {
				t.Fatalf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tt.want[i]) {
					t.Errorf("error %d:\n%s\nwant:\n%s…", i, got[i], tt.want[i])
				}
			}
			if tt.want == nil && ts.Tool("startScheduling").Kind != Launch {
				t.Errorf("tool %+v: a launch", ts.Tool("startScheduling"))
			}
		})
	}
}
