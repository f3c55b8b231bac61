package console

import (
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/registry"
)

// serve serves a test console until the test ends; its event streams end
// first, and the browser (inBrowser, called after) leaves before the
// server closes.
func serve(t *testing.T, opts Options) *httptest.Server {
	stop := make(chan struct{})
	opts.Stop = stop
	srv := httptest.NewServer(newTestConsole(t, opts))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(stop) })
	return srv
}

// inBrowser is headless Chromium at width×height on the console at
// srv, with shoot writing a screenshot to $VIBE_SCREENSHOTS (or a
// temporary directory); the test is skipped without Chromium.
func inBrowser(t *testing.T, width, height int) (ctx context.Context, shoot func(name string)) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a browser")
	}
	chromium := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			chromium = p
			break
		}
	}
	if chromium == "" {
		t.Skip("no chromium on PATH: apt-get install -y chromium (.ci/run does)")
	}
	shots := os.Getenv("VIBE_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	alloc, cancel := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.WindowSize(width, height), chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true))
	t.Cleanup(cancel)
	ctx, cancel = chromedp.NewContext(alloc)
	t.Cleanup(cancel)
	ctx, cancel = context.WithTimeout(ctx, time.Minute)
	t.Cleanup(cancel)
	return ctx, func(name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(shots, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot %s", filepath.Join(shots, name))
	}
}

// TestProgressAt80Columns: at 640 px wide — a terminal's 80 columns —
// every batch's progress bar is on the screen and wide enough to read,
// in the list and on a batch's page; the list scrolls sideways inside
// the window rather than pushing the page wider.
func TestProgressAt80Columns(t *testing.T) {
	srv := serve(t, Options{Processes: meetingFixture(t), Batches: fakeBatchesFixture()})
	ctx, shoot := inBrowser(t, 640, 900)
	// The bars' boxes: [left, right, width] each, and the window's width.
	const bars = `[...document.querySelectorAll('progress')].map(p => { const r = p.getBoundingClientRect(); return [r.left, r.right, r.width]; })`
	for _, path := range []string{"/batches", "/batches/batch-2"} {
		if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+path), chromedp.WaitReady(`progress`)); err != nil {
			t.Fatal(err)
		}
		boxes, err := chromedp.Run(ctx, chromedp.Evaluate[[][3]float64](bars))
		if err != nil {
			t.Fatal(err)
		}
		inner, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`window.innerWidth`))
		if err != nil {
			t.Fatal(err)
		}
		page, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`document.documentElement.scrollWidth`))
		if err != nil {
			t.Fatal(err)
		}
		if len(boxes) == 0 {
			t.Fatalf("%s: no progress bar", path)
		}
		for _, b := range boxes {
			if b[0] < 0 || b[1] > inner || b[2] < 50 {
				t.Errorf("%s: a progress bar at %.0f–%.0f px (%.0f wide) in a window %.0f wide", path, b[0], b[1], b[2], inner)
			}
		}
		if page > inner+1 {
			t.Errorf("%s: the page is %.0f px wide in a window of %.0f", path, page, inner)
		}
		if path == "/batches" {
			shoot("batches-80-columns.png")
		}
	}
}

// TestControlsInBrowser starts a process from the start form, cancels it
// and retries it, by clicking as a person would; and writes screenshots
// of the changed pages: the list with its filters, times and totals, a
// process's durations and who answered, the start form.
func TestControlsInBrowser(t *testing.T) {
	f := meetingFixture(t)
	reg, err := registry.Open("../examples/schedule-meeting/registry")
	if err != nil {
		t.Fatal(err)
	}
	prices := &llm.Prices{Currency: "USD", Models: map[string]llm.Price{"test-model": {Input: 2.5, Output: 10}}}
	srv := serve(t, Options{Processes: f, Registry: reg, Prices: prices, Batches: fakeBatchesFixture()})
	ctx, shoot := inBrowser(t, 1280, 960)
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(sel))
		if err != nil {
			t.Fatalf("%s: %v", sel, err)
		}
		return s
	}

	// The list, filtered to completed processes since a day.
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/processes"), chromedp.WaitVisible(`#live table`)); err != nil {
		t.Fatal(err)
	}
	if got := text(`#live .totals`); !strings.Contains(got, "920 tokens") || !strings.Contains(got, "USD") {
		t.Errorf("the totals: %q", got)
	}
	shoot("processes-times-totals.png")
	if err := chromedp.Do(ctx, chromedp.SetValue(`select[name=status]`, "completed"), chromedp.SetValue(`input[name=from]`, "2026-11-22"),
		chromedp.Click(`form.filters button[type=submit]`), chromedp.WaitVisible(`form.filters a[href="/processes"]`)); err != nil {
		t.Fatal(err)
	}
	if loc, _ := chromedp.Run(ctx, chromedp.Location()); !strings.Contains(loc, "status=completed") || !strings.Contains(loc, "from=2026-11-22") {
		t.Errorf("the filter's URL: %s", loc)
	}
	if got := text(`#live tbody`); !strings.Contains(got, "schedule-meeting-0000bbbb") || strings.Contains(got, "0000aaaa") || strings.Contains(got, "billing") {
		t.Errorf("completed since 2026-11-22: %q", got)
	}

	// A completed process: how long each chunk and action took, who
	// answered and when.
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/processes/schedule-meeting-0000bbbb"), chromedp.WaitVisible(`#chunk-4 p.answered`)); err != nil {
		t.Fatal(err)
	}
	if got := text(`#chunk-4 p.answered`); got != "Answered by Ada (console session 5eed1234) at 2026-11-23 10:35:10 UTC." {
		t.Errorf("the answer's audit: %q", got)
	}
	if err := chromedp.Do(ctx, chromedp.ScrollIntoView(`#chunk-4`)); err != nil {
		t.Fatal(err)
	}
	shoot("process-durations.png")

	// Start one: the form offers the registry's processes.
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/start"), chromedp.WaitVisible(`input[name=process]`),
		chromedp.SendKeys(`input[name=process]`, "aug:processes/schedule-meeting"),
		chromedp.SendKeys(`textarea[name=prompt]`, "Meet Carol on Friday"),
		chromedp.SendKeys(`textarea[name=input]`, `{"room":"B"}`)); err != nil {
		t.Fatal(err)
	}
	shoot("start.png")
	if err := chromedp.Do(ctx, chromedp.Click(`.start-form button[type=submit]`), chromedp.WaitVisible(`.controls button.danger`)); err != nil {
		t.Fatal(err)
	}
	if len(f.started) != 1 {
		t.Fatalf("started %v", f.started)
	}
	id := f.started[0]
	if loc, _ := chromedp.Run(ctx, chromedp.Location()); loc != srv.URL+"/processes/"+id {
		t.Errorf("after the start the browser is at %s", loc)
	}
	// Cancel it, then retry it: a new process, with the same input.
	if err := chromedp.Do(ctx, chromedp.Click(`.controls button.danger`), chromedp.WaitVisible(`h1 .badge.failed`),
		chromedp.WaitVisible(`form[action$="/retry"] button`)); err != nil {
		t.Fatal(err)
	}
	if got := text(`.failure pre.error`); got != "the workflow was canceled" {
		t.Errorf("after the cancel: %q", got)
	}
	if err := chromedp.Do(ctx, chromedp.Click(`form[action$="/retry"] button`), chromedp.WaitVisible(`.controls button.danger`)); err != nil {
		t.Fatal(err)
	}
	if len(f.started) != 2 || len(f.canceled) != 1 {
		t.Fatalf("started %v, cancelled %v", f.started, f.canceled)
	}
	if loc, _ := chromedp.Run(ctx, chromedp.Location()); loc != srv.URL+"/processes/"+f.started[1] {
		t.Errorf("after the retry the browser is at %s", loc)
	}
	if got := text(`section.state pre`); !strings.Contains(got, `"room": "B"`) {
		t.Errorf("the retry's state: %q", got)
	}

	// Or a pipeline of the registry's instructions, named.
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/start"), chromedp.WaitVisible(`input[name=pipeline]`),
		chromedp.SendKeys(`input[name=pipeline]`, "prompt | identifyParticipants"),
		chromedp.SendKeys(`input[name=name]`, "who meets"),
		chromedp.SendKeys(`textarea[name=prompt]`, "Meet Carol on Friday")); err != nil {
		t.Fatal(err)
	}
	shoot("start-pipeline.png")
	if err := chromedp.Do(ctx, chromedp.Click(`.start-form button[type=submit]`), chromedp.WaitVisible(`.controls button.danger`)); err != nil {
		t.Fatal(err)
	}
	if len(f.pipelines) != 1 || f.pipelines[0].Pipeline != "prompt | identifyParticipants" || f.pipelines[0].Name != "who meets" {
		t.Fatalf("started %+v", f.pipelines)
	}
	if got := text(`h1`); !strings.Contains(got, "who meets") {
		t.Errorf("the pipeline's page: %q", got)
	}
}
