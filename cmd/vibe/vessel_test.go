package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/augceo/vibe/api"
	"github.com/augceo/vibe/internal/llmtest"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/request"
	"github.com/augceo/vibe/vessel"
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

// TestPrintResult: vibe vessel prints what the HTTP API gives of a
// request's decisions — follow-ups, repairs, the calls they replaced, the
// instances left without a call, the parts — when there is any, after the
// calls, states and usage.
func TestPrintResult(t *testing.T) {
	call := func(i int, tool, errText string) vessel.CallResult {
		return vessel.CallResult{Index: i, Tool: tool, Instance: "c1", Params: jsonv.NewObject(0).Value(), Result: jsonv.NullValue(), Error: errText}
	}
	decision := jsonv.ObjectValue(jsonv.Member{Name: "calls", Value: jsonv.ArrayValue()})
	for _, tt := range []struct {
		name string
		info request.Info
		want string
	}{
		{"a request decided at once", request.Info{ID: "r", Decision: decision, Calls: []vessel.CallResult{call(0, "note", "")}, States: jsonv.NewObject(0).Value()},
			"request,decision,calls,states,usage"},
		{"one repaired, followed up and split", request.Info{ID: "r", Decision: decision, Calls: []vessel.CallResult{call(1, "note", "")}, States: jsonv.NewObject(0).Value(),
			FollowUps: []jsonv.Value{decision}, Repairs: []jsonv.Value{decision}, Replaced: []vessel.CallResult{call(0, "count", "count: parameters break the tool's schema")},
			Unanswered: []string{"c2"}, Parts: []string{"r-part-1", "r-part-2"}},
			"request,decision,calls,states,usage,followUps,repairs,replaced,unanswered,parts"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errs strings.Builder
			if err := printResult(stdio{out: &out, err: &errs}, &tt.info); err != nil {
				t.Fatal(err)
			}
			v, err := jsonv.Parse([]byte(out.String()))
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(v.Object().Names(), ","); got != tt.want {
				t.Errorf("members %s, want %s", got, tt.want)
			}
			if r := v.Lookup("replaced"); len(tt.info.Replaced) > 0 && r.Array()[0].Lookup("error").Str() != tt.info.Replaced[0].Error {
				t.Errorf("replaced %s", jsonv.Marshal(r))
			}
		})
	}
}

// TestVesselSplit: vibe vessel on seed 002's manager and employees with
// one employee per decision ("decisionSize": 1): the request runs as two
// parts, and what it prints joins them — B's call and B's new state, A's
// state as it was — and says, as the HTTP API does, the follow-up that
// asked again about A, that A is left without a call, and the parts.
func TestVesselSplit(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded engine")
	}
	// The seed's decision, in the part that holds employee_B; nothing for
	// employee_A, asked or asked again.
	model := llmtest.NewWith(t, func(name, body string) string {
		if strings.Contains(body, `\"employee_B\"`) {
			return `{"_reasoning":"B gets the report","calls":[{"_tool":"updateTask","_instance":"employee_B","newTask":"Finalize the quarterly report","newStatus":"High Priority","output":"†state"}]}`
		}
		return `{"_reasoning":"A keeps its task","calls":[]}`
	})
	dir := t.TempDir()
	file := filepath.Join(dir, "manager.vessel.json")
	os.WriteFile(file, []byte(`{"name": "Manager", "system": "You manage a small team. Each state message is one employee's current work.", "tools": ["aug:instructions/updateTask"], "decisionSize": 1}`), 0o600)
	status, stdout, stderr := run(t, "", "vessel", file, "--registry", manager+"/registry", "--context", manager+"/context.json",
		"--data", t.TempDir(), "--llm", "openai:m", "--llm-base-url", model.URL)
	if status != 0 {
		t.Fatalf("vessel: %d %s", status, stderr)
	}
	out, err := jsonv.Parse([]byte(stdout))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(out.Object().Names(), ","); got != "request,decision,calls,states,usage,followUps,unanswered,parts" {
		t.Errorf("members %s", got)
	}
	id := out.Lookup("request").Str()
	for _, c := range []struct{ what, got, want string }{
		{"calls", string(jsonv.Marshal(out.Lookup("calls"))), `[{"tool":"updateTask","instance":"employee_B","params":{"newTask":"Finalize the quarterly report","newStatus":"High Priority"},"output":"state","result":{"newTask":"Finalize the quarterly report","newStatus":"High Priority"}}]`},
		{"states", string(jsonv.Marshal(out.Lookup("states"))), `{"employee_A":{"task":"Draft initial proposal","status":"In Progress"},"employee_B":{"task":"Review team submissions","status":"Blocked","newTask":"Finalize the quarterly report","newStatus":"High Priority"}}`},
		{"follow-ups", string(jsonv.Marshal(out.Lookup("followUps"))), `[{"_reasoning":"A keeps its task","calls":[]}]`},
		{"unanswered", string(jsonv.Marshal(out.Lookup("unanswered"))), `["employee_A"]`},
		{"parts", string(jsonv.Marshal(out.Lookup("parts"))), `["` + id + `-part-1","` + id + `-part-2"]`},
	} {
		if c.got != c.want {
			t.Errorf("%s: %s, want %s", c.what, c.got, c.want)
		}
	}
	if !strings.Contains(stderr, "vibe: 1. updateTask [employee_B] → state") || !strings.Contains(stderr, "vibe: 1 instance(s) without a call: employee_A") {
		t.Errorf("stderr:\n%s", stderr)
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

// billingAnswers are a model's answers for the billing-report example: the
// Vessel's decision launches the report, whose second chunk the model
// writes.
var billingAnswers = map[string]string{
	"decision":        `{"_reasoning":"a report is asked for","calls":[{"_tool":"BillingReportProcess","name":"BillingReportProcess","llmContext1":{"_considerations":"Q1 for cust-042","reportParameters":{"customerId":"cust-042","from":"2026-01-01","to":"2026-03-31","currency":"EUR"},"_feedback":"ok"},"_outputPath":"state.launched"}]}`,
	"LLM_llmContext2": `{"writeReport":{"_arithmetic":"100+250=350","total":350,"outstanding":250,"summary":"Two invoices in Q1; one is unpaid.","$confidence":0.9}}`,
}

// invoicesAction serves FetchInvoices_Activity over HTTP and writes an
// actions file for it.
func invoicesAction(t *testing.T) string {
	invoices := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"invoices":[{"number":"A-1","date":"2026-01-15","amount":100,"paid":true},{"number":"A-2","date":"2026-02-15","amount":250,"paid":false}]}`)
	}))
	t.Cleanup(invoices.Close)
	actions := filepath.Join(t.TempDir(), "invoices.json")
	os.WriteFile(actions, []byte(`{"FetchInvoices_Activity": "`+invoices.URL+`"}`), 0o600)
	return actions
}

// httpJSON sends a request to the API as any HTTP client would, and
// returns the status and the JSON answer.
func httpJSON(t *testing.T, method, url, body string) (int, jsonv.Value) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	v, err := jsonv.Parse(data)
	if err != nil {
		t.Fatalf("%s %s: %d, not JSON: %s", method, url, resp.StatusCode, data)
	}
	return resp.StatusCode, v
}

// awaitHTTP reads GET /v1/requests/{id} until the request has finished.
func awaitHTTP(t *testing.T, base, id string) jsonv.Value {
	t.Helper()
	var got jsonv.Value
	waitUntil(t, "request "+id, time.Minute, func() bool {
		code, v := httpJSON(t, "GET", base+"/v1/requests/"+id, "")
		if code != 200 {
			t.Fatalf("GET %s: %d %s", id, code, jsonv.Marshal(v))
		}
		got = v
		return v.Lookup("status").Str() != "running"
	})
	return got
}

// startServe runs vibe serve args… on a free address with a fresh data
// directory, and returns the API's base URL and the data directory.
func startServe(t *testing.T, args ...string) (base, data string) {
	t.Helper()
	data, addr := t.TempDir(), freeAddr(t)
	_, out := child(t, append([]string{"serve", "--data", data, "--addr", addr}, args...)...)
	base = "http://" + addr
	c := (&api.Client{BaseURL: base}).Requests()
	waitUntil(t, "vibe serve", time.Minute, func() bool {
		_, err := c.List(context.Background(), request.ListOptions{Limit: 1})
		return err == nil
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("vibe serve:\n%s", out)
		}
	})
	return base, data
}

// TestRequestsThroughServe: the billing-report request through POST
// /v1/requests on a real vibe serve completes, and GET /v1/requests/{id}
// shows the launch call with its process, which completes too; vibe vessel
// with the serve running uses it — the serve's model answers, not the one
// the command names — and its errors read as on the embedded engine.
func TestRequestsThroughServe(t *testing.T) {
	if testing.Short() {
		t.Skip("starts vibe serve")
	}
	const billing = "../../examples/billing-report"
	serveModel := llmtest.New(t, llmtest.ByName(billingAnswers))
	cliModel := llmtest.New(t, llmtest.ByName(billingAnswers))
	base, data := startServe(t, "--registry", billing+"/registry", "--actions-file", invoicesAction(t), "--llm", "openai:m", "--llm-base-url", serveModel.URL)
	vesselDoc, err := os.ReadFile(billing + "/accountant.vessel.json")
	if err != nil {
		t.Fatal(err)
	}
	const prompt = "Billing report for cust-042, Q1 2026, in euros."

	code, started := httpJSON(t, "POST", base+"/v1/requests", `{"vessel":`+string(vesselDoc)+`,"prompt":"`+prompt+`"}`)
	id := started.Lookup("id").Str()
	if code != 201 || !strings.HasPrefix(id, "vessel-accountant-") || started.Lookup("vessel").Str() != "Accountant" {
		t.Fatalf("POST /v1/requests: %d %s", code, jsonv.Marshal(started))
	}
	info := awaitHTTP(t, base, id)
	calls := info.Lookup("calls").Array()
	if info.Lookup("status").Str() != "completed" || len(calls) != 1 || calls[0].Lookup("tool").Str() != "BillingReportProcess" || calls[0].Lookup("error").Str() != "" {
		t.Fatalf("GET /v1/requests/%s: %s", id, jsonv.Marshal(info))
	}
	launched := calls[0].Lookup("result").Lookup("id").Str()
	if !strings.HasPrefix(launched, "BillingReportProcess-") || info.Lookup("states").Lookup("").Lookup("launched").Lookup("id").Str() != launched ||
		info.Lookup("decision").Lookup("_reasoning").Str() != "a report is asked for" || info.Lookup("usage").Lookup("promptTokens").Literal() == "0" {
		t.Errorf("the launch call and its process: %s", jsonv.Marshal(info))
	}
	p := waitStatus(t, &api.Client{BaseURL: base}, launched, process.Completed)
	if p.Process != "BillingReportProcess" || p.State.Lookup("llmContext2").Lookup("writeReport").Lookup("outstanding").Literal() != "250" {
		t.Errorf("the launched process: %s %s", p.Process, jsonv.Marshal(p.State))
	}
	if code, list := httpJSON(t, "GET", base+"/v1/requests?limit=5", ""); code != 200 || list.Lookup("requests").Len() != 1 || list.Lookup("requests").Array()[0].Lookup("id").Str() != id {
		t.Errorf("GET /v1/requests: %d %s", code, jsonv.Marshal(list))
	}

	// vibe vessel on the serve's data directory goes through the serve: no
	// registry or actions here. A model flag it would not use is refused,
	// saying so; without it the serve's model answers.
	status, _, stderr := run(t, "", "vessel", billing+"/accountant.vessel.json", "--prompt", prompt, "--data", data, "--llm", "openai:m", "--llm-base-url", cliModel.URL)
	if status != 2 || !strings.Contains(stderr, "runs the work with its own model; drop --llm") {
		t.Errorf("vessel --llm through a serve: %d %s", status, stderr)
	}
	status, stdout, stderr := run(t, "", "vessel", billing+"/accountant.vessel.json", "--prompt", prompt, "--data", data)
	if status != 0 {
		t.Fatalf("vessel: %d %s", status, stderr)
	}
	out, err := jsonv.Parse([]byte(stdout))
	if err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if !strings.HasPrefix(out.Lookup("request").Str(), "vessel-accountant-") || !strings.HasPrefix(out.Lookup("calls").Array()[0].Lookup("result").Lookup("id").Str(), "BillingReportProcess-") ||
		!strings.Contains(stderr, "vibe: sending the request to the vibe serve at "+base) || !strings.Contains(stderr, "vibe: 1. BillingReportProcess → state.launched") {
		t.Errorf("vessel through the serve:\n%s\n%s", stdout, stderr)
	}
	if serveModel.Asked()["decision"] != 2 || cliModel.Requests() != 0 {
		t.Errorf("decisions asked of the serve's model %d, of the command's %d: want 2 and 0", serveModel.Asked()["decision"], cliModel.Requests())
	}

	// A Vessel with problems: the same errors, by the same file name, as
	// on the embedded engine with the same registry.
	bad := filepath.Join(t.TempDir(), "bad.vessel.json")
	os.WriteFile(bad, []byte(`{"name": "Bad", "tools": ["aug:instructions/answerQuestio"], "processes": ["aug:processes/Nope"]}`), 0o644)
	status, _, viaServe := run(t, "", "vessel", bad, "--prompt", prompt, "--data", data)
	_, local, _ := strings.Cut(viaServe, "\n")
	status2, _, embedded := run(t, "", "vessel", bad, "--prompt", prompt, "--data", t.TempDir(), "--registry", billing+"/registry")
	if status != 1 || status2 != 1 || local != embedded || !strings.HasPrefix(local, bad+": /tools/0: ") || strings.Count(local, "\n") != 2 {
		t.Errorf("through the serve (%d):\n%s\non the embedded engine (%d):\n%s", status, viaServe, status2, embedded)
	}
}

// TestPlansThroughServe: a plan through POST /v1/plans runs, one with
// problems is refused with every one of them before anything runs, and
// vibe plan with a serve running uses it, printing what it prints on the
// embedded engine.
func TestPlansThroughServe(t *testing.T) {
	if testing.Short() {
		t.Skip("starts vibe serve")
	}
	base, data := startServe(t, "--registry", manager+"/registry")
	planDoc, err := jsonv.Parse(must(os.ReadFile(manager + "/plan.json")))
	if err != nil {
		t.Fatal(err)
	}
	vesselDoc := must(os.ReadFile(manager + "/manager.vessel.json"))
	body := `{"vessel":` + string(vesselDoc) + `,"context":` + string(jsonv.Marshal(planDoc.Lookup("context"))) + `}`
	code, started := httpJSON(t, "POST", base+"/v1/plans", body)
	if code != 201 {
		t.Fatalf("POST /v1/plans: %d %s", code, jsonv.Marshal(started))
	}
	info := awaitHTTP(t, base, started.Lookup("id").Str())
	if info.Lookup("status").Str() != "completed" || info.Lookup("calls").Len() != 4 || info.Lookup("states").Lookup("employee_B").Lookup("report").Lookup("newStatus").Str() != "Needs review" {
		t.Errorf("the plan: %s", jsonv.Marshal(info))
	}

	badPlan := `[{"type":"state","_instance":"employee_A","task":"x"},{"type":"plan","calls":[` +
		`{"_tool":"updateTask","newTask":"†state.task","_outputPath":"state.review"},` +
		`{"_tool":"fireEmployee"},` +
		`{"_tool":"updateTask","newTask":"†state.title","newStatus":"Done"}]}]`
	for _, tt := range []struct {
		context string
		details []string // file path: message
	}{
		{badPlan, []string{
			"context /1/calls/0: call 1 (updateTask, instance employee_A): parameters break the tool's schema: missing property 'newStatus'",
			`context /1/calls/1/_tool: call 2 (fireEmployee, instance employee_A): unknown tool "fireEmployee" (tools: updateTask)`,
			"context /1/calls/2/newTask: call 3 (updateTask, instance employee_A) reads †state.title, but no call writes it and the state does not have it"}},
		{`[{"type":"state","task":"x"}]`, []string{`context : the context holds no plan message ({"type": "plan", "calls": [...]})`}},
	} {
		code, out := httpJSON(t, "POST", base+"/v1/plans", `{"vessel":"aug:vessels/none","context":`+tt.context+`}`)
		if code != 404 {
			t.Errorf("a Vessel the registry lacks: %d %s", code, jsonv.Marshal(out))
		}
		code, out = httpJSON(t, "POST", base+"/v1/plans", `{"vessel":`+string(vesselDoc)+`,"context":`+tt.context+`}`)
		var got []string
		for _, d := range out.Lookup("details").Array() {
			got = append(got, d.Lookup("file").Str()+" "+d.Lookup("path").Str()+": "+d.Lookup("message").Str())
		}
		if code != 422 || strings.Join(got, "\n") != strings.Join(tt.details, "\n") {
			t.Errorf("a plan with problems: %d\n%s\nwant\n%s", code, strings.Join(got, "\n"), strings.Join(tt.details, "\n"))
		}
	}
	if _, list := httpJSON(t, "GET", base+"/v1/requests", ""); list.Lookup("requests").Len() != 1 {
		t.Errorf("a refused plan was started: %s", jsonv.Marshal(list))
	}

	// vibe plan through the serve prints what it prints on the embedded
	// engine, and names a plan's problems by its file the same way.
	ids := regexp.MustCompile(`"request": "[^"]+"`)
	status, viaServe, stderr := run(t, "", "plan", manager+"/plan.json", "--data", data)
	status2, embedded, stderr2 := run(t, "", "plan", manager+"/plan.json", "--registry", manager+"/registry", "--data", t.TempDir())
	if status != 0 || status2 != 0 || !strings.Contains(stderr, "vibe: sending the request to the vibe serve") ||
		ids.ReplaceAllString(viaServe, "") != ids.ReplaceAllString(embedded, "") {
		t.Errorf("through the serve (%d):\n%s%s\non the embedded engine (%d):\n%s%s", status, viaServe, stderr, status2, embedded, stderr2)
	}
	file := filepath.Join(t.TempDir(), "bad-plan.json")
	os.WriteFile(file, []byte(`{"context": `+badPlan+`}`), 0o644)
	status, _, stderr = run(t, "", "plan", file, "--vessel", manager+"/manager.vessel.json", "--data", data)
	_, local, _ := strings.Cut(stderr, "\n")
	status2, _, stderr2 = run(t, "", "plan", file, "--vessel", manager+"/manager.vessel.json", "--registry", manager+"/registry", "--dry-run")
	if status != 1 || status2 != 1 || local != stderr2 || !strings.HasPrefix(local, file+": /context/1/calls/0: ") {
		t.Errorf("a bad plan through the serve (%d):\n%s\nchecked here (%d):\n%s", status, stderr, status2, stderr2)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestPlanBranchesCLI: a plan's "_if" in the dry run, the picture and a run
// on the embedded engine, where the call whose condition does not hold is
// skipped, not failed.
func TestPlanBranchesCLI(t *testing.T) {
	file := filepath.Join(t.TempDir(), "branch-plan.json")
	os.WriteFile(file, []byte(`{"context": [
		{"type": "state", "_instance": "employee_A", "task": "Draft initial proposal", "status": "In Progress"},
		{"type": "state", "_instance": "employee_B", "task": "Review team submissions", "status": "Blocked"},
		{"type": "plan", "calls": [
			{"_tool": "updateTask", "newTask": "†state.task", "newStatus": "Needs review", "_outputPath": "state.review"},
			{"_tool": "updateTask", "newTask": "Unblock the review", "newStatus": "Escalated", "_if": {"state": "†state.status", "equals": "Blocked"}, "_outputPath": "state.escalation"}]}]}`), 0o644)
	reg, vsl := manager+"/registry", manager+"/manager.vessel.json"
	status, stdout, stderr := run(t, "", "plan", file, "--vessel", vsl, "--registry", reg, "--dry-run")
	if status != 0 || !strings.Contains(stdout, "AFTER  IF") || !strings.Contains(stdout, `state.status = "Blocked"`) {
		t.Errorf("--dry-run: %d\n%s%s", status, stdout, stderr)
	}
	status, stdout, _ = run(t, "", "plan", file, "--vessel", vsl, "--registry", reg, "--dot")
	if status != 0 || !strings.Contains(stdout, `\nif state.status = \"Blocked\"", style=dashed];`) {
		t.Errorf("--dot: %d\n%s", status, stdout)
	}
	if testing.Short() {
		return
	}
	status, stdout, stderr = run(t, "", "plan", file, "--vessel", vsl, "--registry", reg, "--data", t.TempDir())
	if want := `vibe: 2. updateTask [employee_A]: skipped: the condition state.status = "Blocked" does not hold: it is "In Progress"`; status != 0 || !strings.Contains(stderr, want) {
		t.Errorf("run: %d, no %q in\n%s", status, want, stderr)
	}
	if !strings.Contains(stdout, `"skipped": "the condition state.status = \"Blocked\" does not hold`) || !strings.Contains(stdout, `"newStatus": "Escalated"`) {
		t.Errorf("run's result:\n%s", stdout)
	}
}
