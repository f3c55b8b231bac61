package compile

import (
	"context"
	"errors"
	"strings"

	"github.com/augceo/vibe/compose"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

// compileAll is compile that reports the problems of composing and of
// compiling in one run: when the document's own "$ref"s fail, the rest of
// it is compiled as far as it was composed (compose.FlattenPartial), and
// the compiler's problems come after the composer's — but for those inside
// a top-level member whose composing failed, which would only follow from
// that failure. A composing problem elsewhere (in another file, or outside
// the top-level members) leaves no part of the document known to be sound,
// and is reported alone, as before.
func compileAll(ctx context.Context, file string, doc jsonv.Value, opts Options) (*Process, error) {
	p, err := compile(ctx, file, doc, opts, nil)
	if err == nil {
		return p, nil
	}
	// Composed again, on this failing path only, to tell the composer's
	// problems from the compiler's and to go on past the first.
	var sources compose.Sources
	copts := opts.composeOptions()
	copts.Sources = &sources
	partial, perr := compose.FlattenPartial(ctx, file, doc, copts)
	var composing schema.ErrorList
	if perr == nil || partial.IsNull() || !errors.As(perr, &composing) {
		return nil, err
	}
	spoiled := map[string]bool{} // the top-level members whose composing failed
	for _, e := range composing {
		m, ok := topMember(e.Path)
		if e.File != file || !ok {
			return nil, err
		}
		spoiled[m] = true
	}
	// The partial document is compiled as composed (its problems at their
	// places in it), the spoiled members' left out, then the rest located
	// in the files they come from.
	_, cerr := compile(ctx, file, partial, opts, nil)
	var compiling schema.ErrorList
	if !errors.As(cerr, &compiling) {
		return nil, err // it stopped, or compiled: the composer's problems stand alone
	}
	var rest schema.ErrorList
	for _, e := range compiling {
		if m, ok := topMember(e.Path); e.File == file && ok && spoiled[m] {
			continue
		}
		rest = append(rest, e)
	}
	all := composing
	if len(rest) > 0 {
		var located schema.ErrorList
		if !errors.As(sources.LocateAll(partial, rest), &located) {
			located = rest
		}
		all = append(all, located...)
	}
	return nil, all
}

// topMember is the top-level member ("/properties/NAME") a path lies in.
func topMember(p jsonv.Pointer) (string, bool) {
	rest, ok := strings.CutPrefix(string(p), "/properties/")
	if !ok {
		return "", false
	}
	name, _, _ := strings.Cut(rest, "/")
	return name, name != ""
}
