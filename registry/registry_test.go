package registry

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

func TestParseURI(t *testing.T) {
	tests := []struct {
		in   string
		want URI
		err  string
	}{
		{"aug:instructions/identifyParticipants", URI{Path: "instructions/identifyParticipants"}, ""},
		{"aug:processes/schedule-meeting:1", URI{Path: "processes/schedule-meeting", Version: 1}, ""},
		{"aug:/vibes/macros/StartProcess:1", URI{Path: "vibes/macros/StartProcess", Version: 1}, ""},
		{"aug:processes/schedule-meeting:1#fetchAvailability", URI{Path: "processes/schedule-meeting", Version: 1, Fragment: "fetchAvailability"}, ""},
		{"aug:p#/properties/a", URI{Path: "p", Fragment: "/properties/a"}, ""},
		{"aug:p:12", URI{Path: "p", Version: 12}, ""},
		{"http://x", URI{}, "is not a registry URI"},
		{"aug:", URI{}, "has no path"},
		{"aug:p:0", URI{}, "not a positive integer"},
		{"aug:p:01", URI{}, "not a positive integer"},
		{"aug:p:x", URI{}, "not a positive integer"},
		{"aug:../p", URI{}, "must be slash-separated"},
		{"aug:a//b", URI{}, "must be slash-separated"},
		{"aug:p@2", URI{}, "must be slash-separated"},
	}
	for _, tt := range tests {
		got, err := ParseURI(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseURI(%q) error %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseURI(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
	if got := (URI{Path: "a/b", Version: 2, Fragment: "x"}).String(); got != "aug:a/b:2#x" {
		t.Errorf("String = %s", got)
	}
}

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestFileMapping is the contract tools outside Vibe rely on.
func TestFileMapping(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"vibes/macros/StartProcess@1.json":  `{"v": "StartProcess@1"}`,
		"vibes/macros/StartProcess@2.json":  `{"v": "StartProcess@2"}`,
		"vibes/macros/StartProcess@10.json": `{"v": "StartProcess@10"}`,
		"processes/p.json":                  `{"v": "p"}`,
		"processes/p@3.json":                `{"v": "p@3"}`,
		"instructions/x.json":               `{"v": "x"}`,
	})
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ uri, want, file string }{
		{"aug:/vibes/macros/StartProcess:1", "StartProcess@1", "vibes/macros/StartProcess@1.json"},
		{"aug:vibes/macros/StartProcess:2", "StartProcess@2", "vibes/macros/StartProcess@2.json"},
		{"aug:vibes/macros/StartProcess", "StartProcess@10", "vibes/macros/StartProcess@10.json"}, // the highest, numerically
		{"aug:processes/p", "p", "processes/p.json"},                                              // the plain file before any @N
		{"aug:processes/p:3", "p@3", "processes/p@3.json"},
		{"aug:instructions/x", "x", "instructions/x.json"},
	}
	for _, tt := range tests {
		d, err := r.Document(tt.uri)
		if err != nil {
			t.Errorf("%s: %v", tt.uri, err)
			continue
		}
		if got := d.Value.Lookup("v").Str(); got != tt.want {
			t.Errorf("%s read %s, want %s", tt.uri, got, tt.want)
		}
		if d.File != filepath.Join(dir, tt.file) {
			t.Errorf("%s: File %s, want %s", tt.uri, d.File, tt.file)
		}
	}
	for _, uri := range []string{"aug:processes/p:1", "aug:instructions/x:1", "aug:nothing/here"} {
		if _, err := r.Document(uri); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s: err %v, want ErrNotFound", uri, err)
		}
	}
	_, err = r.Document("aug:vibes/macros/StartProcess:5")
	if err == nil || !strings.Contains(err.Error(), "versions present: 1, 2, 10") {
		t.Errorf("missing version error should list the versions: %v", err)
	}
}

func TestAddFromGo(t *testing.T) {
	var r Registry // the zero Registry works
	v, _ := jsonv.Parse([]byte(`{"title": "one"}`))
	if err := r.Add("aug:instructions/a:1", v); err != nil {
		t.Fatal(err)
	}
	v2, _ := jsonv.Parse([]byte(`{"title": "two"}`))
	r.Add("aug:instructions/a:2", v2)
	d, err := r.Document("aug:instructions/a")
	if err != nil || d.Value.Lookup("title").Str() != "two" || d.URI.Version != 2 {
		t.Errorf("latest of added: %+v, %v", d, err)
	}
	if err := r.Add("aug:x#frag", v); err == nil {
		t.Error("Add with a fragment accepted")
	}
	// Added documents shadow files of the same URI.
	dir := writeFiles(t, map[string]string{"instructions/b.json": `{"title": "file"}`})
	fr, _ := Open(dir)
	fr.Add("aug:instructions/b", v)
	if d, _ := fr.Document("aug:instructions/b"); d.Value.Lookup("title").Str() != "one" {
		t.Error("an added document must replace the file")
	}
	if got := fr.Names("instructions"); !slices.Equal(got, []string{"b"}) {
		t.Errorf("Names = %q", got)
	}
}

func TestFragments(t *testing.T) {
	r := NewFS(fstest.MapFS{
		"processes/p@1.json": {Data: []byte(`{"properties": {
			"llmContext1": {"properties": {"identifyParticipants1": {"type": "object"}, "fetchAvailability": {"title": "f"}}},
			"llmContext2": {"properties": {"shared": {}}},
			"serverContext1": {"properties": {"shared": {}}}},
			"$defs": {"LLM_x": {"properties": {"fetchAvailability": {"title": "copy"}}}}}`)},
	}, "mem")
	tgt, err := r.Resolve("aug:processes/p:1#fetchAvailability")
	if err != nil {
		t.Fatal(err)
	}
	if tgt.Pointer != "/properties/llmContext1/properties/fetchAvailability" || tgt.Value.Lookup("title").Str() != "f" {
		t.Errorf("#name resolved to %s %s ($defs must not count)", tgt.Pointer, tgt.Value)
	}
	if tgt, err := r.Resolve("aug:processes/p#/properties/llmContext2"); err != nil || tgt.Pointer != "/properties/llmContext2" {
		t.Errorf("#/pointer: %v %v", tgt.Pointer, err)
	}
	_, err = r.Resolve("aug:processes/p#shared")
	if err == nil || !strings.Contains(err.Error(), "/properties/llmContext2/properties/shared, /properties/serverContext1/properties/shared") {
		t.Errorf("ambiguous name must list the matches: %v", err)
	}
	if _, err := r.Resolve("aug:processes/p#identifyParticipants"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown step: %v", err)
	}
	// A pointer that names nothing is not found, as a name is: the API
	// answers 404 for either.
	for _, ref := range []string{"aug:processes/p#/nope", "aug:processes/p#/properties/llmContext1/properties/x", "aug:processes/p#/properties/llmContext1/required/3"} {
		_, err := r.Resolve(ref)
		if !errors.Is(err, ErrNotFound) || !errors.Is(err, jsonv.ErrNotFound) || !strings.HasPrefix(err.Error(), ref+": fragment #") {
			t.Errorf("%s: %v", ref, err)
		}
	}
}

func TestMalformedFile(t *testing.T) {
	dir := writeFiles(t, map[string]string{"instructions/bad.json": "{\n  \"a\": {\"b\": tru}\n}"})
	r, _ := Open(dir)
	_, err := r.Document("aug:instructions/bad")
	var e *schema.Error
	if !errors.As(err, &e) || e.File != filepath.Join(dir, "instructions/bad.json") || e.Path != "/a/b" || !strings.Contains(e.Message, "line 2") {
		t.Errorf("err = %v, want a located error in the file", err)
	}
	if _, err := Open(filepath.Join(dir, "missing")); err == nil {
		t.Error("Open of a missing directory succeeded")
	}
}

func TestConcurrentUse(t *testing.T) {
	dir := writeFiles(t, map[string]string{"instructions/a.json": `{}`, "instructions/b@1.json": `{}`})
	r, _ := Open(dir)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			for _, uri := range []string{"aug:instructions/a", "aug:instructions/b", "aug:instructions/b:1"} {
				if _, err := r.Document(uri); err != nil {
					t.Error(err)
				}
			}
			if i%2 == 0 {
				r.Add("aug:instructions/c", jsonv.NullValue())
			}
			r.Names("instructions")
		})
	}
	wg.Wait()
}

// TestUnreadableFile: a registry entry that is a link to a device, a
// directory, or a file past schema.MaxBytes is refused with an error
// naming it, and nothing is read.
func TestUnreadableFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "instructions", "folder.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "instructions", "zero.json")); err != nil {
		t.Fatal(err)
	}
	// A link out of the registry, and one within it.
	secret := filepath.Join(t.TempDir(), "secret.json")
	if err := os.WriteFile(secret, []byte(`{"password": "hunter2"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(dir, "instructions", "leak.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "instructions", "real.json"), []byte(`{"title": "real"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real.json", filepath.Join(dir, "instructions", "alias.json")); err != nil {
		t.Fatal(err)
	}

	f, err := os.Create(filepath.Join(dir, "instructions", "huge.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 40); err != nil { // sparse: a terabyte that takes no room
		t.Fatal(err)
	}
	f.Close()
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for uri, want := range map[string]string{
		"aug:instructions/zero":   "/instructions/zero.json: /: cannot read: it is a link out of the registry's directory",
		"aug:instructions/leak":   "/instructions/leak.json: /: cannot read: it is a link out of the registry's directory",
		"aug:instructions/folder": "/instructions/folder.json: /: cannot read: it is a directory, not a file",
		"aug:instructions/huge":   "/instructions/huge.json: /: too large: 1099511627776 bytes, over the limit of 4194304 bytes (4 MiB) for one document",
	} {
		_, err := r.Document(uri)
		var located *schema.Error
		if !errors.As(err, &located) || err.Error() != dir+want {
			t.Errorf("%s: %v\nwant %s", uri, err, dir+want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: the error shows what the link points to: %v", uri, err)
		}
	}
	if d, err := r.Document("aug:instructions/alias"); err != nil || d.Value.Lookup("title").Str() != "real" {
		t.Errorf("a link within the registry: %v %v", d, err)
	}
}
