package compile

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

// MultiplexOptions configures Multiplex.
type MultiplexOptions struct {
	// Inline copies each step's schema into every item's property instead
	// of sharing it through "$defs" and "$ref", for providers that cannot
	// take references. Sharing is the default: prompt tokens are money.
	Inline bool
}

// StepPrefix is the short name of the step at index k (0-based) of a
// multiplexed chunk: "a", "b", …, "z", "aa", "ab", …. An item's property
// is the prefix and the item's number (ItemKey), so what a model reads and
// writes once per item and step is a few characters, not the step's name;
// the prompt says once which prefix is which step (llm.BatchTask.Steps).
func StepPrefix(k int) string {
	const letters = "abcdefghijklmnopqrstuvwxyz"
	if k < len(letters) {
		return letters[k : k+1]
	}
	var b []byte
	for k++; k > 0; k = (k - 1) / 26 {
		b = append(b, byte('a'+(k-1)%26))
	}
	slices.Reverse(b)
	return string(b)
}

// ItemKey is the property of the step at index k (0-based) for item i
// (1-based) in a multiplexed schema: StepPrefix(k) followed by i, as "a1",
// "b12". Letters then digits: no key is another's prefix-and-number.
func ItemKey(k, i int) string { return StepPrefix(k) + strconv.Itoa(i) }

// Multiplex compiles an LLM chunk schema of M steps (its properties) run over
// n items into one flat object of n×M properties in step-major order — a1,
// a2, …, an, b1, … (ItemKey) — with no nested arrays, every property
// required. The step schemas go once into "$defs", each under its step's
// prefix (StepPrefix: "a" for the first step), and every property refers
// to its step's; the chunk's own "$defs" (a shared chunk's: ForModel) go
// there too, renamed where a prefix has their name, with every reference
// rewritten, and what repeats among them all is shared once (Share).
// With opts.Inline every step's schema is copied whole into each of its
// properties, the chunk's references replaced by what they name. Each
// step's part of an item carries the item's tag (Tagged), which
// Demultiplex checks. Give it a projected chunk (Project) to get what a
// model is sent.
func Multiplex(chunk jsonv.Value, n int, opts MultiplexOptions) (jsonv.Value, error) {
	if opts.Inline {
		chunk = Inline(chunk)
	}
	cd := newDefs(chunk)
	steps := schema.Properties(cd.body)
	if steps.Len() == 0 {
		return jsonv.Value{}, fmt.Errorf("multiplex: the chunk has no steps")
	}
	if n < 1 {
		return jsonv.Value{}, fmt.Errorf("multiplex: %d items; need at least 1", n)
	}
	cd.clearOf(steps.Len())
	steps = schema.Properties(cd.body)
	if !opts.Inline {
		// The step definitions go first, then the chunk's own; what
		// repeats among them is shared, and a step whose definition
		// became another's refers to that one.
		d := &defs{body: jsonv.NewObject(0).Value(), defs: map[string]jsonv.Value{}}
		for k, s := range steps.Members() {
			d.names = append(d.names, StepPrefix(k))
			d.defs[StepPrefix(k)] = tagFirst(k, s.Value)
		}
		for _, name := range cd.names {
			d.names = append(d.names, name)
			d.defs[name] = cd.defs[name]
		}
		cd = d
		for range maxShares {
			if !cd.shareBest() {
				break
			}
		}
	}
	alias := cd.collapse()
	out := jsonv.NewObject(6)
	for _, kw := range []string{"title", "description"} {
		if v, ok := chunk.Get(kw); ok {
			out.Set(kw, v)
		}
	}
	out.Set("type", jsonv.StringValue("object"))
	props := jsonv.NewObject(n * steps.Len())
	names := make([]string, 0, n*steps.Len())
	for k, s := range steps.Members() {
		v := tagFirst(k, s.Value)
		if !opts.Inline {
			def := StepPrefix(k)
			if to, ok := alias[def]; ok {
				def = to
			}
			v = jsonv.ObjectValue(jsonv.Member{Name: "$ref", Value: jsonv.StringValue(refTo(def))})
		}
		for i := 1; i <= n; i++ {
			props.Set(ItemKey(k, i), v)
			names = append(names, ItemKey(k, i))
		}
	}
	out.Set("properties", props.Value())
	out.Set("required", schema.StringArray(names))
	out.Set("additionalProperties", jsonv.BoolValue(false))
	if opts.Inline {
		return out.Value(), nil
	}
	defs := jsonv.NewObject(len(cd.names))
	for _, name := range cd.names {
		defs.Set(name, cd.defs[name])
	}
	out.Set("$defs", defs.Value())
	return out.Value(), nil
}

// clearOf renames the definitions that have the name of one of the first
// m step prefixes ("a", "b", …), which a multiplexed schema's steps take,
// rewriting every reference to them.
func (d *defs) clearOf(m int) {
	taken := map[string]bool{}
	for k := range m {
		taken[StepPrefix(k)] = true
	}
	rename := map[string]string{}
	for i, name := range d.names {
		if !taken[name] {
			continue
		}
		to := name
		for j := 2; taken[to] || d.defs[to].Kind() != jsonv.KindNull; j++ {
			to = name + "_" + strconv.Itoa(j)
		}
		rename[name] = to
		d.defs[to] = d.defs[name]
		delete(d.defs, name)
		d.names[i] = to
	}
	if len(rename) > 0 {
		d.rewriteRefs(func(n string) string {
			if to, ok := rename[n]; ok {
				return to
			}
			return n
		})
	}
}

// TagKey is the property by which each step's part of an item in a
// multiplexed answer echoes the item's tag (ItemTags): a part under the
// wrong item's key — a model that swapped two items — is caught by it,
// not written to another item's line. It starts with "_": a model reads it
// as bookkeeping, not as part of the step's answer.
const TagKey = "_item"

// Tagged is step, an object schema, with TagKey as its first property, a
// required string: the same schema for every item, so that a call's
// schema depends only on its size; the prompt gives each item's tag
// (ItemTags). A step that is no object schema is returned as it is.
func Tagged(step jsonv.Value) jsonv.Value {
	props := schema.Properties(step)
	if props == nil || step.Object() == nil {
		return step
	}
	if _, ok := props.Get(TagKey); ok {
		return step
	}
	tag := jsonv.ObjectValue(jsonv.Member{Name: "type", Value: jsonv.StringValue("string")})
	out := jsonv.NewObject(step.Len() + 1)
	for name, v := range step.Members() {
		switch name {
		case "properties":
			p := jsonv.NewObject(props.Len() + 1)
			p.Set(TagKey, tag)
			for pn, pv := range props.All() {
				p.Set(pn, pv)
			}
			v = p.Value()
		case "required":
			r := []string{TagKey}
			for _, e := range v.Array() {
				r = append(r, e.Str())
			}
			v = schema.StringArray(r)
		}
		out.Set(name, v)
	}
	if _, ok := step.Get("required"); !ok {
		out.Set("required", schema.StringArray([]string{TagKey}))
	}
	return out.Value()
}

// tagFirst is step k's schema in a multiplexed call: the first step's
// part of each item carries the item's tag (Tagged), the others as they
// are — a tag an item's part echoes once costs its answer a few tokens;
// one per step would cost them again for each step.
func tagFirst(k int, step jsonv.Value) jsonv.Value {
	if k == 0 {
		return Tagged(step)
	}
	return step
}

// ItemTags are the tags of a call's items, by their ids: a few letters and
// digits drawn from each id, distinct within the call, and the same for an
// item whichever call it is in. The prompt gives each item its tag, and
// each of its parts echoes it (TagKey).
func ItemTags(ids []string) []string {
	const alphabet = "abcdefghjkmnpqrstuvwxyz23456789"
	tags := make([]string, len(ids))
	seen := make(map[string]bool, len(ids))
	for i, id := range ids {
		h := fnv.New64a()
		h.Write([]byte(id))
		x := h.Sum64()
		var b []byte
		for n := 0; n < 3 || seen[string(b)]; n++ {
			b = append(b, alphabet[x%uint64(len(alphabet))])
			x /= uint64(len(alphabet))
			if x == 0 {
				x = uint64(i+n) * 2654435761
			}
		}
		tags[i] = string(b)
		seen[tags[i]] = true
	}
	return tags
}

// Legend says in words which property of a multiplexed answer holds what,
// for the prompt of the call: "property a<i> holds its step1_classify,
// property b<i> holds its step2_reply" — item i's value of each step, in
// step order (ItemKey) — and that the first step's part echoes the item's
// tag (TagKey).
func Legend(steps []string) string {
	var b strings.Builder
	for k, s := range steps {
		if k > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "property %s<i> holds its %s", StepPrefix(k), s)
	}
	fmt.Fprintf(&b, "; %s<i>'s %q is item i's tag", StepPrefix(0), TagKey)
	return b.String()
}

// ItemPart is one item's part of a multiplexed answer (Demultiplex).
type ItemPart struct {
	// Value is {step: answer[ItemKey(k, i)], …} for each step k the answer
	// holds for the item, in step order.
	Value jsonv.Value
	// Err is the item's own error — the properties of its steps the
	// answer lacks, or an answer that is no object — or nil when the
	// answer holds every step for it. Value is then what it does hold.
	Err error
}

// Demultiplex splits a multiplexed answer back into one part per item:
// item i's value is {step: answer[ItemKey(k, i)], …} for each step k, in
// step order. Each item stands alone: one whose properties the answer
// lacks has the ones it holds and an error naming the rest, and its
// siblings are whole — a caller repairs that item, not the call. With
// tags (ItemTags, one per item), the first step's part of item i, when an
// object, must echo tags[i] under TagKey, which is taken out of it: a part
// that echoes another tag, or none, is not the item's — it is left out of
// the item's value and named in the item's error. A tag in another step's
// part is taken out unchecked.
func Demultiplex(answer jsonv.Value, steps []string, n int, tags []string) []ItemPart {
	items := make([]ItemPart, n)
	for i := 1; i <= n; i++ {
		item := jsonv.NewObject(len(steps))
		var missing, wrong []string
		for k, s := range steps {
			v, ok := answer.Get(ItemKey(k, i))
			if !ok {
				missing = append(missing, fmt.Sprintf("%q (item %d's %s)", ItemKey(k, i), i, s))
				continue
			}
			if (tags == nil || k > 0) && v.Object() != nil && v.Object().Has(TagKey) {
				v = v.Clone()
				v.Object().Delete(TagKey) // not checked, but no part of the answer
			}
			if tags != nil && k == 0 && v.Object() != nil {
				tag, has := v.Get(TagKey)
				if !has || tag.Str() != tags[i-1] {
					got := "no tag"
					if has {
						got = fmt.Sprintf("the tag %s", jsonv.Marshal(tag))
					}
					wrong = append(wrong, fmt.Sprintf("%q (item %d's %s) holds %s, not the item's %q", ItemKey(k, i), i, s, got, tags[i-1]))
					continue
				}
				v = v.Clone()
				v.Object().Delete(TagKey)
			}
			item.Set(s, v)
		}
		items[i-1].Value = item.Value()
		var errs []string
		switch {
		case answer.Kind() != jsonv.KindObject:
			errs = append(errs, fmt.Sprintf("the answer is %s, not an object of each item's steps", answer.Kind()))
		default:
			if missing != nil {
				errs = append(errs, "the answer has no "+strings.Join(missing, ", "))
			}
			if wrong != nil {
				errs = append(errs, strings.Join(wrong, "; ")+": another item's answer")
			}
		}
		if errs != nil {
			items[i-1].Err = fmt.Errorf("demultiplex: %s", strings.Join(errs, "; "))
		}
	}
	return items
}

// Limits bound what one call may ask of a provider. The zero value means
// the defaults.
type Limits struct {
	// MaxItems is the most items per call; 0 means DefaultMaxItems.
	MaxItems int
	// MaxProperties is the most object properties one schema may hold, all
	// levels counted; 0 means 5000 (OpenAI's structured-output limit).
	MaxProperties int
	// MaxDepth is the deepest nesting of objects; 0 means 10 (OpenAI's).
	MaxDepth int
}

// DefaultMaxItems is the default number of items per call. Published
// results show answer quality falling past a few dozen items in one call.
const DefaultMaxItems = 32

func (l Limits) withDefaults() Limits {
	if l.MaxItems <= 0 {
		l.MaxItems = DefaultMaxItems
	}
	if l.MaxProperties <= 0 {
		l.MaxProperties = 5000
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = 10
	}
	return l
}

// Batch is a run of items sent in one call: items First to First+Count-1
// (0-based).
type Batch struct {
	First, Count int
}

// Batches splits n items into calls that each stay within limits, as even
// in size as possible. A single item that breaks a limit is an error naming
// the limit.
func Batches(chunk jsonv.Value, n int, limits Limits, opts MultiplexOptions) ([]Batch, error) {
	limits = limits.withDefaults()
	if n < 1 {
		return nil, fmt.Errorf("batches: %d items; need at least 1", n)
	}
	// Depth is the inline form's, whatever is sent: a reference nests
	// what it names where it stands. Properties are counted as sent: a
	// shared chunk's definitions once.
	inline := schema.Properties(Inline(chunk))
	depth, inner := 0, 0
	for _, s := range inline.Members() {
		depth = max(depth, objectDepth(s.Value))
		inner += countProperties(s.Value)
	}
	depth++ // the multiplexed object around the steps
	if depth > limits.MaxDepth {
		return nil, fmt.Errorf("batches: the chunk nests objects %d deep, over the provider's limit of %d", depth, limits.MaxDepth)
	}
	// The first step's part of each item carries its tag: one property
	// more, per item inline, once shared.
	tag := 0
	if first := inline.Members(); len(first) > 0 && schema.Properties(first[0].Value) != nil {
		tag = 1
	}
	perItem, fixed := inline.Len()+inner+tag, 0
	if !opts.Inline {
		perItem, fixed = inline.Len(), tag
		for _, s := range schema.Properties(chunk).Members() {
			fixed += countProperties(s.Value)
		}
		for _, d := range chunk.Lookup("$defs").Members() {
			fixed += countProperties(d)
		}
	}
	fit := (limits.MaxProperties - fixed) / perItem
	if fit < 1 {
		return nil, fmt.Errorf("batches: one item needs %d properties, over the provider's limit of %d", fixed+perItem, limits.MaxProperties)
	}
	per := min(fit, limits.MaxItems)
	calls := (n + per - 1) / per
	out := make([]Batch, calls)
	first := 0
	for i := range calls {
		count := n / calls
		if i < n%calls {
			count++
		}
		out[i] = Batch{First: first, Count: count}
		first += count
	}
	return out, nil
}

// countProperties counts the object properties of s at all levels.
func countProperties(s jsonv.Value) int {
	total := 0
	schema.Walk(s, func(_ jsonv.Pointer, n jsonv.Value) error {
		total += schema.Properties(n).Len()
		return nil
	})
	return total
}

// objectDepth is how deep objects nest in s (1 for an object of scalars).
func objectDepth(s jsonv.Value) int {
	d := 0
	schema.Subschemas(s, func(p jsonv.Pointer, sub jsonv.Value) bool {
		d = max(d, objectDepth(sub))
		return true
	})
	if schema.Properties(s) != nil {
		d++
	}
	return d
}

// BatchCall is one multiplexed model call of a chunk run over many items:
// items First+1 … First+Count (1-based) in one schema.
type BatchCall struct {
	Chunk  string
	First  int // 0-based index of the first item
	Count  int
	Schema jsonv.Value // what the model is sent
	// Notes are what the strict form moved out of Schema into the
	// prompt's text (ProjectOptions.Strict).
	Notes []Note
}

// MaxBatchItems bounds the items BatchCalls lays out at once: 100,000.
// Every call it lists holds its whole schema, about a kilobyte per item and
// step, so this many items of a four-step chunk are already some hundreds
// of megabytes; a larger run is a stream, sent batch by batch, not one
// list made up front.
const MaxBatchItems = 100_000

// BatchCalls lists the model calls that run every LLM chunk of p over n
// items: each chunk multiplexed in batches that keep within limits,
// projected with popts. n must be between 1 and MaxBatchItems; it is
// checked before anything is made.
func (p *Process) BatchCalls(n int, limits Limits, popts ProjectOptions, mopts MultiplexOptions) ([]BatchCall, error) {
	if n < 1 {
		return nil, fmt.Errorf("%d items; give at least 1", n)
	}
	if n > MaxBatchItems {
		return nil, fmt.Errorf("%d items is over the limit of %d items laid out at once", n, MaxBatchItems)
	}
	var calls []BatchCall
	for _, ch := range p.Chunks {
		if ch.Kind != LLM {
			continue
		}
		loose := ForModel(Project(p.Document.Lookup("$defs").Lookup(ch.Name), ProjectOptions{}).Schema)
		bs, err := Batches(loose, n, limits, mopts)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ch.Name, err)
		}
		for _, b := range bs {
			m, err := Multiplex(loose, b.Count, mopts)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", ch.Name, err)
			}
			proj := Project(m, popts)
			calls = append(calls, BatchCall{Chunk: ch.Name, First: b.First, Count: b.Count, Schema: proj.Schema, Notes: proj.Notes})
		}
	}
	return calls, nil
}
