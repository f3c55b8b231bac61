package main

import (
	"context"
	goio "io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/durable"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/registry"
)

// Shell completion (vibe completion bash|zsh|fish|powershell): ids of
// processes and batches come from the vibe serve on --data or
// the data directory's engine, registry URIs from --registry. A completion
// never creates the data directory, and gives up after completeTimeout.

const completeTimeout = 10 * time.Second

// completeContext is the context a completion reads in: cmd's, bounded.
func completeContext(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	return context.WithTimeout(ctx, completeTimeout)
}

// quietIO is a command's stdio for a completion: what it would say to a
// person goes nowhere.
var quietIO = stdio{in: strings.NewReader(""), out: goio.Discard, err: goio.Discard}

// completeProcessIDs completes a command's first argument with the ids of
// the newest processes (of status, when given), each described by its
// process and status.
func completeProcessIDs(ef *engineFlags, status process.Status) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 || ef.noData() {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := completeContext(cmd)
		defer cancel()
		p, done, err := connect(ctx, quietIO, ef, nil, nil)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		defer done()
		page, err := p.List(ctx, process.ListOptions{Status: status, Limit: durable.MaxListLimit})
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		for _, s := range page.Processes {
			if strings.HasPrefix(s.ID, toComplete) {
				out = append(out, cobra.CompletionWithDesc(s.ID, s.Process+", "+string(s.Status)))
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder
	}
}

// completeBatchIDs completes a batch id, newest first.
func completeBatchIDs(ef *engineFlags) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 || ef.noData() {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := completeContext(cmd)
		defer cancel()
		p, done, err := connectEngine(ctx, quietIO, ef)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		defer done()
		list, _, err := (&batch.Client{Processes: p}).List(ctx, process.ListOptions{Limit: durable.MaxListLimit})
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		for _, s := range list {
			if strings.HasPrefix(s.ID, toComplete) {
				out = append(out, cobra.CompletionWithDesc(s.ID, s.Process+", "+string(s.Status)))
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder
	}
}

// completeProcess completes a process to run: the processes of the
// registry --registry names (aug:processes/NAME), and files.
func completeProcess(regDir *string) cobra.CompletionFunc {
	return completeSchema(regDir, "processes")
}

// completeSchema completes a command's one argument, a schema: the
// documents of the registry --registry names under folders, and files.
func completeSchema(regDir *string, folders ...string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return registryURIs(*regDir, toComplete, folders...)
	}
}

// completeProcessURIs completes a flag that names processes of the
// registry (--processes): their URIs, no files.
func completeProcessURIs(regDir *string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		uris, _ := registryURIs(*regDir, toComplete, "processes")
		return uris, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeLLM completes --llm with the kinds of model it takes; the model
// or file is the person's to type.
func completeLLM(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var out []cobra.Completion
	for _, kind := range []string{"openai:", "anthropic:", "replay:"} {
		if strings.HasPrefix(kind, toComplete) {
			out = append(out, kind)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}

// registryURIs are the URIs of the documents under folders of the
// registry in dir that start with toComplete; files too, unless
// toComplete is a URI already.
func registryURIs(dir, toComplete string, folders ...string) ([]cobra.Completion, cobra.ShellCompDirective) {
	directive := cobra.ShellCompDirectiveDefault // and files
	if registry.IsURI(toComplete) {
		directive = cobra.ShellCompDirectiveNoFileComp
	}
	reg, err := openRegistry(dir)
	if err != nil || reg == nil {
		return nil, directive
	}
	var out []cobra.Completion
	for _, folder := range folders {
		for _, name := range reg.Names(folder) {
			if uri := registry.Scheme + ":" + folder + "/" + name; strings.HasPrefix(uri, toComplete) {
				out = append(out, uri)
			}
		}
	}
	return out, directive
}
