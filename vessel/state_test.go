package vessel

import (
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"

	"github.com/augceo/vibe/jsonv"
)

func TestMergePatchOrder(t *testing.T) {
	tests := []struct{ doc, patch, want string }{
		{`{}`, `{"task":"t","status":"s","a":1}`, `{"task":"t","status":"s","a":1}`},
		{`{"zeta":1,"alpha":{"y":1,"b":2},"mid":3}`, `{"alpha":{"q":5,"b":null},"new":1,"aa":2,"zeta":null}`, `{"alpha":{"y":1,"q":5},"mid":3,"new":1,"aa":2}`},
		{`{"a":5}`, `{"a":{"b":null,"c":1}}`, `{"a":{"c":1}}`},
		{`{"a":[1,2]}`, `{"a":[3]}`, `{"a":[3]}`},
		{`{"a":1}`, `[1]`, `[1]`},
	}
	for _, tt := range tests {
		got, _ := MergePatch(mustJSON(t, tt.doc), mustJSON(t, tt.patch))
		if string(jsonv.Marshal(got)) != tt.want {
			t.Errorf("MergePatch(%s, %s) = %s, want %s", tt.doc, tt.patch, jsonv.Marshal(got), tt.want)
		}
	}
}

// FuzzMergePatch checks MergePatch against evanphx/json-patch's, the
// reference implementation of RFC 7396: the same members and values, in
// any order. Run: go test -fuzz=FuzzMergePatch ./vessel
func FuzzMergePatch(f *testing.F) {
	f.Add(`{"a":1,"b":{"c":2}}`, `{"b":{"c":null,"d":[1]},"e":null,"f":{"g":null}}`)
	f.Add(`{"x":"y"}`, `{"x":{"y":{"z":1}}}`)
	f.Add(`{}`, `{"a":null}`)
	f.Fuzz(func(t *testing.T, doc, patch string) {
		d, err1 := jsonv.Parse([]byte(doc))
		p, err2 := jsonv.Parse([]byte(patch))
		if err1 != nil || err2 != nil || d.Object() == nil || p.Object() == nil {
			return
		}
		got, _ := MergePatch(d, p)
		ref, err := jsonpatch.MergePatch(jsonv.Marshal(d), jsonv.Marshal(p))
		if err != nil {
			return
		}
		want, err := jsonv.Parse(ref)
		if err != nil {
			t.Fatalf("reference gave %s", ref)
		}
		if !jsonv.Equal(got, want) {
			t.Fatalf("MergePatch(%s, %s) = %s, evanphx says %s", doc, patch, jsonv.Marshal(got), ref)
		}
	})
}
