package console

import (
	"errors"
	"net/http"
	"strings"

	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/process"
)

// startForm is the page that starts a process: which (a registry URI),
// the person's request and the input, as posted when a start was refused.
type startForm struct {
	Process, Prompt, Input string
	// Processes are the registry's processes, offered in the form.
	Processes []string
	// Problem says why the start was refused.
	Problem string
}

func (startForm) title() string { return "Start a process" }

// startPage shows the start form, the process filled in from ?process=.
func (c *console) startPage(r *http.Request) (any, error) {
	return startForm{Process: r.URL.Query().Get("process"), Processes: c.processNames()}, nil
}

// processNames are the registry's processes, as URIs.
func (c *console) processNames() []string {
	if c.opts.Registry == nil {
		return nil
	}
	var out []string
	for _, name := range c.opts.Registry.Names("processes") {
		out = append(out, "aug:processes/"+name)
	}
	return out
}

// postForm reads a form post and checks it is the console's own (the
// same rules as the answer form's: its origin, and the CSRF token bound
// to the session); false when it answered already.
func (c *console) postForm(w http.ResponseWriter, r *http.Request, limit int64) bool {
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	if err := r.ParseForm(); err != nil {
		c.fail(w, r, &pageError{status: http.StatusBadRequest, msg: "the form could not be read: " + err.Error()})
		return false
	}
	if why := c.auth.checkPost(r); why != "" {
		c.fail(w, r, &pageError{status: http.StatusForbidden, msg: "refused: " + why})
		return false
	}
	return true
}

// start starts the process the form names, with its request and input;
// the browser goes to its page. A start refused (a process that does not
// compile, an input that is no JSON) shows the form again with why.
func (c *console) start(w http.ResponseWriter, r *http.Request) {
	if !c.postForm(w, r, durable.MaxPayloadSize) {
		return
	}
	form := startForm{Process: strings.TrimSpace(r.PostFormValue("process")), Prompt: r.PostFormValue("prompt"),
		Input: strings.TrimSpace(r.PostFormValue("input")), Processes: c.processNames()}
	refuse := func(status int, problem string) {
		form.Problem = problem
		c.render(w, r, status, "start", form)
	}
	if form.Process == "" {
		refuse(http.StatusUnprocessableEntity, "Name the process to start: a registry URI, such as aug:processes/schedule-meeting.")
		return
	}
	opts := process.StartOptions{Process: form.Process, Prompt: form.Prompt}
	if form.Input != "" {
		v, err := jsonv.Parse([]byte(form.Input))
		if err != nil {
			refuse(http.StatusUnprocessableEntity, "The input is not JSON: "+err.Error())
			return
		}
		opts.Input = v
	}
	started, err := c.starter.Start(r.Context(), opts)
	if err != nil {
		status := http.StatusUnprocessableEntity
		var tooLarge *durable.TooLargeError
		if errors.As(err, &tooLarge) {
			status = http.StatusRequestEntityTooLarge
		}
		refuse(status, "Not started: "+err.Error())
		return
	}
	http.Redirect(w, r, "/processes/"+pathEscape(started.ID), http.StatusSeeOther)
}

// cancel cancels a process; the browser goes back to its page, which
// shows it failed ("the workflow was canceled") once the engine has it.
func (c *console) cancel(w http.ResponseWriter, r *http.Request) {
	if !c.postForm(w, r, 64<<10) {
		return
	}
	id := r.PathValue("id")
	if err := c.canceler.Cancel(r.Context(), id); err != nil {
		c.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/processes/"+pathEscape(id), http.StatusSeeOther)
}

// retry starts a process again with the input it started with; the
// browser goes to the new process's page.
func (c *console) retry(w http.ResponseWriter, r *http.Request) {
	if !c.postForm(w, r, 64<<10) {
		return
	}
	started, err := c.retrier.Retry(r.Context(), r.PathValue("id"))
	if err != nil {
		c.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/processes/"+pathEscape(started.ID), http.StatusSeeOther)
}
