package jsonv

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func mustParse(t testing.TB, s string) Value {
	t.Helper()
	v, err := Parse([]byte(s))
	if err != nil {
		t.Fatalf("Parse(%q): %v", s, err)
	}
	return v
}

func TestRoundTrip(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"order kept", `{"zeta":1,"alpha":2,"mid":{"z":true,"a":null}}`, ""},
		{"numbers keep their text", `[1.50,1e3,-0,123456789012345678901234567890,0.1E-7]`, ""},
		{"strings", `["plain","quote\"back\\slash","\u0001","Привет, мир","tab\t"]`, `["plain","quote\"back\\slash","\u0001","Привет, мир","tab\t"]`},
		{"escaped input normalised", `"\u041f\/"`, `"П/"`},
		{"whitespace dropped", " { \"a\" : [ 1 , 2 ] } ", `{"a":[1,2]}`},
		{"empty containers", `{"o":{},"a":[]}`, ""},
		{"scalars", `[true,false,null,""]`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.want
			if want == "" {
				want = tt.in
			}
			v := mustParse(t, tt.in)
			if got := string(Marshal(v)); got != want {
				t.Errorf("Marshal = %s, want %s", got, want)
			}
			// Through encoding/json, as a Temporal payload or HTTP body would go.
			b, err := json.Marshal(struct{ V Value }{v})
			if err != nil {
				t.Fatal(err)
			}
			var back struct{ V Value }
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if got := string(Marshal(back.V)); got != want {
				t.Errorf("through encoding/json = %s, want %s", got, want)
			}
		})
	}
}

func TestMarshalIndent(t *testing.T) {
	v := mustParse(t, `{"b":[1,{"c":"d"}],"a":{},"e":[]}`)
	want := `{
  "b": [
    1,
    {
      "c": "d"
    }
  ],
  "a": {},
  "e": []
}`
	if got := string(MarshalIndent(v, "  ")); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// The same layout as encoding/json, apart from key order (which
	// encoding/json would sort) and HTML escaping (which it would add).
	var std any
	json.Unmarshal([]byte(`{"a":[1,{"c":"d"}]}`), &std)
	stdOut, _ := json.MarshalIndent(std, "", "  ")
	if got := string(MarshalIndent(mustParse(t, `{"a":[1,{"c":"d"}]}`), "  ")); got != string(stdOut) {
		t.Errorf("layout differs from encoding/json:\n%s\n%s", got, stdOut)
	}
}

func TestOrderOfManyMembers(t *testing.T) {
	// 300 names in a shuffled order, with a nested object of its own order.
	r := rand.New(rand.NewPCG(1, 2))
	names := r.Perm(300)
	o := NewObject(0)
	for _, n := range names {
		inner := NewObject(0)
		for _, m := range r.Perm(5) {
			inner.Set(fmt.Sprintf("n%d", m), IntValue(int64(m)))
		}
		o.Set(fmt.Sprintf("p%03d", n), inner.Value())
	}
	text := Marshal(o.Value())
	back, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(Marshal(back)); got != string(text) {
		t.Fatal("order changed in a round trip")
	}
	for i, m := range back.Object().Members() {
		if want := fmt.Sprintf("p%03d", names[i]); m.Name != want {
			t.Fatalf("member %d = %s, want %s", i, m.Name, want)
		}
		if _, ok := back.Object().Get(m.Name); !ok { // the indexed lookup
			t.Fatalf("Get(%s) failed", m.Name)
		}
	}
}

func TestSyntaxErrors(t *testing.T) {
	tests := []struct {
		in      string
		line    int
		col     int
		pointer Pointer
		msg     string
	}{
		{`{"a":1,"a":2}`, 1, 8, "/a", "duplicate member name"},
		{"{\n  \"a\": }", 2, 8, "/a", "missing value after object name"},
		{`{"a":1`, 1, 7, "", "unexpected end of input"},
		{``, 1, 1, "", "unexpected end of input"},
		{`{"b":{"c":[1, {"d": nope}]}}`, 1, 22, "/b/c/1/d", "invalid character 'o' in literal null (expecting 'u')"},
		{`{"a":1} x`, 1, 9, "", "unexpected data after the JSON value"},
		{"\"\xff\"", 1, 2, "", "invalid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := Parse([]byte(tt.in))
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want *SyntaxError", err)
			}
			if se.Line != tt.line || se.Column != tt.col || se.Pointer != tt.pointer || !strings.Contains(se.Msg, tt.msg) {
				t.Errorf("got line %d col %d pointer %q msg %q, want %d %d %q %q", se.Line, se.Column, se.Pointer, se.Msg, tt.line, tt.col, tt.pointer, tt.msg)
			}
		})
	}
}

func TestAccessors(t *testing.T) {
	v := mustParse(t, `{"s":"x","n":42,"f":1.5,"big":1e300,"b":true,"a":[1],"o":{"k":"v"},"z":null}`)
	if got := v.Lookup("s").Str(); got != "x" {
		t.Errorf("Str = %q", got)
	}
	if i, ok := v.Lookup("n").Int(); !ok || i != 42 {
		t.Errorf("Int = %d %v", i, ok)
	}
	if _, ok := v.Lookup("f").Int(); ok {
		t.Error("1.5 is not an int")
	}
	if _, ok := v.Lookup("big").Int(); ok {
		t.Error("1e300 does not fit an int64")
	}
	if f, ok := v.Lookup("f").Float(); !ok || f != 1.5 {
		t.Errorf("Float = %v %v", f, ok)
	}
	if !v.Lookup("b").Bool() || v.Lookup("s").Bool() {
		t.Error("Bool")
	}
	if v.Lookup("a").Len() != 1 || v.Len() != 8 || v.Lookup("s").Len() != 0 {
		t.Error("Len")
	}
	if !v.Lookup("z").IsNull() || !v.Lookup("missing").IsNull() {
		t.Error("IsNull")
	}
	if got := v.Lookup("o").String(); got != `{"k":"v"}` {
		t.Errorf("String of object = %s", got)
	}
	if _, ok := NumberValue("01"); ok {
		t.Error("01 is not a JSON number")
	}
	if n, ok := NumberValue("-1.5e+3"); !ok || n.Literal() != "-1.5e+3" {
		t.Error("NumberValue")
	}
	if FloatValue(0.1).Literal() != "0.1" || !FloatValue(1/zero()).IsNull() {
		t.Error("FloatValue")
	}
}

func zero() float64 { return 0 }

func TestEqual(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{`{"a":1,"b":2}`, `{"b":2,"a":1}`, true},
		{`1.0`, `1`, true},
		{`[1,2]`, `[2,1]`, false},
		{`{"a":1}`, `{"a":1,"b":2}`, false},
		{`"1"`, `1`, false},
		{`null`, `null`, true},
	}
	for _, tt := range tests {
		if got := Equal(mustParse(t, tt.a), mustParse(t, tt.b)); got != tt.want {
			t.Errorf("Equal(%s, %s) = %v", tt.a, tt.b, got)
		}
	}
}

func TestObjectEdits(t *testing.T) {
	o := mustParse(t, `{"a":1,"b":2,"c":3}`).Object()
	o.Set("b", IntValue(20))
	o.Set("d", IntValue(4))
	o.Insert(0, "z", IntValue(0))
	o.Insert(2, "c", IntValue(30)) // moves c
	if !o.Delete("a") || o.Delete("nope") {
		t.Error("Delete")
	}
	if got := string(Marshal(o.Value())); got != `{"z":0,"c":30,"b":20,"d":4}` {
		t.Errorf("got %s", got)
	}
	// Beyond the index threshold, edits keep the index right.
	big := NewObject(0)
	for i := range 40 {
		big.Set(fmt.Sprint(i), IntValue(int64(i)))
	}
	big.Delete("5")
	big.Insert(0, "first", NullValue())
	big.Set("last", NullValue())
	for i, m := range big.Members() {
		if big.Index(m.Name) != i {
			t.Fatalf("Index(%s) = %d, want %d", m.Name, big.Index(m.Name), i)
		}
	}
	if big.Has("5") {
		t.Error("deleted member still found")
	}
}

func TestClone(t *testing.T) {
	v := mustParse(t, `{"a":{"b":[1,{"c":2}]}}`)
	c := v.Clone()
	if _, err := Set(c, "/a/b/1/c", IntValue(3)); err != nil {
		t.Fatal(err)
	}
	c.Object().Set("new", NullValue())
	if got := string(Marshal(v)); got != `{"a":{"b":[1,{"c":2}]}}` {
		t.Errorf("original changed: %s", got)
	}
}

// TestParseWithin: a document past a bound is a *LimitError naming where
// parsing stopped; one within the bounds parses as Parse would.
func TestParseWithin(t *testing.T) {
	tests := []struct {
		name, in string
		lim      Limits
		at, msg  string // the error's pointer and message; "" msg for none
	}{
		{"within", `{"a":[1,{"b":2}]}`, Limits{MaxDepth: 3, MaxValues: 5}, "", ""},
		{"too deep", `{"a":[1,{"b":2}]}`, Limits{MaxDepth: 2}, "/a/1", "arrays and objects nest more than 2 levels deep"},
		{"too deep in an array", `[[[[]]]]`, Limits{MaxDepth: 3}, "/0/0/0", "arrays and objects nest more than 3 levels deep"},
		{"too many values", `[1,2,3,4,5]`, Limits{MaxValues: 4}, "/3", "the document holds more than 4 values"},
		{"members count", `{"a":1,"b":2}`, Limits{MaxValues: 2}, "/b", "the document holds more than 2 values"},
		{"no bounds", strings.Repeat("[", 500) + strings.Repeat("]", 500), Limits{}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := ParseWithin([]byte(tt.in), tt.lim)
			if tt.msg == "" {
				if err != nil {
					t.Fatal(err)
				}
				if want := mustParse(t, tt.in); !Equal(v, want) {
					t.Errorf("parsed %s", Marshal(v))
				}
				return
			}
			var le *LimitError
			if !errors.As(err, &le) || string(le.Pointer) != tt.at || le.Error() != tt.msg {
				t.Errorf("err = %#v, want %q at %q", err, tt.msg, tt.at)
			}
		})
	}
	// A syntax error is still a *SyntaxError.
	if _, err := ParseWithin([]byte(`[1,`), Limits{MaxDepth: 4}); !errors.As(err, new(*SyntaxError)) {
		t.Errorf("err = %#v, want a *SyntaxError", err)
	}
}

// TestParseRange: a number past what a float64 holds is refused as a
// *RangeError naming where it is, not taken as ±1.797e308; the largest
// and the tiniest that read are kept exactly.
func TestParseRange(t *testing.T) {
	big := "1" + strings.Repeat("0", 309)
	tests := []struct {
		doc, at, lit string // lit "": parses, and keeps its literal
	}{
		{`1e400`, "", "1e400"},
		{`{"input":{"n":-1E+309}}`, "/input/n", "-1E+309"},
		{`[0, 2e308]`, "/1", "2e308"},
		{`{"a":` + big + `}`, "/a", big[:40] + "…"},
		{`1.7976931348623157e308`, "", ""},
		{`1e-400`, "", ""},
		{`{"a":` + big[:300] + `}`, "", ""},
	}
	for _, tt := range tests {
		v, err := Parse([]byte(tt.doc))
		if tt.lit == "" {
			if err != nil || string(Marshal(v)) != strings.ReplaceAll(tt.doc, " ", "") {
				t.Errorf("%.50s: %v, %.50s", tt.doc, err, Marshal(v))
			}
			continue
		}
		re, ok := err.(*RangeError)
		if !ok || string(re.Pointer) != tt.at || re.Literal != tt.lit || !strings.Contains(err.Error(), "number "+tt.lit+" is out of range") {
			t.Errorf("%.50s: %v, want a *RangeError at %q", tt.doc, err, tt.at)
		}
	}
}
