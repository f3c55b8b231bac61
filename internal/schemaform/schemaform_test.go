package schemaform_test

import (
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/augceo/vibe/internal/golden"
	"github.com/augceo/vibe/internal/schemaform"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

// The USER chunk of the example's schedule-meeting process, as the engine
// gives it to a person.
const approval = `{"type":"object","properties":{"confirmInvitation":{"title":"Получить подтверждение пользователя","type":"object",
 "properties":{"decision":{"type":"string","enum":["Approve","Reject"],"description":"Решение пользователя по предложенной встрече."}},"required":["decision"]}},
 "required":["confirmInvitation"]}`

// everything has one field of each kind.
const everything = `{"type":"object","properties":{
 "name":{"type":"string","title":"Name <b>bold</b>","description":"Who & why"},
 "email":{"type":"string","format":"email"},
 "when":{"type":"string","format":"date"},
 "count":{"type":"integer","minimum":1,"maximum":10},
 "ratio":{"type":"number"},
 "ok":{"type":"boolean"},
 "maybe":{"type":"boolean"},
 "level":{"enum":["low","mid",3,null]},
 "kind":{"const":"meeting"},
 "tags":{"type":"array","items":{"type":"string","enum":["a","b","c"]}},
 "people":{"type":"array","items":{"type":"object","properties":{"who":{"type":"string"},"age":{"type":"integer"}},"required":["who"]}},
 "address":{"type":"object","properties":{"city":{"type":"string"},"zip":{"type":"string"}},"required":["city"]},
 "extra":{"anyOf":[{"type":"string"},{"type":"number"}]}},
 "required":["name","count","ok","people","address"]}`

func parse(t *testing.T, s string) jsonv.Value {
	t.Helper()
	v, err := jsonv.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestRender(t *testing.T) {
	for _, tc := range []struct {
		name, schema, value string
		problems            []schema.Invalid
	}{
		{"approval", approval, "null", nil},
		// A refusal: the missing decision is shown at its field.
		{"approval-refused", approval, `{"confirmInvitation":{}}`, []schema.Invalid{{Path: "/confirmInvitation", Message: "missing property 'decision'"}}},
		{"everything", everything, `{"name":"<script>alert(1)</script>","count":"twelve","tags":["b"],"people":[{"who":"Ann"},{"who":"Bob","age":3}],"extra":[1]}`,
			[]schema.Invalid{{Path: "/count", Message: "got string, want integer"}, {Path: "/people/1/age", Message: "must be >= 18"},
				{Path: "", Message: "missing properties 'ok', 'address'"}, {Path: "/nowhere/x", Message: "additional properties 'nowhere' not allowed"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := string(schemaform.Render(parse(t, tc.schema), parse(t, tc.value), tc.problems))
			if strings.Contains(got, "<script>") || strings.Contains(got, "<b>") {
				t.Errorf("markup from the schema or the value is not escaped:\n%s", got)
			}
			golden.Check(t, "testdata/"+tc.name+".html", []byte(got))
		})
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, schema string
		form         url.Values
		want         string
	}{
		{"approve", approval, url.Values{"/confirmInvitation/decision": {`"Approve"`}}, `{"confirmInvitation":{"decision":"Approve"}}`},
		// Nothing chosen: the required object is there, its member is not,
		// and the engine's check says so at the field.
		{"nothing chosen", approval, url.Values{}, `{"confirmInvitation":{}}`},
		{"everything", everything, url.Values{
			"/name": {"Ann"}, "/email": {""}, "/count": {"3"}, "/ratio": {"0.5"},
			"sf-bool": {"/ok"}, "/maybe": {"false"}, "/level": {"3"}, "/kind": {`"meeting"`},
			"/tags":   {`"a"`, `"c"`},
			"sf-item": {"/people/0", "/people/2", "/people/1"}, "/people/0/who": {"Ann"}, "/people/2/who": {"Cy"}, "/people/2/age": {"40"}, "/people/1/who": {""},
			"/address/city": {"Oslo"}, "/extra": {`{"x": 1}`},
		}, `{"name":"Ann","count":3,"ratio":0.5,"ok":false,"maybe":false,"level":3,"kind":"meeting","tags":["a","c"],` +
			`"people":[{"who":"Ann"},{},{"who":"Cy","age":40}],"address":{"city":"Oslo"},"extra":{"x": 1}}`},
		// What is not a number stays text, for the check to name.
		{"not a number", everything, url.Values{"/count": {"twelve"}, "/extra": {"not json"}},
			`{"count":"twelve","people":[],"address":{},"extra":"not json"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := schemaform.Parse(parse(t, tc.schema), tc.form)
			if want := parse(t, tc.want); !jsonv.Equal(got, want) || string(jsonv.Marshal(got)) != string(jsonv.Marshal(want)) {
				t.Errorf("got  %s\nwant %s", jsonv.Marshal(got), jsonv.Marshal(want))
			}
		})
	}
}

// TestRoundTrip: what Render fills in, Parse reads back as it was, member
// order kept.
func TestRoundTrip(t *testing.T) {
	s := parse(t, everything)
	value := parse(t, `{"name":"Ann","count":3,"ok":true,"level":"mid","kind":"meeting","tags":["b"],"people":[{"who":"Ann","age":30}],"address":{"city":"Oslo","zip":"0150"},"extra":"x"}`)
	form := formValues(t, string(schemaform.Render(s, value, nil)))
	if got := schemaform.Parse(s, form); string(jsonv.Marshal(got)) != string(jsonv.Marshal(value)) {
		t.Errorf("got  %s\nwant %s\nform %v", jsonv.Marshal(got), jsonv.Marshal(value), form)
	}
}

// formValues is what a browser posts for the form in page: every named
// input, checked box and selected option, outside the rows' templates.
func formValues(t *testing.T, page string) url.Values {
	t.Helper()
	doc, err := html.Parse(strings.NewReader("<form>" + page + "</form>"))
	if err != nil {
		t.Fatal(err)
	}
	form := url.Values{}
	attr := func(n *html.Node, key string) (string, bool) {
		for _, a := range n.Attr {
			if a.Key == key {
				return a.Val, true
			}
		}
		return "", false
	}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "template" {
			return
		}
		if n.Type == html.ElementNode {
			name, named := attr(n, "name")
			switch {
			case !named:
			case n.Data == "input":
				typ, _ := attr(n, "type")
				_, checked := attr(n, "checked")
				value, _ := attr(n, "value")
				if (typ != "radio" && typ != "checkbox") || checked {
					form.Add(name, value)
				}
			case n.Data == "textarea":
				text := ""
				if n.FirstChild != nil {
					text = n.FirstChild.Data
				}
				form.Add(name, text)
			case n.Data == "select":
				for o := n.FirstChild; o != nil; o = o.NextSibling {
					if _, sel := attr(o, "selected"); sel {
						v, _ := attr(o, "value")
						form.Add(name, v)
					}
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return form
}

// TestRequiredMarks: only a required member is marked, never the answer
// itself nor an array's rows.
func TestRequiredMarks(t *testing.T) {
	s := parse(t, `{"title":"The answer","type":"object","required":["a","tags"],"properties":{
		"a":{"type":"string","title":"A"},"b":{"type":"string"},"tags":{"type":"array","items":{"type":"string"}}}}`)
	got := string(schemaform.Render(s, parse(t, `{"tags":["x","y"]}`), nil))
	if n := strings.Count(got, `class="sf-required"`); n != 2 {
		t.Errorf("%d required marks, want 2 (a and tags):\n%s", n, got)
	}
	if !strings.Contains(got, `<legend><span class="sf-label">The answer</span></legend>`) {
		t.Errorf("the answer's title is not its legend, unmarked:\n%s", got)
	}
}
