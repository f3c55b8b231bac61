package schemaform_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/augceo/vibe/internal/schemaform"
	"github.com/augceo/vibe/jsonv"
)

// TestScriptInBrowser adds and removes an array's rows in a real browser
// (headless Chromium) with Script, posts the form and reads the answer
// back with Parse.
func TestScriptInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("no chromium on PATH: apt-get install -y chromium (.ci/run does)")
	}
	s := parse(t, `{"type":"object","properties":{
		"people":{"type":"array","items":{"type":"object","properties":{"who":{"type":"string"},"age":{"type":"integer"}},"required":["who"]}},
		"note":{"type":"string"}},"required":["people"]}`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/schemaform.js":
			w.Header().Set("Content-Type", "text/javascript")
			io.WriteString(w, schemaform.Script)
		case "/answer":
			r.ParseForm()
			fmt.Fprintf(w, `<!doctype html><pre id="out">%s</pre>`, jsonv.Marshal(schemaform.Parse(s, r.PostForm)))
		default:
			fmt.Fprintf(w, `<!doctype html><form method="post" action="/answer" novalidate>%s<button id="send">Send</button></form><script src="/schemaform.js"></script>`,
				schemaform.Render(s, jsonv.Value{}, nil))
		}
	}))
	defer srv.Close()

	alloc, cancel := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()))
	defer cancel()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, time.Minute)
	defer cancel()

	add := `fieldset[data-path="/people"] > .sf-add`
	err = chromedp.Do(ctx,
		chromedp.Navigate(srv.URL),
		// One row to begin with (the array is required); add two more.
		chromedp.WaitVisible(`input[name="/people/0/who"]`),
		chromedp.Click(add), chromedp.Click(add),
		chromedp.SendKeys(`input[name="/people/0/who"]`, "Ann"),
		chromedp.SendKeys(`input[name="/people/1/who"]`, "Bo"),
		chromedp.SendKeys(`input[name="/people/1/age"]`, "7"),
		chromedp.SendKeys(`input[name="/people/2/who"]`, "Cy"),
		// Remove the first row.
		chromedp.Click(`fieldset[data-path="/people"] li:first-child > .sf-remove`),
		chromedp.Click(`#send`),
		chromedp.WaitVisible(`#out`),
	)
	if err != nil {
		t.Fatal(err)
	}
	out, err := chromedp.Run(ctx, chromedp.Text(`#out`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"people":[{"who":"Bo","age":7},{"who":"Cy"}]}`; out != want {
		t.Errorf("posted %s, want %s", out, want)
	}
}
