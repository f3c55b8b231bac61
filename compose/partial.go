package compose

import (
	"context"

	"github.com/augceo/vibe/jsonv"
)

// FlattenPartial is Flatten for a caller that reports every problem of a
// document at once: with problems it returns, beside them, the document as
// far as it could be composed — each "$ref" that names nothing, or closes
// a cycle, left as the empty schema {} — so that what else is wrong with
// the rest can be found in the same run. The value is null when there is
// nothing to go on: doc is no object, or ctx ended. Options.Sources, when
// set, receives where the parts composed come from, as Flatten gives them.
func FlattenPartial(ctx context.Context, file string, doc jsonv.Value, opts Options) (jsonv.Value, error) {
	if doc.Object() == nil {
		return Flatten(ctx, file, doc, opts)
	}
	f := newFlattener(ctx, opts)
	out := f.flatten(&base{file: file, root: doc}, "", "", doc)
	if f.stopped {
		return jsonv.Value{}, f.err(file)
	}
	f.report(opts)
	return out, f.errs.Err()
}
