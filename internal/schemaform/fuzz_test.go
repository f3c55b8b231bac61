package schemaform_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/augceo/vibe/internal/schemaform"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

// FuzzForm: any schema and value give a form without a panic, with no
// markup of theirs unescaped, and Parse takes any post of it.
func FuzzForm(f *testing.F) {
	f.Add(approval, `{"confirmInvitation":{"decision":"Maybe"}}`, "/confirmInvitation/decision", `"<i>"`)
	f.Add(everything, `{"people":[{"who":"<x>"}]}`, "/people/0/who", "Ann")
	f.Add(`{"type":"array","items":{"type":"array","items":{"enum":[1,"<b>",null]}}}`, `[[1]]`, "sf-item", "/0")
	f.Add(`{"properties":{"a~/b":{"type":["string","null"]}}}`, `{}`, "/a~0~1b", "x")
	f.Fuzz(func(t *testing.T, s, value, name, text string) {
		sv, err := jsonv.Parse([]byte(s))
		if err != nil {
			return
		}
		v, err := jsonv.Parse([]byte(value))
		if err != nil {
			v = jsonv.Value{}
		}
		page := string(schemaform.Render(sv, v, []schema.Invalid{{Path: jsonv.Pointer(name), Message: text}}))
		if strings.Contains(page, "<b>") || strings.Contains(page, "<i>") || strings.Contains(page, "<x>") {
			t.Fatalf("markup unescaped:\n%s", page)
		}
		schemaform.Parse(sv, url.Values{name: {text}, "sf-item": {name}, "sf-bool": {name}})
	})
}
