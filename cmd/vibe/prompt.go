package main

import (
	"errors"
	"fmt"

	"github.com/augceo/vibe/compose"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/registry"
)

// errNoPrompt is the error of a pipeline that begins with the bare name
// prompt, started without one.
var errNoPrompt = errors.New("the pipeline begins with prompt, the person's request: give it with --prompt TEXT")

// checkPrompt looks at a start without --prompt before anything runs. A
// pipeline that takes its request at run time (it begins with the bare
// name prompt) is refused; a process that would start with an empty
// request — no --input either, and no prompt of its own: a pipeline's
// quoted head, a schema's "prompt" — is started, with a warning.
func checkPrompt(io stdio, opts process.StartOptions, reg *registry.Registry) error {
	if opts.Prompt != "" {
		return nil
	}
	if opts.Pipeline != "" {
		atRunTime, quoted := pipelinePrompt(opts.Pipeline)
		if atRunTime {
			return usageError{errNoPrompt}
		}
		if quoted {
			return nil
		}
	}
	if !opts.Input.IsNull() || hasPrompt(opts.Document) || hasPrompt(registryDocument(reg, opts.Process)) {
		return nil
	}
	fmt.Fprintln(io.err, "vibe: no --prompt: the process starts with an empty request (give --prompt TEXT, or --input J)")
	return nil
}

// pipelinePrompt says whether a pipeline expression takes its request at
// run time (the bare name prompt) and whether it holds one (a quoted
// text). An expression that does not parse holds neither: its start says
// what is wrong.
func pipelinePrompt(expr string) (atRunTime, quoted bool) {
	e, err := compose.ParsePipeline(expr)
	if err != nil {
		return false, false
	}
	var walk func(e compose.Expr)
	walk = func(e compose.Expr) {
		switch e := e.(type) {
		case *compose.Prompt:
			atRunTime, quoted = atRunTime || e.Text == "", quoted || e.Text != ""
		case *compose.Call:
			for _, a := range e.Args {
				walk(a.Value)
			}
		case *compose.Program:
			// A *Ref stands for a binding, walked here.
			for _, b := range e.Bindings {
				walk(b.Value)
			}
			if e.Final != nil {
				walk(e.Final)
			}
		}
	}
	walk(e)
	return atRunTime, quoted
}

// hasPrompt reports whether a process schema carries its own prompt.
func hasPrompt(doc jsonv.Value) bool {
	return doc.Lookup("prompt").Kind() == jsonv.KindString && doc.Lookup("prompt").Str() != ""
}

// registryDocument is the document a process URI names in reg (its
// fragment left out), or null when there is none to read.
func registryDocument(reg *registry.Registry, uri string) jsonv.Value {
	if reg == nil || uri == "" {
		return jsonv.Value{}
	}
	u, err := registry.ParseURI(uri)
	if err != nil {
		return jsonv.Value{}
	}
	u.Fragment = ""
	d, err := reg.Document(u.String())
	if err != nil {
		return jsonv.Value{}
	}
	return d.Value
}
