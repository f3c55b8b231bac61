package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/augceo/vibe/jsonv"
)

const manager = "../../examples/manager-employees"

func TestPlanDryRunAndDot(t *testing.T) {
	status, stdout, stderr := run(t, "", "plan", manager+"/plan.json", "--registry", manager+"/registry", "--dry-run")
	if status != 0 {
		t.Fatalf("%d %s", status, stderr)
	}
	golden(t, "testdata/manager-plan.dry-run.txt", stdout)
	status, stdout, _ = run(t, "", "plan", manager+"/plan.json", "--registry", manager+"/registry", "--dot")
	if status != 0 || !strings.HasPrefix(stdout, "digraph plan {") || !strings.Contains(stdout, `c1 -> c2 [label="state.review.newStatus"];`) {
		t.Errorf("--dot: %d\n%s", status, stdout)
	}
}

func TestPlanAndVesselRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	data := t.TempDir()
	status, stdout, stderr := run(t, "", "plan", manager+"/plan.json", "--registry", manager+"/registry", "--data", data)
	if status != 0 {
		t.Fatalf("plan: %d %s", status, stderr)
	}
	out, err := jsonv.Parse([]byte(stdout))
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Lookup("states").Lookup("employee_B").Lookup("report").Lookup("newStatus").Str(); got != "Needs review" {
		t.Errorf("plan result %s", stdout)
	}

	// A Vessel request: three comments, one model request, three calls.
	model := newChatAnswer(t, `{"_reasoning":"two fine, one spam","calls":[`+
		`{"_tool":"moderateComment","_instance":"c001","_outputPath":"state.moderation","_reading":"praise","decision":"approve","reason":"friendly"},`+
		`{"_tool":"moderateComment","_instance":"c002","_outputPath":"state.moderation","_reading":"disagreement","decision":"approve","reason":"civil"},`+
		`{"_tool":"moderateComment","_instance":"c003","_outputPath":"state.moderation","_reading":"an ad","decision":"reject","reason":"spam"}]}`)
	ctx := filepath.Join(t.TempDir(), "three.json")
	all, _ := os.ReadFile("../../examples/moderation/comments.json")
	v, _ := jsonv.Parse(all)
	os.WriteFile(ctx, jsonv.Marshal(jsonv.ArrayValue(v.Array()[:3]...)), 0o644)
	status, stdout, stderr = run(t, "", "vessel", "../../examples/moderation/moderator.vessel.json", "--registry", "../../examples/moderation/registry",
		"--context", ctx, "--prompt", "Moderate these.", "--data", data, "--llm", "openai:m", "--llm-base-url", model.URL)
	if status != 0 {
		t.Fatalf("vessel: %d %s", status, stderr)
	}
	out, _ = jsonv.Parse([]byte(stdout))
	if got := out.Lookup("states").Lookup("c003").Lookup("moderation").Lookup("decision").Str(); got != "reject" || out.Lookup("calls").Len() != 3 {
		t.Errorf("vessel output %s", stdout)
	}
	if !strings.Contains(stderr, "vibe: 3. moderateComment [c003] → state.moderation") || model.Requests() != 1 {
		t.Errorf("stderr %s, %d model requests", stderr, model.Requests())
	}
}
