package console

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/augceo/vibe/compose"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/process"
)

// startForm is the page that starts a process: which — a registry URI,
// or a pipeline of the registry's instructions — its name, the person's
// request and the input, as posted when a start was refused.
type startForm struct {
	Process, Pipeline, Name, Prompt, Input string
	// Processes and Instructions are the registry's, offered in the form;
	// the examples in its empty fields are made of them.
	Processes, Instructions []string
	// Problem says why the start was refused.
	Problem string
}

func (startForm) title() string { return "Start a process" }

// ProcessExample is a process URI to show in the empty field: the
// registry's first.
func (f startForm) ProcessExample() string {
	if len(f.Processes) > 0 {
		return f.Processes[0]
	}
	return "aug:processes/NAME"
}

// PipelineExample is a pipeline to show in the empty field: the person's
// request through the registry's first two instructions.
func (f startForm) PipelineExample() string {
	names := f.Instructions[:min(2, len(f.Instructions))]
	if len(names) == 0 {
		names = []string{"FirstInstruction", "SecondInstruction"}
	}
	return "prompt | " + strings.Join(names, " | ")
}

// maxListed bounds the instructions the form names.
const maxListed = 20

// InstructionList names the registry's instructions, the first maxListed
// of them.
func (f startForm) InstructionList() string {
	if len(f.Instructions) <= maxListed {
		return strings.Join(f.Instructions, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(f.Instructions[:maxListed], ", "), len(f.Instructions)-maxListed)
}

// startPage shows the start form, the process filled in from ?process=.
func (c *console) startPage(r *http.Request) (any, error) {
	f := c.newStartForm()
	f.Process = r.URL.Query().Get("process")
	return f, nil
}

// newStartForm is an empty start form, with the registry's processes and
// instructions.
func (c *console) newStartForm() startForm {
	var f startForm
	if c.opts.Registry == nil {
		return f
	}
	for _, name := range c.opts.Registry.Names("processes") {
		f.Processes = append(f.Processes, "aug:processes/"+name)
	}
	f.Instructions = c.opts.Registry.Names(compose.InstructionsFolder)
	return f
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
	form := c.newStartForm()
	form.Process, form.Pipeline, form.Name = strings.TrimSpace(r.PostFormValue("process")), strings.TrimSpace(r.PostFormValue("pipeline")), strings.TrimSpace(r.PostFormValue("name"))
	form.Prompt, form.Input = r.PostFormValue("prompt"), strings.TrimSpace(r.PostFormValue("input"))
	refuse := func(status int, problem string) {
		form.Problem = problem
		c.render(w, r, status, "start", form)
	}
	switch {
	case form.Process == "" && form.Pipeline == "":
		refuse(http.StatusUnprocessableEntity, "Name the process to start — a registry URI, such as "+form.ProcessExample()+
			" — or write a pipeline of the registry's instructions, such as "+form.PipelineExample()+".")
		return
	case form.Process != "" && form.Pipeline != "":
		refuse(http.StatusUnprocessableEntity, "Give a process or a pipeline to start, not both.")
		return
	}
	if atRunTime, _ := compose.PipelinePrompt(form.Pipeline); atRunTime && strings.TrimSpace(form.Prompt) == "" {
		refuse(http.StatusUnprocessableEntity, "The pipeline begins with prompt, the person's request: write it under Request.")
		return
	}
	opts := process.StartOptions{Process: form.Process, Pipeline: form.Pipeline, Name: form.Name, Prompt: form.Prompt}
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
