package registry

import (
	"fmt"
	"io/fs"
	"strconv"
	"strings"
)

// Scheme is the URI scheme of registry documents.
const Scheme = "aug"

// URI is a parsed registry URI: aug:<path>[:<version>][#<fragment>].
type URI struct {
	Path     string // slash-separated, without a leading "/" or ".json"
	Version  int    // 0: the latest
	Fragment string // without "#": "" for the whole document, "/…" a JSON Pointer, else a step name
}

// IsURI reports whether s looks like a registry URI (starts with "aug:").
func IsURI(s string) bool { return strings.HasPrefix(s, Scheme+":") }

// ParseURI parses a registry URI.
func ParseURI(s string) (URI, error) {
	rest, ok := strings.CutPrefix(s, Scheme+":")
	if !ok {
		return URI{}, fmt.Errorf("%q is not a registry URI: it must start with %q", s, Scheme+":")
	}
	var u URI
	rest, u.Fragment, _ = strings.Cut(rest, "#")
	if i := strings.LastIndexByte(rest, ':'); i >= 0 {
		n, err := strconv.Atoi(rest[i+1:])
		if err != nil || n < 1 || rest[i+1] == '+' || rest[i+1] == '0' {
			return URI{}, fmt.Errorf("registry URI %q: version %q is not a positive integer", s, rest[i+1:])
		}
		u.Version = n
		rest = rest[:i]
	}
	u.Path = strings.TrimPrefix(rest, "/")
	u.Path = strings.TrimSuffix(u.Path, ".json")
	if u.Path == "" {
		return URI{}, fmt.Errorf("registry URI %q has no path", s)
	}
	if !fs.ValidPath(u.Path) || strings.ContainsAny(u.Path, "@\\") {
		return URI{}, fmt.Errorf("registry URI %q: path %q must be slash-separated names without \".\", \"..\", \"@\" or empty parts", s, u.Path)
	}
	return u, nil
}

// String returns the canonical form: aug:<path>[:<N>][#<fragment>].
func (u URI) String() string {
	s := Scheme + ":" + u.Path
	if u.Version > 0 {
		s += ":" + strconv.Itoa(u.Version)
	}
	if u.Fragment != "" {
		s += "#" + u.Fragment
	}
	return s
}

// Document returns u without its fragment.
func (u URI) Document() URI {
	u.Fragment = ""
	return u
}

// File returns the file name u maps to inside a registry directory, for a
// versioned URI or an unversioned one whose .json file exists.
func (u URI) File() string {
	if u.Version > 0 {
		return u.Path + "@" + strconv.Itoa(u.Version) + ".json"
	}
	return u.Path + ".json"
}
