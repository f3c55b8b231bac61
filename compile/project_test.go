package compile

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

func TestProject(t *testing.T) {
	s := parse(t, `{"kind": "LLM", "contextName": "llmContext1", "type": "object", "references": ["x"],
		"properties": {
			"_plan": {"type": "string"},
			"step": {"type": "object", "references": ["a.b"], "action": "A", "fireAndForget": true,
				"properties": {"references": {"type": "array", "items": {"type": "string"}}, "$score": {"type": "integer"}, "note": {"type": "string"}},
				"required": ["references"]}},
		"required": ["_plan", "step"]}`)
	before := string(jsonv.Marshal(s))
	p := Project(s, ProjectOptions{})
	want := `{"type":"object","properties":{"_plan":{"type":"string"},"step":{"type":"object","properties":{"references":{"type":"array","items":{"type":"string"}},"$score":{"type":"integer"},"note":{"type":"string"}},"required":["references"]}},"required":["_plan","step"]}`
	if got := string(jsonv.Marshal(p.Schema)); got != want {
		t.Errorf("projection\n got %s\nwant %s", got, want)
	}
	if string(jsonv.Marshal(s)) != before {
		t.Error("Project changed its input")
	}
	if v := parse(t, `{"a": null}`); !jsonv.Equal(p.Restore(v), v) {
		t.Error("Restore of a loose projection must return the value as is")
	}
}

func TestProjectStrict(t *testing.T) {
	s := parse(t, `{"type": "object", "properties": {
		"name": {"type": "string"},
		"nick": {"type": "string"},
		"mood": {"enum": ["ok", "bad"], "type": "string"},
		"tag": {"const": "x"},
		"maybe": {"type": ["string", "null"]},
		"items": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "string"}, "opt": {"type": "integer"}}, "required": ["id"]}}},
		"required": ["name", "items"]}`)
	p := Project(s, ProjectOptions{Strict: true})
	want := `{"type":"object","properties":{` +
		`"name":{"type":"string"},` +
		`"nick":{"type":["string","null"]},` +
		`"mood":{"enum":["ok","bad",null],"type":["string","null"]},` +
		`"tag":{"anyOf":[{"const":"x"},{"type":"null"}]},` +
		`"maybe":{"type":["string","null"]},` +
		`"items":{"type":"array","items":{"type":"object","properties":{"id":{"type":"string"},"opt":{"type":["integer","null"]}},"required":["id","opt"],"additionalProperties":false}}},` +
		`"required":["name","nick","mood","tag","maybe","items"],"additionalProperties":false}`
	if got := string(jsonv.Marshal(p.Schema)); got != want {
		t.Errorf("strict projection\n got %s\nwant %s", got, want)
	}
	// What a strict model answers, and what Restore makes of it.
	answer := parse(t, `{"name": "A", "nick": null, "mood": null, "tag": null, "maybe": null, "items": [{"id": "1", "opt": null}, {"id": "2", "opt": 3}]}`)
	got := string(jsonv.Marshal(p.Restore(answer)))
	if want := `{"name":"A","maybe":null,"items":[{"id":"1"},{"id":"2","opt":3}]}`; got != want {
		t.Errorf("Restore\n got %s\nwant %s", got, want)
	}
	// The strict answer validates against the strict schema, the restored one against the original.
	strictV, err := schema.NewValidator("strict", p.Schema, schema.ValidatorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := strictV.Validate(answer); err != nil {
		t.Errorf("strict answer invalid: %v", err)
	}
	orig, _ := schema.NewValidator("orig", s, schema.ValidatorOptions{})
	if err := orig.Validate(p.Restore(answer)); err != nil {
		t.Errorf("restored answer invalid against the original: %v", err)
	}
}

// TestMultiplex3x4 runs a 4-step LLM chunk over 3 items: 12 properties in
// step-major order, the step schemas shared once, demultiplexed back.
func TestMultiplex3x4(t *testing.T) {
	p, err := CompilePipeline(context.Background(), `"Moderate the comments" | Classify | Explain | Score | Decide`, Options{Registry: testRegistry(t)})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Chunks) != 1 || len(p.Chunks[0].Steps) != 4 {
		t.Fatalf("chunks %q", kinds(p))
	}
	chunk := Project(p.Document.Lookup("$defs").Lookup(p.Chunks[0].Name), ProjectOptions{}).Schema
	m, err := Multiplex(chunk, 3, MultiplexOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "batch-3x4.json", indent(m))
	steps := []string{"step1_classify", "step2_explain", "step3_score", "step4_decide"}
	var want []string
	for _, prefix := range []string{"a", "b", "c", "d"} {
		for i := 1; i <= 3; i++ {
			want = append(want, fmt.Sprintf("%s%d", prefix, i))
		}
	}
	if got := schema.Properties(m).Names(); !slices.Equal(got, want) {
		t.Errorf("properties\n got %q\nwant %q", got, want)
	}
	if got := schema.Required(m); !slices.Equal(got, want) {
		t.Errorf("required %q", got)
	}
	if got := m.Lookup("$defs").Object().Names(); !slices.Equal(got, []string{"a", "b", "c", "d"}) {
		t.Errorf("$defs %q: each step schema once", got)
	}
	jsonv.Walk(m.Lookup("properties"), func(_ jsonv.Pointer, v jsonv.Value) error {
		if v.Kind() == jsonv.KindArray && v.Len() > 0 && v.Array()[0].Kind() == jsonv.KindObject {
			t.Error("a nested array of items")
		}
		return nil
	})
	// A model's answer validates against the multiplexed schema and splits
	// per item, each part echoing its item's tag.
	tags := ItemTags([]string{"b-1", "b-2", "b-3"})
	var b strings.Builder
	b.WriteString("{")
	for i, name := range want {
		if i > 0 {
			b.WriteString(",")
		}
		item := name[len(name)-1:]
		n, _ := strconv.Atoi(item)
		tag := tags[n-1]
		switch {
		case strings.HasPrefix(name, "a"):
			fmt.Fprintf(&b, `%q:{"_item":%q,"_reading":"comment %s","category":"ok"}`, name, tag, item)
		case strings.HasPrefix(name, "b"):
			fmt.Fprintf(&b, `%q:{"reason":"reason %s"}`, name, item)
		case strings.HasPrefix(name, "c"):
			fmt.Fprintf(&b, `%q:{"$severity":%s}`, name, item)
		default:
			fmt.Fprintf(&b, `%q:{"action":"keep"}`, name)
		}
	}
	b.WriteString("}")
	answer := parse(t, b.String())
	v, err := schema.NewValidator("batch", m, schema.ValidatorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Validate(answer); err != nil {
		t.Fatalf("answer invalid: %v", err)
	}
	items := Demultiplex(answer, steps, 3, tags)
	for i, it := range items {
		if it.Err != nil {
			t.Errorf("item %d: %v", i+1, it.Err)
		}
	}
	if got := string(jsonv.Marshal(items[1].Value)); got != `{"step1_classify":{"_reading":"comment 2","category":"ok"},"step2_explain":{"reason":"reason 2"},"step3_score":{"$severity":2},"step4_decide":{"action":"keep"}}` {
		t.Errorf("item 2 = %s", got)
	}
	// An item the answer lacks is that item's error alone.
	four := Demultiplex(answer, steps, 4, append(slices.Clone(tags), "zzzz"))
	if err := four[3].Err; err == nil || !strings.Contains(err.Error(), `"a4" (item 4's step1_classify)`) || !strings.Contains(err.Error(), `"d4" (item 4's step4_decide)`) {
		t.Errorf("a missing item: %v", err)
	}
	if four[2].Err != nil || !jsonv.Equal(four[2].Value, items[2].Value) {
		t.Errorf("item 3 beside a missing item 4: %v %s", four[2].Err, jsonv.Marshal(four[2].Value))
	}
	// A part missing one step keeps the steps it has.
	partial := answer.Clone()
	partial.Object().Delete("b2")
	two := Demultiplex(partial, steps, 3, tags)[1]
	if two.Err == nil || !strings.Contains(two.Err.Error(), `"b2" (item 2's step2_explain)`) || strings.Contains(two.Err.Error(), `"a2"`) ||
		two.Value.Lookup("step1_classify").IsNull() || !two.Value.Lookup("step2_explain").IsNull() {
		t.Errorf("item 2 without its step2: %v %s", two.Err, jsonv.Marshal(two.Value))
	}
	for _, it := range Demultiplex(jsonv.StringValue("no"), steps, 2, nil) {
		if it.Err == nil || !strings.Contains(it.Err.Error(), "not an object") {
			t.Errorf("an answer that is no object: %v", it.Err)
		}
	}
	// Two items swapped in the first step, whose part echoes the item's
	// tag: each holds the other's tag, and neither is written to the other
	// item.
	swapped := answer.Clone()
	a1, a2 := swapped.Lookup("a1"), swapped.Lookup("a2")
	swapped.Object().Set("a1", a2)
	swapped.Object().Set("a2", a1)
	sw := Demultiplex(swapped, steps, 3, tags)
	for i, it := range sw[:2] {
		if it.Err == nil || !strings.Contains(it.Err.Error(), "another item's answer") || it.Value.Lookup("step1_classify").Kind() != jsonv.KindNull ||
			it.Value.Lookup("step2_explain").IsNull() {
			t.Errorf("swapped item %d: %v %s", i+1, it.Err, jsonv.Marshal(it.Value))
		}
	}
	if sw[2].Err != nil || !jsonv.Equal(sw[2].Value, items[2].Value) {
		t.Errorf("item 3 beside two swapped: %v", sw[2].Err)
	}
	if strings.Contains(string(jsonv.Marshal(items[0].Value)), TagKey) {
		t.Errorf("the tag stays in the item's value: %s", jsonv.Marshal(items[0].Value))
	}
	inline, _ := Multiplex(chunk, 3, MultiplexOptions{Inline: true})
	if _, ok := inline.Get("$defs"); ok || !jsonv.Equal(inline.Lookup("properties").Lookup("a3"), Tagged(chunk.Lookup("properties").Lookup("step1_classify"))) ||
		!jsonv.Equal(inline.Lookup("properties").Lookup("b3"), chunk.Lookup("properties").Lookup("step2_explain")) {
		t.Error("inline multiplexing must copy the step schema into each item")
	}
}

func TestItemKey(t *testing.T) {
	for _, c := range []struct {
		k, i int
		want string
	}{{0, 1, "a1"}, {1, 32, "b32"}, {25, 7, "z7"}, {26, 1, "aa1"}, {27, 2, "ab2"}, {51, 3, "az3"}, {52, 4, "ba4"}, {701, 1, "zz1"}, {702, 1, "aaa1"}} {
		if got := ItemKey(c.k, c.i); got != c.want {
			t.Errorf("ItemKey(%d, %d) = %q, want %q", c.k, c.i, got, c.want)
		}
	}
	// No two steps share a prefix.
	seen := map[string]bool{}
	for k := range 2000 {
		p := StepPrefix(k)
		if seen[p] {
			t.Fatalf("StepPrefix(%d) = %q again", k, p)
		}
		seen[p] = true
	}
}

func TestBatches(t *testing.T) {
	chunk := parse(t, `{"properties": {"a": {"type": "object", "properties": {"x": {}, "y": {}}}, "b": {"type": "object", "properties": {"z": {}}}}}`)
	tests := []struct {
		n      int
		limits Limits
		inline bool
		want   string
	}{
		{10, Limits{}, false, "[{0 10}]"},
		{100, Limits{}, false, "[{0 25} {25 25} {50 25} {75 25}]"},
		{33, Limits{}, false, "[{0 17} {17 16}]"},
		{10, Limits{MaxItems: 4}, false, "[{0 4} {4 3} {7 3}]"},
		{10, Limits{MaxProperties: 5 + 2*4}, false, "[{0 4} {4 3} {7 3}]"}, // 3 shared and the first step's tag + 2 per item
		{10, Limits{MaxProperties: 7 * 4}, true, "[{0 4} {4 3} {7 3}]"},    // 6 per item inline
		{1, Limits{MaxProperties: 4}, false, "one item needs 6 properties, over the provider's limit of 4"},
		{1, Limits{MaxDepth: 1}, false, "nests objects 2 deep, over the provider's limit of 1"},
		{0, Limits{}, false, "0 items"},
	}
	for _, tt := range tests {
		bs, err := Batches(chunk, tt.n, tt.limits, MultiplexOptions{Inline: tt.inline})
		got := fmt.Sprint(bs)
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, tt.want) {
			t.Errorf("Batches(%d, %+v, inline %v) = %s, want %s", tt.n, tt.limits, tt.inline, got, tt.want)
		}
	}
}
