package vessel

import (
	"fmt"
	"strings"

	"github.com/augceo/vibe/jsonv"
)

// RefPrefix starts a parameter that reads state: "†state.a.b".
const RefPrefix = "†state"

// ParsePath reads a state path — "state", "state.a.b", or the same with a
// leading "†" — into its members ([] for the whole state).
func ParsePath(s string) ([]string, error) {
	t := strings.TrimPrefix(s, "†")
	if t != "state" && !strings.HasPrefix(t, "state.") {
		return nil, fmt.Errorf("%q is not a state path: write \"state\" or \"state.a.b\"", s)
	}
	if t == "state" {
		return []string{}, nil
	}
	parts := strings.Split(t[len("state."):], ".")
	for _, p := range parts {
		if p == "" {
			return nil, fmt.Errorf("state path %q has an empty part", s)
		}
	}
	return parts, nil
}

// IsRef reports whether a parameter value reads state.
func IsRef(v jsonv.Value) bool {
	return v.Kind() == jsonv.KindString && (v.Str() == RefPrefix || strings.HasPrefix(v.Str(), RefPrefix+"."))
}

// ReadState returns the value at a state path.
func ReadState(state jsonv.Value, path []string) (jsonv.Value, error) {
	v, err := state.At(jsonv.PointerTo(path...))
	if err != nil {
		return jsonv.Value{}, fmt.Errorf("state.%s: no such value", strings.Join(path, "."))
	}
	return v, nil
}

// ResolveRefs returns params with every top-level "†state…" value replaced
// by that value of state. A path state does not have is an error naming
// the parameter and the path.
func ResolveRefs(params, state jsonv.Value) (jsonv.Value, error) {
	out := jsonv.NewObject(params.Len())
	for name, v := range params.Members() {
		if IsRef(v) {
			path, err := ParsePath(v.Str())
			if err != nil {
				return jsonv.Value{}, fmt.Errorf("parameter %s: %w", name, err)
			}
			got, err := ReadState(state, path)
			if err != nil {
				return jsonv.Value{}, fmt.Errorf("parameter %s reads %s: %w", name, v.Str(), err)
			}
			v = got.Clone()
		}
		out.Set(name, v)
	}
	return out.Value(), nil
}

// Write returns state with v written at path, as a JSON Merge Patch
// folded into the state. Writing under a value that is not an object is an
// error naming the path.
func Write(state jsonv.Value, path []string, v jsonv.Value) (jsonv.Value, error) {
	cur := state
	for i, p := range path[:max(0, len(path)-1)] {
		next, ok := cur.Get(p)
		if !ok {
			break
		}
		if next.Object() == nil {
			return jsonv.Value{}, fmt.Errorf("cannot write state.%s: state.%s is %s, not an object", strings.Join(path, "."), strings.Join(path[:i+1], "."), next.Kind())
		}
		cur = next
	}
	patch := nest(path, v)
	if patch.Object() == nil {
		return jsonv.Value{}, fmt.Errorf("cannot write %s over the whole state: give an _outputPath such as state.result", v.Kind())
	}
	return MergePatch(state, patch)
}

// MergePatch folds an RFC 7396 merge patch into doc and returns the
// result; doc is not changed. A null in the patch removes a member, an
// object merges member by member, anything else replaces.
//
// Unlike github.com/evanphx/json-patch/v5, which ranges over a Go map and so
// appends new members in random order, it keeps member order: doc's
// members stay where they are and new ones follow in the patch's order.
// The tests check every result against evanphx's MergePatch.
func MergePatch(doc, patch jsonv.Value) (jsonv.Value, error) {
	return mergePatch(doc, patch), nil
}

func mergePatch(doc, patch jsonv.Value) jsonv.Value {
	po := patch.Object()
	if po == nil {
		return patch
	}
	out := jsonv.NewObject(doc.Len() + po.Len())
	if do := doc.Object(); do != nil {
		for _, m := range do.Members() {
			out.Set(m.Name, m.Value)
		}
	}
	for _, m := range po.Members() {
		if m.Value.IsNull() {
			out.Delete(m.Name)
			continue
		}
		cur, _ := out.Get(m.Name)
		out.Set(m.Name, mergePatch(cur, m.Value))
	}
	return out.Value()
}

// nest is v inside objects, one per name of path: nest([a b], v) is
// {"a": {"b": v}}.
func nest(path []string, v jsonv.Value) jsonv.Value {
	for i := len(path) - 1; i >= 0; i-- {
		v = jsonv.ObjectValue(jsonv.Member{Name: path[i], Value: v})
	}
	return v
}
