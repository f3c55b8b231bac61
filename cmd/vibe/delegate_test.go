package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	goldenfile "github.com/augceo/vibe/internal/golden"
	"github.com/augceo/vibe/internal/llmtest"
	"github.com/augceo/vibe/jsonv"
)

// delegateAnswers are the authored answers of the delegate examples'
// recordings: each model of the tree answers by its system text.
func delegateAnswers(name, body string) string {
	switch {
	case strings.Contains(body, "record producer"):
		return `{"_reasoning": "The track needs a song and, for its intro, a rain ambience: the song goes to the composer, the effect straight to the sound engineer.", "calls": [
			{"_tool": "compose", "brief": "A wistful ballad for a rainy autumn day, the first track of the album Autumn."},
			{"_tool": "synthesize", "sound": "rain on a window", "seconds": 30}]}`
	case strings.Contains(body, "You are a composer") && name == "decision":
		return `{"_reasoning": "A warm pad carries the verse; the sound engineer makes it.", "calls": [{"_tool": "synthesize", "sound": "warm analog pad", "seconds": 8}]}`
	case strings.Contains(body, "You are a composer"):
		return `{"title": "Rain Ballad", "key": "D minor", "structure": ["intro (rain)", "verse (warm pad)", "chorus", "verse", "chorus", "outro"], "melody": "D F A G F E D — A C D C A G A"}`
	case strings.Contains(body, "sound engineer") && strings.Contains(body, "rain on a window"):
		return `{"_physics": "Rain on glass is many short broadband impulses at random times, brighter for small drops.", "patch": {"oscillator": "noise", "cutoffHz": 4000, "attackMs": 1, "releaseMs": 40}, "notes": "Retrigger at random, 20–60 times a second."}`
	case strings.Contains(body, "sound engineer"):
		return `{"_physics": "A pad is several detuned saw waves, low-passed, with a slow swell.", "patch": {"oscillator": "saw", "cutoffHz": 1200, "attackMs": 400, "releaseMs": 900}, "notes": "Three voices detuned by 7 cents, chorus on."}`
	case strings.Contains(body, "coordinate messages"):
		return `{"_reasoning": "Send it once as given, and once through the checked contract.", "calls": [
			{"_tool": "sendMessage", "userId": "u_123", "text": "Hello, world!"},
			{"_tool": "sendMessageChecked", "recipientId": "u_123", "messageBody": "Hello, world!"}]}`
	case strings.Contains(body, "эксперт по обмену сообщениями"):
		return `{"recipientId": "u_123", "messageBody": "Hello, world!"}`
	}
	return `{}`
}

var runIDs = regexp.MustCompile(`"(request|run)": "[^"]+"`)

// TestDelegateExamples runs the speaker and music examples as their
// READMEs do: offline, on the recorded answers (go test -update records
// them again from delegateAnswers through a test model).
func TestDelegateExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	for _, ex := range []struct{ name, vessel, prompt, context string }{
		{"speaker", "orchestrator.vessel.json", "Tell user u_123: Hello, world!", ""},
		{"music", "producer.vessel.json", "Make the album's first track: a song, and a rain ambience for its intro.", "context.json"},
	} {
		t.Run(ex.name, func(t *testing.T) {
			dir := "../../examples/" + ex.name
			rec := dir + "/answers.jsonl"
			args := []string{"vessel", dir + "/" + ex.vessel, "--registry", dir + "/registry", "--prompt", ex.prompt, "--data", t.TempDir()}
			if ex.context != "" {
				args = append(args, "--context", dir+"/"+ex.context)
			}
			if goldenfile.Update() {
				model := llmtest.NewWith(t, func(name, body string) string {
					v, err := jsonv.Parse([]byte(delegateAnswers(name, body)))
					if err != nil {
						t.Error(err)
					}
					return string(jsonv.Marshal(v))
				})
				os.Remove(rec)
				t.Setenv("VIBE_LLM_RECORD", rec)
				args = append(args, "--llm", "openai:authored-for-the-example", "--llm-base-url", model.URL)
			} else {
				args = append(args, "--llm", "replay:"+rec)
			}
			status, stdout, stderr := run(t, "", args...)
			if status != 0 {
				t.Fatalf("vibe %s: %d\n%s", strings.Join(args, " "), status, stderr)
			}
			if !goldenfile.Update() && !strings.Contains(stderr, "(a recording, not a live model)") {
				t.Errorf("the replay does not say so: %s", stderr)
			}
			out, err := jsonv.Parse([]byte(stdout))
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range out.Lookup("calls").Array() {
				if !strings.HasPrefix(c.Lookup("run").Str(), out.Lookup("request").Str()+"-") {
					t.Errorf("call %s: run %q is not a child of the request", c.Lookup("tool").Str(), c.Lookup("run").Str())
				}
			}
			golden(t, "testdata/examples/"+ex.name+".out.json", runIDs.ReplaceAllString(stdout, `"$1": "…"`))
		})
	}
}
