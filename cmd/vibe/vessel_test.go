package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/augceo/vibe/internal/llmtest"
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

// TestVesselLaunchSettles: vibe vessel on the embedded engine, with no
// server, keeps its worker up until the process it launched has completed,
// and vibe ps lists that process by name.
func TestVesselLaunchSettles(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	const billing = "../../examples/billing-report"
	model := llmtest.New(t, llmtest.ByName(map[string]string{
		"decision":        `{"_reasoning":"a report is asked for","calls":[{"_tool":"BillingReportProcess","name":"BillingReportProcess","llmContext1":{"_considerations":"Q1 for cust-042","reportParameters":{"customerId":"cust-042","from":"2026-01-01","to":"2026-03-31","currency":"EUR"},"_feedback":"ok"}}]}`,
		"LLM_llmContext2": `{"writeReport":{"_arithmetic":"100+250=350","total":350,"outstanding":250,"summary":"Two invoices in Q1; one is unpaid.","$confidence":0.9}}`,
	}))
	invoices := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(300 * time.Millisecond) // the process runs on after the request is done
		io.WriteString(w, `{"invoices":[{"number":"A-1","date":"2026-01-15","amount":100,"paid":true},{"number":"A-2","date":"2026-02-15","amount":250,"paid":false}]}`)
	}))
	defer invoices.Close()
	actions := filepath.Join(t.TempDir(), "invoices.json")
	os.WriteFile(actions, []byte(`{"FetchInvoices_Activity": "`+invoices.URL+`"}`), 0o600)
	data := t.TempDir()
	status, _, stderr := run(t, "", "vessel", billing+"/accountant.vessel.json", "--registry", billing+"/registry", "--actions-file", actions,
		"--prompt", "Billing report for cust-042, Q1 2026, in euros.", "--data", data, "--llm", "openai:m", "--llm-base-url", model.URL)
	if status != 0 {
		t.Fatalf("vessel: %d %s", status, stderr)
	}
	m := regexp.MustCompile(`vibe: launched (BillingReportProcess-\S+) \(BillingReportProcess\) completed`).FindStringSubmatch(stderr)
	if m == nil || model.Asked()["LLM_llmContext2"] != 1 {
		t.Fatalf("the command did not wait for the launched process (report asked %d times):\n%s", model.Asked()["LLM_llmContext2"], stderr)
	}
	status, stdout, _ := run(t, "", "ps", "--data", data)
	if status != 0 || !regexp.MustCompile(regexp.QuoteMeta(m[1])+`\s+BillingReportProcess\s+completed`).MatchString(stdout) {
		t.Errorf("ps: %d\n%s", status, stdout)
	}
}
