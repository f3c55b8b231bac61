package schema

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/augceo/vibe/jsonv"
)

func mustParse(t testing.TB, s string) jsonv.Value {
	t.Helper()
	v, err := jsonv.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestErrorFormat(t *testing.T) {
	tests := []struct {
		e    *Error
		want string
	}{
		{&Error{File: "a.json", Path: "/properties/x", Message: "bad"}, "a.json: /properties/x: bad"},
		{&Error{File: "a.json", Message: "bad"}, "a.json: /: bad"},
		{&Error{File: "<pipeline>", Line: 2, Column: 7, Message: "bad"}, "<pipeline>:2:7: bad"},
		{&Error{Message: "bad"}, "<input>: /: bad"},
		{&Error{File: "a\u202e.json", Path: "/properties/x\x00y", Message: "bad"}, `a\u202e.json: /properties/x\x00y: bad`},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
	cause := errors.New("cause")
	e := Errorf("f", "/a", "wrapped: %w", cause)
	if !errors.Is(e, cause) || e.Message != "wrapped: cause" {
		t.Errorf("Errorf: %v", e)
	}
}

func TestErrorList(t *testing.T) {
	var l ErrorList
	if l.Err() != nil {
		t.Error("empty list is not nil")
	}
	l.Add("b.json", "/x", "two")
	l.Add("a.json", "/y", "one")
	l.Add("a.json", "/y", "one")
	l.Append("c.json", errors.New("plain"))
	l.Append("c.json", nil)
	l.Sort()
	if got := l.Error(); got != "a.json: /y: one\nb.json: /x: two\nc.json: /: plain" {
		t.Errorf("got\n%s", got)
	}
	wrapped := fmt.Errorf("compose: %w", l)
	if got := Errors(wrapped, "x"); len(got) != 3 {
		t.Errorf("Errors of a wrapped list: %v", got)
	}
	var target *Error
	if !errors.As(l.Err(), &target) || target.File != "a.json" {
		t.Errorf("errors.As through the list: %v", target)
	}
}

func TestParseAndReadFile(t *testing.T) {
	_, err := Parse("f.json", []byte("{\n \"a\": [1, 2,, 3]\n}"))
	var e *Error
	if !errors.As(err, &e) || e.File != "f.json" || e.Path != "/a/2" || !strings.Contains(e.Message, "line 2, column 13") {
		t.Errorf("Parse error %v", err)
	}
	dir := t.TempDir()
	name := filepath.Join(dir, "s.json")
	os.WriteFile(name, []byte(`{"type":"string"}`), 0o644)
	if v, err := ReadFile(name); err != nil || v.Lookup("type").Str() != "string" {
		t.Errorf("ReadFile: %v %v", v, err)
	}
	if _, err := ReadFile(filepath.Join(dir, "none.json")); err == nil || !strings.Contains(err.Error(), "none.json: /: cannot read: no such file or directory") {
		t.Errorf("missing file: %v", err)
	}
}

func TestWalk(t *testing.T) {
	s := mustParse(t, `{"type":"object","properties":{"a":{"items":{"type":"string"}},"b":{"anyOf":[{"const":{"properties":{"not":"a schema"}}},{"$ref":"#/$defs/x"}]}},"$defs":{"x":{"not":{}}},"enum":[{"properties":{}}]}`)
	var seen []string
	Walk(s, func(p jsonv.Pointer, _ jsonv.Value) error {
		seen = append(seen, string(p))
		return nil
	})
	want := []string{"", "/properties/a", "/properties/a/items", "/properties/b", "/properties/b/anyOf/0", "/properties/b/anyOf/1", "/$defs/x", "/$defs/x/not"}
	if !slices.Equal(seen, want) {
		t.Errorf("visited %q\nwant %q", seen, want)
	}
	if KeywordShape("properties") != SchemaMap || KeywordShape("allOf") != SchemaArray || KeywordShape("items") != SchemaValue || KeywordShape("const") != NotSchema {
		t.Error("KeywordShape")
	}
}

func TestConventions(t *testing.T) {
	for name, want := range map[string][2]bool{
		"_considerations": {true, false},
		"$qualityScore":   {false, true},
		"_tool":           {false, false},
		"_instance":       {false, false},
		"organizer":       {false, false},
		"$":               {false, false},
	} {
		if IsThinking(name) != want[0] || IsMetric(name) != want[1] {
			t.Errorf("%s: thinking %v metric %v", name, IsThinking(name), IsMetric(name))
		}
	}
	if !IsEngineKeyword("references") || IsEngineKeyword("properties") {
		t.Error("IsEngineKeyword")
	}
}

func TestValidator(t *testing.T) {
	s := mustParse(t, `{"type":"object","properties":{
		"when":{"type":"string","format":"date-time"},
		"who":{"type":"object","properties":{"email":{"type":"string","format":"email"}},"required":["email"]},
		"decision":{"enum":["Approve","Reject"]}},
		"required":["when","decision"],"additionalProperties":false}`)
	v, err := NewValidator("s.json", s, ValidatorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Validate(mustParse(t, `{"when":"2024-03-20T09:00:00Z","who":{"email":"a@b.c"},"decision":"Approve"}`)); err != nil {
		t.Errorf("valid instance: %v", err)
	}
	err = v.Validate(mustParse(t, `{"when":"tomorrow","who":{},"decision":"Maybe","extra":1}`))
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v", err)
	}
	var paths []string
	for _, p := range ve.Problems {
		paths = append(paths, string(p.Path))
	}
	if !slices.Equal(paths, []string{"", "/decision", "/when", "/who"}) {
		t.Errorf("problem paths %q: %v", paths, ve)
	}
	lax, _ := NewValidator("s.json", s, ValidatorOptions{IgnoreFormat: true})
	if err := lax.Validate(mustParse(t, `{"when":"tomorrow","decision":"Reject"}`)); err != nil {
		t.Errorf("IgnoreFormat: %v", err)
	}

	_, err = NewValidator("bad.json", mustParse(t, `{"type":"object","properties":{"a":{"minLength":"x"}}}`), ValidatorOptions{})
	var list ErrorList
	if !errors.As(err, &list) || list[0].File != "bad.json" || list[0].Path != "/properties/a/minLength" {
		t.Errorf("invalid schema: %v", err)
	}

	// A keyword of two forms that fits neither is told once, by the first
	// form: not also "got string, want array".
	_, err = NewValidator("two.json", mustParse(t, `{"properties":{"a":{"type":"strng"},"b":{"minimum":"3"}},"required":"a"}`), ValidatorOptions{})
	var got []string
	for _, e := range Errors(err, "") {
		got = append(got, e.Error())
	}
	if want := []string{
		"two.json: /properties/a/type: not a valid JSON Schema: value must be one of 'array', 'boolean', 'integer', 'null', 'number', 'object', 'string'",
		"two.json: /properties/b/minimum: not a valid JSON Schema: got string, want number",
		"two.json: /required: not a valid JSON Schema: got string, want array",
	}; strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("two forms:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	loader := func(uri string) (jsonv.Value, error) {
		if uri == "aug:instructions/slot" {
			return mustParse(t, `{"type":"string","minLength":2}`), nil
		}
		return jsonv.Value{}, errors.New("unknown")
	}
	withRef, err := NewValidator("r.json", mustParse(t, `{"properties":{"s":{"$ref":"aug:instructions/slot"}}}`), ValidatorOptions{Loader: loader})
	if err != nil {
		t.Fatal(err)
	}
	if err := withRef.Validate(mustParse(t, `{"s":"x"}`)); err == nil {
		t.Error("aug: reference not applied")
	}
}

func TestSkeleton(t *testing.T) {
	for _, c := range []struct{ schema, want string }{
		{`{"type":"object","properties":{"decision":{"enum":["Approve","Reject"]},"note":{"type":"string"},"n":{"type":"integer"},"ok":{"type":"boolean"},"tags":{"type":"array"},"k":{"const":3}}}`,
			`{"decision":"Approve","note":"…","n":0,"ok":true,"tags":[],"k":3}`},
		{`{"properties":{"a":{"properties":{"b":{"type":"number"}}}}}`, `{"a":{"b":0}}`},
		{`{}`, `"…"`},
	} {
		s, err := jsonv.Parse([]byte(c.schema))
		if err != nil {
			t.Fatal(err)
		}
		if got := string(jsonv.Marshal(Skeleton(s))); got != c.want {
			t.Errorf("Skeleton(%s) = %s, want %s", c.schema, got, c.want)
		}
	}
}

// TestReadBounds: a device, a directory and a document past a bound are
// refused at once, each with an error naming the file; a pipe is read up
// to MaxBytes.
func TestReadBounds(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.json")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	// A sparse file: past the bound without writing it.
	if err := f.Truncate(MaxBytes + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	deep := filepath.Join(dir, "deep.json")
	if err := os.WriteFile(deep, []byte(strings.Repeat("[", MaxDepth+1)+strings.Repeat("]", MaxDepth+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	many := filepath.Join(dir, "many.json")
	if err := os.WriteFile(many, []byte("["+strings.Repeat("0,", MaxValues)+"0]"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ file, want string }{
		{"/dev/zero", "/dev/zero: /: cannot read: it is a device, not a file (only regular files and pipes are read)"},
		{dir, dir + ": /: cannot read: it is a directory, not a file"},
		{big, big + ": /: too large: 4194305 bytes, over the limit of 4194304 bytes (4 MiB) for one document"},
		{deep, deep + ": " + strings.Repeat("/0", MaxDepth) + ": too large: arrays and objects nest more than 64 levels deep, over the limit for one document"},
		{many, many + ": /1048575: too large: the document holds more than 1048576 values, over the limit for one document"},
	}
	for _, tt := range tests {
		_, err := ReadFile(tt.file)
		if err == nil || err.Error() != tt.want {
			t.Errorf("ReadFile(%s) = %v\nwant %s", tt.file, err, tt.want)
		}
	}
	// A named pipe no one writes to is refused at once, not waited on for
	// ever; one with a writer is read.
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := ReadFile(fifo); done <- err }()
	select {
	case err := <-done:
		if want := fifo + ": /: cannot read: it is a named pipe that no one writes to (open it for writing before reading it)"; err == nil || err.Error() != want {
			t.Errorf("ReadFile(a pipe without a writer) = %v\nwant %s", err, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ReadFile waits for a writer of a named pipe")
	}
	// A pipe that was written to, as a shell's <(command) gives it.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w.Write([]byte(`{"a": 2}`))
	w.Close()
	if v, err := ReadFile(fmt.Sprintf("/dev/fd/%d", r.Fd())); err != nil || v.Lookup("a").Literal() != "2" {
		t.Errorf("ReadFile(/dev/fd/N) = %v, %v", v, err)
	}
	// Standard input, a pipe: read up to the bound, then refused.
	_, err = Read("<stdin>", zeros{})
	if want := "<stdin>: /: too large: over the limit of 4194304 bytes (4 MiB) for one document"; err == nil || err.Error() != want {
		t.Errorf("Read(zeros) = %v, want %s", err, want)
	}
	if v, err := Read("<stdin>", strings.NewReader(`{"a": 1}`)); err != nil || v.Lookup("a").Literal() != "1" {
		t.Errorf("Read = %v, %v", v, err)
	}
}

// zeros is an endless input.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestCheckName: names with control, bidirectional or invisible characters
// are refused, saying which; readable names pass, in any script.
func TestCheckName(t *testing.T) {
	tests := []struct{ name, want string }{
		{"identifyParticipants", ""},
		{"step2_fetch_availability_Activity", ""},
		{"Определить участников", ""},
		{"会議を計画", ""},
		{"a b", ""},
		{"a\x00b", "holds U+0000, a control character"},
		{"tab\there", "holds U+0009, a control character"},
		{"a\u202eb", "holds U+202E, a bidirectional text control"},
		{"a\u2066b", "holds U+2066, a bidirectional text control"},
		{"a\u200fb", "holds U+200F, a bidirectional text control"},
		{"a\u061cb", "holds U+061C, a bidirectional text control"},
		{"a\u200bb", "holds U+200B, an invisible character"},
		{"\ufeffa", "holds U+FEFF, an invisible character"},
		{"a\u3164", "holds U+3164, an invisible character"},
		{"a\ufe0f", "holds U+FE0F, an invisible character"},
		{"a\u2028b", "holds U+2028, an invisible character"},
		{"a\u00a0b", "holds U+00A0, a space other than U+0020"},
	}
	for _, tt := range tests {
		err := CheckName(tt.name)
		if got := fmt.Sprint(err); (tt.want == "" && err != nil) || (tt.want != "" && got != tt.want) {
			t.Errorf("CheckName(%q) = %v, want %q", tt.name, err, tt.want)
		}
	}
}
