package schema

import (
	"fmt"
	"strings"
	"unicode"
)

// CheckName reports a name that people could not read as written: one that
// holds a control character (NUL included), a bidirectional text control
// (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F, U+061C), or another
// invisible character (zero-width spaces and joiners, U+FEFF, variation
// selectors, fillers, separators other than the space). A step named so
// would show in a table, a log or a terminal as something it is not — or
// reorder the text around it ("Trojan Source") — so names that become
// steps, contexts and tools are checked. It returns nil for a readable name.
func CheckName(name string) error {
	for _, r := range name {
		if what := invisible(r); what != "" {
			return fmt.Errorf("holds %U, %s", r, what)
		}
	}
	return nil
}

// invisible says what kind of unreadable character r is, or "" when r is
// fine in a name.
func invisible(r rune) string {
	switch {
	case r == ' ':
		return ""
	case unicode.Is(unicode.Bidi_Control, r):
		return "a bidirectional text control"
	case unicode.IsControl(r):
		return "a control character"
	case unicode.Is(unicode.Cf, r), unicode.Is(unicode.Zl, r), unicode.Is(unicode.Zp, r),
		unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r), unicode.Is(unicode.Variation_Selector, r):
		return "an invisible character"
	case unicode.Is(unicode.Zs, r):
		return "a space other than U+0020"
	}
	return ""
}

// escapeInvisible writes the characters CheckName refuses as Go escapes
// (\x00, \u202e), so that an error line that quotes a bad name shows it
// and does not act on the terminal.
func escapeInvisible(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return invisible(r) != "" }) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if invisible(r) == "" {
			b.WriteRune(r)
			continue
		}
		q := fmt.Sprintf("%+q", string(r))
		b.WriteString(q[1 : len(q)-1])
	}
	return b.String()
}
