package compile

import (
	"math"
	"slices"
	"strings"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

// The sizes a budget assumes where neither the schema nor a recorded
// answer bounds a value.
const (
	// DefaultStringChars is the length assumed of a string with no
	// maxLength, enum or const, and no recorded answer: about 75 words.
	DefaultStringChars = 400
	// DefaultArrayItems is the number of items assumed of an array with no
	// maxItems and no recorded answer.
	DefaultArrayItems = 5
	// BytesPerToken is how many bytes of JSON or English text a token is
	// estimated to hold where no tokenizer counts them: a rule of thumb for
	// common tokenizers, not any provider's count.
	BytesPerToken = 4
)

// Sizes are what recorded answers show of the values a chunk's steps
// take: the longest string and the longest array seen at each path, a
// path being the step's name and its fields below it, "/"-joined, with
// "[]" for an array's items ("step1_plan/result", "step2_find/slots/[]").
// The zero value knows nothing.
type Sizes struct {
	Strings, Arrays map[string]int
}

// Observe records what the answer value v of step shows.
func (z *Sizes) Observe(step string, v jsonv.Value) {
	if z.Strings == nil {
		z.Strings, z.Arrays = map[string]int{}, map[string]int{}
	}
	var walk func(path string, v jsonv.Value)
	walk = func(path string, v jsonv.Value) {
		switch v.Kind() {
		case jsonv.KindString:
			z.Strings[path] = max(z.Strings[path], len(v.Str()))
		case jsonv.KindArray:
			z.Arrays[path] = max(z.Arrays[path], v.Len())
			for _, e := range v.Array() {
				walk(path+"/[]", e)
			}
		case jsonv.KindObject:
			for name, m := range v.Members() {
				walk(path+"/"+name, m)
			}
		}
	}
	walk(step, v)
}

// Sample is a value of schema s of the size a budget assumes (the paths of
// z start at path): every property present; a string of its maxLength,
// else of the longest recorded at its path, else of DefaultStringChars
// (its longest enum or const when it has one); an array of its maxItems,
// the recorded count or DefaultArrayItems; the largest alternative of an
// anyOf or oneOf. estimated says whether some size was assumed rather
// than bounded by the schema. Local references are followed inside root.
// Its content means nothing; its length is what a budget counts.
func Sample(root, s jsonv.Value, path string, z *Sizes) (v jsonv.Value, estimated bool) {
	sm := &sampler{root: root, z: z}
	return sm.sample(s, path, 0), sm.estimated
}

type sampler struct {
	root      jsonv.Value
	z         *Sizes
	estimated bool
}

// recorded is the longest array (arrays) or string recorded at path.
func (sm *sampler) recorded(arrays bool, path string) (int, bool) {
	if sm.z == nil {
		return 0, false
	}
	m := sm.z.Strings
	if arrays {
		m = sm.z.Arrays
	}
	n, ok := m[path]
	return n, ok
}

func (sm *sampler) sample(s jsonv.Value, path string, depth int) jsonv.Value {
	s = deref(sm.root, s)
	if depth > 32 || s.Kind() != jsonv.KindObject {
		return jsonv.NullValue()
	}
	if c, ok := s.Get("const"); ok {
		return c
	}
	if e := s.Lookup("enum").Array(); len(e) > 0 {
		longest := e[0]
		for _, x := range e {
			if len(jsonv.Marshal(x)) > len(jsonv.Marshal(longest)) {
				longest = x
			}
		}
		return longest
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		if alts := s.Lookup(kw).Array(); len(alts) > 0 {
			var best jsonv.Value
			for _, a := range alts {
				if v := sm.sample(a, path, depth+1); best.IsNull() || len(jsonv.Marshal(v)) > len(jsonv.Marshal(best)) {
					best = v
				}
			}
			return best
		}
	}
	types := schema.Strings(s.Lookup("type"))
	if t := s.Lookup("type"); t.Kind() == jsonv.KindString {
		types = []string{t.Str()}
	}
	typ := ""
	for _, t := range types {
		if t != "null" {
			typ = t
			break
		}
	}
	if typ == "" {
		switch {
		case schema.Properties(s) != nil:
			typ = "object"
		case s.Lookup("items").Kind() == jsonv.KindObject:
			typ = "array"
		case len(types) > 0:
			return jsonv.NullValue()
		default:
			typ = "string" // anything at all: assume text
		}
	}
	switch typ {
	case "object":
		out := jsonv.NewObject(schema.Properties(s).Len())
		for name, p := range s.Lookup("properties").Members() {
			out.Set(name, sm.sample(p, path+"/"+name, depth+1))
		}
		return out.Value()
	case "array":
		n, ok := bound(s, "maxItems")
		if !ok {
			if n, ok = sm.recorded(true, path); !ok {
				n = DefaultArrayItems
			}
			sm.estimated = true
		}
		items := make([]jsonv.Value, n)
		for i := range items {
			items[i] = sm.sample(s.Lookup("items"), path+"/[]", depth+1)
		}
		return jsonv.ArrayValue(items...)
	case "string":
		n, ok := bound(s, "maxLength")
		if !ok {
			if n, ok = sm.recorded(false, path); !ok {
				n = DefaultStringChars
			}
			sm.estimated = true
		}
		return jsonv.StringValue(strings.Repeat("x", n))
	case "integer", "number":
		return jsonv.IntValue(12345678)
	case "boolean":
		return jsonv.BoolValue(false)
	}
	return jsonv.NullValue()
}

// bound is s's keyword kw as a count, when it is one.
func bound(s jsonv.Value, kw string) (int, bool) {
	n, ok := s.Lookup(kw).Int()
	if !ok || n < 0 || n > math.MaxInt32 {
		return 0, false
	}
	return int(n), true
}

// Tokens estimates the tokens of b bytes of JSON or text, at BytesPerToken.
func Tokens(b int) int { return (b + BytesPerToken - 1) / BytesPerToken }

// AnswerTokens estimates the tokens of one answer to an LLM chunk: the
// JSON of its SampleAnswer. The count is always an estimate
// (BytesPerToken); estimated says whether some size was assumed, not
// bounded.
func AnswerTokens(chunk jsonv.Value, z *Sizes) (tokens int, estimated bool) {
	v, estimated := sampleAnswer(chunk, z)
	return Tokens(len(jsonv.Marshal(v))), estimated
}

// SampleAnswer is an answer to an LLM chunk (its schema as sent, Program's)
// as large as a budget assumes: a Sample of each step, its sizes from z
// under its name.
func SampleAnswer(chunk jsonv.Value, z *Sizes) jsonv.Value {
	v, _ := sampleAnswer(chunk, z)
	return v
}

func sampleAnswer(chunk jsonv.Value, z *Sizes) (jsonv.Value, bool) {
	estimated := false
	out := jsonv.NewObject(0)
	for name, s := range chunk.Lookup("properties").Members() {
		v, est := Sample(chunk, s, name, z)
		estimated = estimated || est
		out.Set(name, v)
	}
	return out.Value(), estimated
}

// OutputCap is what a model's output limit allows a multiplexed call of
// an LLM chunk: K items answer about K × PerItem tokens, and a longer
// answer is cut off. A batch that chooses its K (calibration, a K the
// caller asks for) keeps to MaxK.
type OutputCap struct {
	// PerItem estimates one item's answer in tokens (AnswerTokens), with
	// its properties' names in the multiplexed answer.
	PerItem int
	// Limit is the model's output limit in tokens; 0 when not known.
	Limit int
}

// MaxK is the most items one call may hold for the answer to fit the
// limit: Limit / PerItem, at least 1 (a single item that does not fit is
// the chunk's problem, not K's: see Fits); 0 when the limit is not known,
// which caps nothing.
func (c OutputCap) MaxK() int {
	if c.Limit <= 0 || c.PerItem <= 0 {
		return 0
	}
	return max(c.Limit/c.PerItem, 1)
}

// Fits says whether an answer for k items fits the limit (or no limit is
// known).
func (c OutputCap) Fits(k int) bool { return c.Limit <= 0 || k*c.PerItem <= c.Limit }

// multiplexKey is the bytes an item's step adds to a multiplexed answer
// beyond its value: its property, "a12":, and a comma.
const multiplexKey = 7

// OutputCap is the output cap of the LLM chunk named chunk of p's
// program, for a model whose output limit is limit tokens (0: unknown):
// one item's answer estimated from the chunk's schema as sent and the
// recorded sizes z.
func (p *Program) OutputCap(chunk string, limit int, z *Sizes) OutputCap {
	for _, ch := range p.Chunks {
		if ch.Name == chunk && ch.Kind == LLM {
			t, _ := AnswerTokens(ch.Schema, z)
			return OutputCap{PerItem: t + Tokens(multiplexKey*len(ch.Steps)), Limit: limit}
		}
	}
	return OutputCap{Limit: limit}
}

// SampleContext is a minimal context of the chunk as large as a budget
// assumes: each of its references' values sampled from the schema of the
// step it names in p (Sample), at its path in the state. estimated says
// whether some size was assumed.
func (p *Program) SampleContext(chunk *ProgramChunk, z *Sizes) (ctx jsonv.Value, estimated bool) {
	out := jsonv.NewObject(len(chunk.References))
	for _, ref := range chunk.References {
		s, path := p.stepSchema(ref)
		v, est := Sample(s, s, path, z)
		estimated = estimated || est
		jsonv.SetAll(out.Value(), ref.Pointer(), v)
	}
	return out.Value(), estimated
}

// stepSchema is the schema of the value at a state path, from the step
// whose state holds it (its schema in the compiled document), and the
// path as Sizes names it: the step's name and the fields below it. A path
// no step holds has an empty schema: any value, sampled as text.
func (p *Program) stepSchema(ref Path) (jsonv.Value, string) {
	defs := p.Document.Lookup("$defs")
	for _, ch := range p.Chunks {
		for _, st := range ch.Steps {
			if len(ref) < len(st.State) || !slices.Equal(ref[:len(st.State)], st.State) {
				continue
			}
			root := defs.Lookup(ch.Name).Lookup("properties").Lookup(st.Name)
			s, path := root, st.Name
			for _, f := range ref[len(st.State):] {
				s = deref(root, s).Lookup("properties").Lookup(f)
				path += "/" + f
			}
			return s, path
		}
	}
	return jsonv.NewObject(0).Value(), ref.String()
}
