package wfid

import (
	"regexp"
	"testing"
)

func TestSlug(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"Schedule a meeting", "schedule-a-meeting"},
		{"  --Billing Report 2--  ", "billing-report-2"},
		{"Отчёт", "process"},
		{"", "process"},
		{"a/b\x00c\u202ed", "a-b-c-d"},
		{"abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz", "abcdefghijklmnopqrstuvwxyzabcdefghijklmn"},
	} {
		if got := Slug(c.in, "process"); got != c.want {
			t.Errorf("Slug(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestNew(t *testing.T) {
	a, b := New("p"), New("p")
	if !regexp.MustCompile(`^p-[0-9a-f]{8}$`).MatchString(a) || a == b {
		t.Errorf("New gave %q and %q", a, b)
	}
}

func TestDerived(t *testing.T) {
	a := Derived("x", 4, "wf", "/", 3)
	if a != Derived("x", 4, "wf", "/", 3) || a == Derived("x", 4, "wf", "/", 4) {
		t.Error("Derived must depend on its parts only")
	}
	if !regexp.MustCompile(`^x-[0-9a-f]{8}$`).MatchString(a) {
		t.Errorf("Derived gave %q", a)
	}
}
