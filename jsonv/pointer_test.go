package jsonv

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestPointer(t *testing.T) {
	p := PointerTo("a/b", "c~d", "0")
	if p != "/a~1b/c~0d/0" {
		t.Fatalf("PointerTo = %s", p)
	}
	if got := slices.Collect(p.Tokens()); !slices.Equal(got, []string{"a/b", "c~d", "0"}) {
		t.Errorf("Tokens = %q", got)
	}
	if p.Parent() != "/a~1b/c~0d" || p.Last() != "0" || Pointer("").Parent() != "" || Pointer("").String() != "/" {
		t.Error("Parent/Last/String")
	}
	for _, bad := range []string{"a", "/~2", "/x~"} {
		if _, err := ParsePointer(bad); err == nil {
			t.Errorf("ParsePointer(%q) accepted", bad)
		}
	}
	if _, err := ParsePointer("/a/~0/~1"); err != nil {
		t.Error(err)
	}
}

func TestAtAndSet(t *testing.T) {
	v := mustParse(t, `{"a":{"b":[10,{"c":"x"}]},"k/l":1}`)
	tests := []struct {
		p       Pointer
		want    string
		missing bool
	}{
		{"", `{"a":{"b":[10,{"c":"x"}]},"k/l":1}`, false},
		{"/a/b/0", `10`, false},
		{"/a/b/1/c", `"x"`, false},
		{"/k~1l", `1`, false},
		{"/a/x", "", true},
		{"/a/b/2", "", true},
		{"/a/b/01", "", true},
		{"/a/b/0/z", "", true},
	}
	for _, tt := range tests {
		got, err := v.At(tt.p)
		if tt.missing {
			if !errors.Is(err, ErrNotFound) {
				t.Errorf("At(%s) err = %v, want ErrNotFound", tt.p, err)
			}
			continue
		}
		if err != nil || got.String() != tt.want && string(Marshal(got)) != tt.want {
			t.Errorf("At(%s) = %s, %v; want %s", tt.p, Marshal(got), err, tt.want)
		}
	}

	v, err := Set(v, "/a/b/-", StringValue("new"))
	if err != nil {
		t.Fatal(err)
	}
	v, _ = Set(v, "/a/b/0", IntValue(11))
	v, _ = Set(v, "/a/d", BoolValue(true))
	if got := string(Marshal(v)); got != `{"a":{"b":[11,{"c":"x"},"new"],"d":true},"k/l":1}` {
		t.Errorf("after Set: %s", got)
	}
	if _, err := Set(v, "/nope/x", NullValue()); !errors.Is(err, ErrNotFound) {
		t.Errorf("Set through a missing member: %v", err)
	}
	if _, err := Set(v, "/k~1l/x", NullValue()); !errors.Is(err, ErrNotFound) {
		t.Errorf("Set inside a number: %v", err)
	}
	if root, _ := Set(v, "", IntValue(1)); root.Literal() != "1" {
		t.Error("Set of the root")
	}
}

func TestSetAll(t *testing.T) {
	tests := []struct {
		name, root string
		p          Pointer
		want, err  string
	}{
		{"adds the objects on the way", `{"z":1}`, "/a/b/c", `{"z":1,"a":{"b":{"c":true}}}`, ""},
		{"keeps what is there", `{"a":{"x":1}}`, "/a/b", `{"a":{"x":1,"b":true}}`, ""},
		{"replaces the last member", `{"a":{"b":1}}`, "/a/b", `{"a":{"b":true}}`, ""},
		{"the root", `{"a":1}`, "", `true`, ""},
		{"a number on the way", `{"a":1}`, "/a/b", "", "/a: number, not an object"},
		{"an array on the way", `{"a":[]}`, "/a/0/b", "", "/a: array, not an object"},
		{"a root that is no object", `[1]`, "/a", "", "/: array, not an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SetAll(mustParse(t, tt.root), tt.p, BoolValue(true))
			if tt.err != "" {
				if err == nil || !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("err = %v, want %q", err, tt.err)
				}
				if string(Marshal(got)) != string(Marshal(mustParse(t, tt.root))) {
					t.Errorf("a failed SetAll changed the root: %s", Marshal(got))
				}
				return
			}
			if err != nil || string(Marshal(got)) != tt.want {
				t.Errorf("SetAll = %s, %v; want %s", Marshal(got), err, tt.want)
			}
		})
	}
}

func TestWalk(t *testing.T) {
	v := mustParse(t, `{"a":[1,{"b":2}],"skip":{"x":1},"c":3}`)
	var seen []string
	err := Walk(v, func(p Pointer, v Value) error {
		seen = append(seen, string(p))
		if p == "/skip" {
			return SkipChildren
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"", "/a", "/a/0", "/a/1", "/a/1/b", "/skip", "/c"}
	if !slices.Equal(seen, want) {
		t.Errorf("visited %q, want %q", seen, want)
	}
	stop := errors.New("stop")
	if err := Walk(v, func(p Pointer, v Value) error {
		if p == "/a/0" {
			return stop
		}
		return nil
	}); err != stop {
		t.Errorf("Walk returned %v, want the callback's error", err)
	}
}
