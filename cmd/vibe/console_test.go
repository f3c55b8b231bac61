package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/augceo/vibe/api"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/internal/llmtest"
	"github.com/augceo/vibe/process"
)

// xss is what the model writes into the invitation: the console must show
// it as text, and the browser must not run it.
const xss = `<script>window.vibeXSS = 1</script>`

// consoleModel answers schedule-meeting's two LLM chunks; its first answer
// to the second one breaks the schema (a repair turn the process page
// shows), and its draft holds a script.
func consoleModel(t *testing.T) *llmtest.Server {
	var mu sync.Mutex
	asked := 0
	return llmtest.New(t, func(name string) string {
		if name != "LLM_llmContext2" {
			return meetingAnswers[name]
		}
		mu.Lock()
		defer mu.Unlock()
		if asked++; asked == 1 {
			return `{"findCommonSlot":{"selectedSlot":"at two","reasoning":"both are free"}}`
		}
		return `{"findCommonSlot":{"selectedSlot":"2024-03-20T14:00:00Z","reasoning":"both are free at two"},` +
			`"draftInvitation":{"subject":"Meeting on March 20","body":"Hi Bob,\n\nshall we meet at 14:00? ` + strings.ReplaceAll(xss, `"`, `\"`) + `\n\nAlice"}}`
	})
}

// chromium is the browser the console's tests drive, or "" when there is
// none on this machine.
func chromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestConsole runs vibe serve with the schedule-meeting example on the
// embedded engine and Temporal's UI beside it, and uses both as a person
// would: in headless Chromium, the waiting process is found in the inbox,
// a wrong answer shows its field's error and the process keeps waiting, a
// right one completes it on its page; the model's <script> is text. It
// writes screenshots of the list, the inbox and a process's page to
// $VIBE_SCREENSHOTS (or a temporary directory, logged).
func TestConsole(t *testing.T) {
	if testing.Short() {
		t.Skip("starts vibe serve")
	}
	model := consoleModel(t)
	actions, _ := meetingActions(t)
	addr, ui := freeAddr(t), freeAddr(t)
	_, out := child(t, "serve", "--registry", example+"/registry", "--data", t.TempDir(), "--addr", addr, "--ui-listen", ui,
		"--actions-file", actions, "--llm", "openai:test-model", "--llm-base-url", model.URL)
	base := "http://" + addr
	c := &api.Client{BaseURL: base}
	ctx := context.Background()
	waitUntil(t, "vibe serve", time.Minute, func() bool { _, err := c.List(ctx, process.ListOptions{Limit: 1}); return err == nil })
	started, err := c.Start(ctx, process.StartOptions{Process: "aug:processes/schedule-meeting", Prompt: "Meet Bob"})
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	id := started.ID
	waitStatus(t, c, id, process.Waiting)

	t.Run("temporal ui", func(t *testing.T) {
		// The UI's own API lists the example's workflow from the engine.
		var list struct {
			Executions []struct {
				Execution struct{ WorkflowID string }
				Type      struct{ Name string }
			}
		}
		resp, err := http.Get("http://" + ui + "/api/v1/namespaces/default/workflows")
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err := json.Unmarshal(body, &list); err != nil || resp.StatusCode != 200 {
			t.Fatalf("%d %v\n%s", resp.StatusCode, err, body)
		}
		found := false
		for _, ex := range list.Executions {
			found = found || (ex.Execution.WorkflowID == id && ex.Type.Name == durable.ProcessWorkflow)
		}
		if !found {
			t.Errorf("%s is not listed:\n%s", id, body)
		}
		// Its pages answer, and the console links a process there.
		if resp, err := http.Get("http://" + ui + "/namespaces/default/workflows/" + id); err != nil || resp.StatusCode != 200 {
			t.Errorf("the workflow's page: %v %v", resp, err)
		}
		page := getBody(t, base+"/processes/"+id)
		if link := `href="http://` + ui + `/namespaces/default/workflows/` + id + `"`; !strings.Contains(page, link) {
			t.Errorf("no link %s on the process's page", link)
		}
		// Only on loopback: it has no sign-in (against DNS rebinding too).
		req, _ := http.NewRequest("GET", "http://"+ui+"/", nil)
		req.Host = "rebound.example.com"
		if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
			t.Errorf("a request to another name: %v %v", resp, err)
		}
	})

	t.Run("browser", func(t *testing.T) {
		browser := chromium()
		if browser == "" {
			t.Skip("no chromium on PATH: apt-get install -y chromium (.ci/run does)")
		}
		shots := os.Getenv("VIBE_SCREENSHOTS")
		if shots == "" {
			shots = t.TempDir()
		}
		if err := os.MkdirAll(shots, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshots in %s", shots)
		alloc, cancel := chromedp.NewExecAllocator(ctx, chromedp.ExecPath(browser), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
			chromedp.NoFirstRun, chromedp.WindowSize(1280, 960), chromedp.UserDataDir(t.TempDir()),
			chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true))
		defer cancel()
		bctx, cancel := chromedp.NewContext(alloc)
		defer cancel()
		bctx, cancel = context.WithTimeout(bctx, time.Minute)
		defer cancel()
		shoot := func(name string) {
			t.Helper()
			png, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(shots, name), png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		text := func(sel string) string {
			t.Helper()
			s, err := chromedp.Run(bctx, chromedp.Text(sel))
			if err != nil {
				t.Fatalf("%s: %v\n%s", sel, err, out)
			}
			return s
		}
		item := "#" + id
		// The inbox has the waiting process, its draft beside the form.
		if err := chromedp.Do(bctx, chromedp.Navigate(base+"/inbox"), chromedp.WaitVisible(item+` button[type=submit]`)); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if got := text(item + " aside.context"); !strings.Contains(got, xss) {
			t.Errorf("the draft's script is not shown as text: %q", got)
		}
		// Send it without a decision: the field says it is required.
		if err := chromedp.Do(bctx, chromedp.Click(item+` button[type=submit]`), chromedp.WaitVisible(item+` .sf-problem`)); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if got := text(item + ` fieldset[data-path="/confirmInvitation/decision"] .sf-problem`); got != "required" {
			t.Errorf("the decision's error: %q", got)
		}
		if info, err := c.Get(ctx, id); err != nil || info.Status != process.Waiting {
			t.Fatalf("after a wrong answer: %v %v", info, err)
		}
		shoot("inbox.png")
		// Approve: the browser goes to the process's page, which follows
		// the process until it completes.
		if err := chromedp.Do(bctx, chromedp.Click(item+` input[value='"Approve"']`), chromedp.Click(item+` button[type=submit]`),
			chromedp.WaitVisible(`h1 .badge.completed`)); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if loc, _ := chromedp.Run(bctx, chromedp.Location()); loc != base+"/processes/"+id {
			t.Errorf("after the answer the browser is at %s", loc)
		}
		if info, err := c.Get(ctx, id); err != nil || info.Status != process.Completed {
			t.Fatalf("after the answer: %v %v", info, err)
		}
		// The page reloads once when its process stops waiting for a
		// person; load it afresh so what follows reads one document.
		if err := chromedp.Do(bctx, chromedp.Navigate(base+"/processes/"+id), chromedp.WaitVisible(`h1 .badge.completed`)); err != nil {
			t.Fatal(err)
		}
		// The model's script is text on this page too, and never ran.
		shown := fmt.Sprintf(`(document.querySelector('#chunk-3')||{innerText:''}).innerText.includes(%q)`, xss)
		if _, err := chromedp.Run(bctx, chromedp.Poll[bool](shown, chromedp.WithPollingInterval(50*time.Millisecond),
			chromedp.WithPollingTimeout(10*time.Second))); err != nil {
			t.Errorf("the draft on the process's page: %v: %q", err, text(`#chunk-3`))
		}
		if ran, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`window.vibeXSS !== undefined`)); err != nil || ran {
			t.Errorf("the model's script ran: %v %v", ran, err)
		}
		shoot("process.png")
		// The second model call: what it was sent, and its repair turn.
		if err := chromedp.Do(bctx, chromedp.Click(`#chunk-3 details.call summary`), chromedp.WaitVisible(`#chunk-3 .turn.refused`),
			chromedp.ScrollIntoView(`#chunk-3 .turn.refused`)); err != nil {
			t.Fatal(err)
		}
		if got := text(`#chunk-3 details.call summary`); !strings.Contains(got, "2 turns, 1 of them repairs") {
			t.Errorf("the call's summary: %q", got)
		}
		shoot("process-call.png")
		// Two more: one waits for a person, one is cancelled. The list
		// shows each as it goes, without a reload.
		if err := chromedp.Do(bctx, chromedp.Navigate(base+"/"), chromedp.WaitVisible(`a[href="/processes/`+id+`"]`)); err != nil {
			t.Fatal(err)
		}
		var more [2]string
		for i := range more {
			s, err := c.Start(ctx, process.StartOptions{Process: "aug:processes/schedule-meeting", Prompt: "Meet Carol"})
			if err != nil {
				t.Fatal(err)
			}
			more[i] = s.ID
		}
		waitStatus(t, c, more[0], process.Waiting)
		if err := c.Cancel(ctx, more[1]); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, c, more[1], process.Failed)
		if err := chromedp.Do(bctx, chromedp.WaitVisible(`#live a[href="/inbox#`+more[0]+`"]`),
			chromedp.WaitVisible(`#live tr:has(a[href="/processes/`+more[1]+`"]) .badge.failed`)); err != nil {
			t.Fatalf("the list did not follow: %v", err)
		}
		if got := text(`#live tbody tr:has(a[href="/processes/` + id + `"])`); !strings.Contains(got, "completed") {
			t.Errorf("the list's row: %q", got)
		}
		shoot("processes.png")
	})
}

func getBody(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestConsoleRefused: a vibe serve with a token, off loopback, refuses
// every console URL to a request without the token: pages send the
// browser to sign in, the rest are 401, and none shows a process. Without
// --https-cert it warns that the token travels in cleartext.
func TestConsoleRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("starts vibe serve")
	}
	_, port, _ := net.SplitHostPort(freeAddr(t))
	_, out := child(t, "serve", "--registry", example+"/registry", "--data", t.TempDir(), "--addr", "0.0.0.0:"+port, "--token", testToken, "--ui-listen", "")
	base := "http://127.0.0.1:" + port
	c := &api.Client{BaseURL: base, Token: testToken}
	waitUntil(t, "vibe serve", time.Minute, func() bool { _, err := c.List(context.Background(), process.ListOptions{Limit: 1}); return err == nil })
	waitUntil(t, "the console's address", 10*time.Second, func() bool { return strings.Contains(out.String(), "vibe: the console is at") })
	if !strings.Contains(out.String(), "vibe: warning: serving off loopback without TLS: the token and the console's session cookie cross the network in cleartext; give --https-cert and --https-key") {
		t.Errorf("no warning of cleartext:\n%s", out)
	}
	for _, path := range []string{"/", "/processes", "/processes?status=waiting", "/processes/schedule-meeting-00000000", "/inbox",
		"/requests", "/requests/vessel-x-00000000", "/events/processes", "/events/inbox", "/nowhere"} {
		for _, method := range []string{"GET", "POST"} {
			req, _ := http.NewRequest(method, base+path, nil)
			req.Host = "vibe.example.com:" + port
			resp, err := http.DefaultTransport.RoundTrip(req)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			resp.Body.Close()
			want := http.StatusUnauthorized
			if method == "GET" && !strings.HasPrefix(path, "/events/") {
				want = http.StatusSeeOther
			}
			if resp.StatusCode != want {
				t.Errorf("%s %s: %d, want %d", method, path, resp.StatusCode, want)
			}
		}
	}
	// With the bearer header the console answers.
	req, _ := http.NewRequest("GET", base+"/processes", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Errorf("with the token: %v %v", resp, err)
	}
}

// TestInboxAnswerTooLarge: an answer past durable.MaxAnswerSize posted
// from the console's inbox form is refused with 413 and the limit, and the
// process keeps waiting; a good answer then completes it.
func TestInboxAnswerTooLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("starts vibe serve")
	}
	addr := freeAddr(t)
	child(t, "serve", "--data", t.TempDir(), "--addr", addr)
	c := &api.Client{BaseURL: "http://" + addr}
	ctx := context.Background()
	waitUntil(t, "vibe serve", time.Minute, func() bool { _, err := c.List(ctx, process.ListOptions{Limit: 1}); return err == nil })
	doc := mustJSON(t, `{"type":"object","properties":{"draft":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]},`+
		`"approve_User":{"type":"object","references":["draft"],"properties":{"note":{"type":"string"}},"required":["note"]}}}`)
	st, err := c.Start(ctx, process.StartOptions{Document: doc, First: mustJSON(t, `{"draft":{"text":"hello"}}`)})
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, c, st.ID, process.Waiting)
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	// The inbox lists from the engine's visibility records, which follow
	// the process's own state by a moment.
	var m [][]byte
	waitUntil(t, "the process on the inbox", 30*time.Second, func() bool {
		resp, err := hc.Get("http://" + addr + "/inbox")
		if err != nil {
			return false
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m = regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindSubmatch(page)
		return m != nil && strings.Contains(string(page), st.ID)
	})
	post := func(note string) (int, string) {
		t.Helper()
		form := url.Values{"csrf": {string(m[1])}, "from": {"inbox"}, "/approve_User/note": {note}}
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/processes/"+st.ID+"/answer", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", "http://"+addr)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if status, body := post(strings.Repeat("x", durable.MaxAnswerSize)); status != http.StatusRequestEntityTooLarge || !strings.Contains(body, "past the limit of 512 KiB on an answer") {
		t.Fatalf("an answer too large: %d\n%.2000s", status, body)
	}
	if info, err := c.Get(ctx, st.ID); err != nil || info.Status != process.Waiting {
		t.Fatalf("after an answer too large: %v %v", info, err)
	}
	if status, body := post("looks good"); status != http.StatusSeeOther {
		t.Fatalf("a good answer: %d\n%.2000s", status, body)
	}
	waitStatus(t, c, st.ID, process.Completed)
}

// TestTemporalUISignIn: on a vibe serve with --token, Temporal's UI takes
// the same sign-in: without the token or a console session its pages and
// its API (which lists every workflow and can terminate them) answer 401;
// with the bearer token, or the session cookie the console's sign-in
// gave, they answer.
func TestTemporalUISignIn(t *testing.T) {
	if testing.Short() {
		t.Skip("starts vibe serve")
	}
	addr, ui := freeAddr(t), freeAddr(t)
	_, out := child(t, "serve", "--registry", example+"/registry", "--data", t.TempDir(), "--addr", addr, "--token", testToken, "--ui-listen", ui)
	base := "http://" + addr
	c := &api.Client{BaseURL: base, Token: testToken}
	waitUntil(t, "vibe serve", time.Minute, func() bool { _, err := c.List(context.Background(), process.ListOptions{Limit: 1}); return err == nil })
	waitUntil(t, "Temporal's UI", time.Minute, func() bool { return strings.Contains(out.String(), "vibe: Temporal's UI is at") })
	get := func(path string, with func(*http.Request)) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://"+ui+path, nil)
		with(req)
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	const workflows = "/api/v1/namespaces/default/workflows"
	for _, path := range []string{"/", workflows} {
		if code, body := get(path, func(*http.Request) {}); code != http.StatusUnauthorized || !strings.Contains(body, base+"/signin") {
			t.Errorf("%s without the token: %d %.200s", path, code, body)
		}
		if code, _ := get(path, func(r *http.Request) { r.Header.Set("Authorization", "Bearer wrong") }); code != http.StatusUnauthorized {
			t.Errorf("%s with a wrong token: %d", path, code)
		}
	}
	if code, body := get(workflows, func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+testToken) }); code != 200 || !strings.HasPrefix(body, "{") {
		t.Errorf("with the token: %d %.200s", code, body)
	}
	// The console's sign-in gives a session cookie, which the browser
	// sends to the UI's port too.
	resp, err := http.DefaultTransport.RoundTrip(func() *http.Request {
		req, _ := http.NewRequest("POST", base+"/signin", strings.NewReader(url.Values{"token": {testToken}, "next": {"/"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		return req
	}())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var session *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == "vibe_session" && ck.Value != "" {
			session = ck
		}
	}
	if session == nil {
		t.Fatalf("the sign-in gave no session: %d %v", resp.StatusCode, resp.Header)
	}
	if code, body := get(workflows, func(r *http.Request) { r.AddCookie(session) }); code != 200 || !strings.HasPrefix(body, "{") {
		t.Errorf("with the console's session: %d %.200s", code, body)
	}
}
