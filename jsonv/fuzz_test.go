package jsonv

import (
	"bytes"
	"testing"
)

// FuzzParse checks that whatever Parse accepts, Marshal writes back in a
// form that parses to an equal value and is stable from then on, and that
// nothing panics. Run: go test -fuzz=FuzzParse ./jsonv
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"b":1,"a":[true,null,{"z":"y"}]}`, `1.50`, `"\u00e9\ud83d\ude00"`, `[]`, `{}`,
		`{"a":1,"a":2}`, `[1,2`, `-0.0e-0`, "\"\xff\"", `{"\u0000":"\\"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Parse(data)
		if err != nil {
			_, syntax := err.(*SyntaxError)
			_, number := err.(*RangeError)
			if !syntax && !number {
				t.Fatalf("error %T, want *SyntaxError or *RangeError", err)
			}
			return
		}
		out := Marshal(v)
		w, err := Parse(out)
		if err != nil {
			t.Fatalf("re-parse of %q: %v", out, err)
		}
		if !Equal(v, w) {
			t.Fatalf("round trip changed the value: %q -> %q", data, out)
		}
		if again := Marshal(w); !bytes.Equal(again, out) {
			t.Fatalf("encoding not stable: %q then %q", out, again)
		}
		if ind, err := Parse(MarshalIndent(v, "  ")); err != nil || !bytes.Equal(Marshal(ind), out) {
			t.Fatalf("indented form differs: %v", err)
		}
		_ = v.Clone()
	})
}
