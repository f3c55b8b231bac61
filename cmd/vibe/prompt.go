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
		atRunTime, quoted := compose.PipelinePrompt(opts.Pipeline)
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
