package compose

import (
	"context"
	"testing"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

func TestSplit(t *testing.T) {
	filled := parse(t, `{
		"_considerations": "both work 9 to 5",
		"identifyParticipants": {"organizer": "a@x", "$confidence": 0.9, "_why": "named first"},
		"calls": [{"_tool": "Send", "_instance": "c1", "_outputPath": "state.x", "_note": "t", "to": "b"}],
		"$qualityScore": 8,
		"_feedback": "done"
	}`)
	before := string(jsonv.Marshal(filled))
	p := Split(filled)
	if got, want := string(jsonv.Marshal(p.Output)), `{"identifyParticipants":{"organizer":"a@x"},"calls":[{"_tool":"Send","_instance":"c1","_outputPath":"state.x","to":"b"}]}`; got != want {
		t.Errorf("output %s\nwant   %s", got, want)
	}
	wantThinking := []Field{
		{"/_considerations", "_considerations", jsonv.StringValue("both work 9 to 5")},
		{"/identifyParticipants/_why", "_why", jsonv.StringValue("named first")},
		{"/calls/0/_note", "_note", jsonv.StringValue("t")},
		{"/_feedback", "_feedback", jsonv.StringValue("done")},
	}
	if len(p.Thinking) != len(wantThinking) {
		t.Fatalf("thinking %v", p.Thinking)
	}
	for i, w := range wantThinking {
		if g := p.Thinking[i]; g.Path != w.Path || g.Name != w.Name || !jsonv.Equal(g.Value, w.Value) {
			t.Errorf("thinking[%d] = %v, want %v", i, g, w)
		}
	}
	if len(p.Metrics) != 2 || p.Metrics[0].Path != "/identifyParticipants/$confidence" || p.Metrics[1].Name != "$qualityScore" || p.Metrics[1].Value.Literal() != "8" {
		t.Errorf("metrics %v", p.Metrics)
	}
	if string(jsonv.Marshal(filled)) != before {
		t.Error("Split changed its input")
	}
	if got := Split(jsonv.StringValue("plain")); got.Output.Str() != "plain" || got.Thinking != nil {
		t.Errorf("a scalar splits to itself: %v", got)
	}
}

func TestToolset(t *testing.T) {
	reg := exampleRegistry(t)
	tools, err := Toolset(context.Background(), []string{
		"aug:instructions/identifyParticipants",
		"aug:processes/schedule-meeting:1#fetchAvailability",
	}, Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 2 || tools[0].Name != "identifyParticipants" || tools[1].Name != "fetchAvailability" {
		t.Fatalf("tools %+v", tools)
	}
	// Presented as they are: not merged, no root-only keywords.
	if _, ok := tools[0].Schema.Get("$schema"); ok {
		t.Error("$schema kept in a tool")
	}
	if got := tools[1].Schema.Lookup("title").Str(); got != "Подготовка параметров для запроса доступности" {
		t.Errorf("fragment tool title %q", got)
	}
	_, err = Toolset(context.Background(), []string{"aug:instructions/identifyParticipants", "aug:instructions/identifyParticipants", "aug:instructions/nope"}, Options{Registry: reg})
	if err == nil {
		t.Fatal("duplicate and unknown tools accepted")
	}
	if got := len(schema.Errors(err, "")); got != 2 {
		t.Errorf("want 2 errors (a duplicate name, an unknown tool), got %d: %v", got, err)
	}
}
