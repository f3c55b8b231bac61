package compile

import (
	"testing"

	"github.com/augceo/vibe/jsonv"
)

func TestSample(t *testing.T) {
	recorded := &Sizes{}
	recorded.Observe("step", parse(t, `{"free": "twelve chars", "list": [1, 2]}`))
	for _, tc := range []struct {
		name, schema string
		sizes        *Sizes
		bytes        int
		estimated    bool
	}{
		{"a string of its maxLength", `{"type": "string", "maxLength": 10}`, nil, 12, false},
		{"the longest enum", `{"enum": ["a", "bbb"]}`, nil, 5, false},
		{"a free string at the default", `{"type": "string"}`, nil, DefaultStringChars + 2, true},
		{"an array of its maxItems", `{"type": "array", "maxItems": 3, "items": {"type": "boolean"}}`, nil, len(`[false,false,false]`), false},
		{"an object with every property", `{"type": "object", "properties": {"free": {"type": "string", "maxLength": 1}, "n": {"type": "integer"}}}`, nil, len(`{"free":"x","n":12345678}`), false},
		{"the longest recorded string and array", `{"type": "object", "properties": {"free": {"type": "string"}, "list": {"type": "array", "items": {"type": "integer"}}}}`, recorded, len(`{"free":"xxxxxxxxxxxx","list":[12345678,12345678]}`), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := parse(t, tc.schema)
			v, est := Sample(s, s, "step", tc.sizes)
			if n := len(jsonv.Marshal(v)); n != tc.bytes || est != tc.estimated {
				t.Errorf("%s: %d bytes (estimated %v), want %d (%v)", jsonv.Marshal(v), n, est, tc.bytes, tc.estimated)
			}
		})
	}
}

func TestOutputCap(t *testing.T) {
	for _, tc := range []struct {
		cap  OutputCap
		maxK int
		fits int // a K that fits
	}{
		{OutputCap{PerItem: 100, Limit: 16384}, 163, 163},
		{OutputCap{PerItem: 100, Limit: 50}, 1, 0},
		{OutputCap{PerItem: 100}, 0, 1000}, // no limit known: no cap
	} {
		if got := tc.cap.MaxK(); got != tc.maxK {
			t.Errorf("%+v: MaxK %d, want %d", tc.cap, got, tc.maxK)
		}
		if tc.fits > 0 && (!tc.cap.Fits(tc.fits) || (tc.cap.Limit > 0 && tc.cap.Fits(tc.maxK+1))) {
			t.Errorf("%+v: Fits(%d) or Fits(%d) is wrong", tc.cap, tc.fits, tc.maxK+1)
		}
	}
	p := longchain(t).Program()
	c := p.OutputCap(p.Chunks[0].Name, 16384, nil)
	// Ten steps of two free strings at the default length, and keys.
	if c.PerItem < 10*2*DefaultStringChars/BytesPerToken || c.PerItem > 12*2*DefaultStringChars/BytesPerToken {
		t.Errorf("one longchain answer: %d tokens", c.PerItem)
	}
}
