package wfid

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// maxSlug bounds a slug, so that ids stay readable in a listing.
const maxSlug = 40

// Slug makes a name id-friendly: lower-case ASCII letters and digits, any
// other run of characters one "-", at most 40 characters; fallback when
// nothing is left.
func Slug(name, fallback string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			if b.Len() >= maxSlug {
				break
			}
			continue
		}
		dash = true
	}
	if b.Len() == 0 {
		return fallback
	}
	return b.String()
}

// New is a fresh id: prefix, "-", and 8 random hex digits
// (schedule-meeting-7f3a9c2e).
func New(prefix string) string {
	b := make([]byte, 4)
	rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// Derived is an id that is the same whenever it is derived from the same
// parts: prefix, "-", and hex digits of a hash of the parts (2·n digits).
// A workflow uses it for the children it starts, so that a replay names
// them as the first run did.
func Derived(prefix string, n int, parts ...any) string {
	sum := sha256.Sum256([]byte(fmt.Sprint(parts...)))
	return prefix + "-" + hex.EncodeToString(sum[:n])
}
