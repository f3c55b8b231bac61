package compose

import (
	"context"
	"fmt"
	"path"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/schema"
)

// Tool is one instruction of a toolset.
type Tool struct {
	// Name is the tool's name: the last part of its URI's path
	// (aug:instructions/identifyParticipants is "identifyParticipants").
	Name string
	// URI is the registry URI the tool was given as.
	URI string
	// Schema is the instruction, flattened.
	Schema jsonv.Value
}

// Toolset is implicit composition: the instructions uris name, each
// flattened, presented side by side and not merged — they influence each
// other only through the context they share. Two tools of one name are an
// error. Every problem of every tool is reported.
//
// When ctx ends first, the error wraps its cause.
func Toolset(ctx context.Context, uris []string, opts Options) ([]Tool, error) {
	var errs schema.ErrorList
	tools := make([]Tool, 0, len(uris))
	seen := make(map[string]string)
	for _, uri := range uris {
		t, err := tool(ctx, uri, opts)
		if ctx.Err() != nil {
			return nil, ended(ctx, uri)
		}
		if err != nil {
			errs.Append(uri, err)
			continue
		}
		if other, dup := seen[t.Name]; dup {
			errs.Add(uri, "", "tool name %q is taken by %s: two tools of a toolset need different names", t.Name, other)
			continue
		}
		seen[t.Name] = uri
		tools = append(tools, t)
	}
	return tools, errs.Err()
}

func tool(ctx context.Context, uri string, opts Options) (Tool, error) {
	if opts.Registry == nil {
		return Tool{}, fmt.Errorf("cannot resolve %s: %w", uri, registry.ErrNoRegistry)
	}
	u, err := registry.ParseURI(uri)
	if err != nil {
		return Tool{}, err
	}
	name := path.Base(u.Path)
	if u.Fragment != "" && u.Fragment[0] != '/' {
		name = u.Fragment
	}
	if err := schema.CheckName(name); err != nil {
		return Tool{}, fmt.Errorf("tool name %q %w: a tool's name must read as it is written", name, err)
	}
	flat, err := FlattenURI(ctx, uri, opts)
	if err != nil {
		return Tool{}, err
	}
	return Tool{Name: name, URI: uri, Schema: flat}, nil
}
