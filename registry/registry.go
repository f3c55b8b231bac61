package registry

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

// ErrNotFound is wrapped by every error for a URI that names no document or
// a fragment that names nothing.
var ErrNotFound = errors.New("not found")

// ErrNoRegistry is wrapped by the errors of a reference to the registry
// (an aug: URI, an instruction name) when no registry was given.
var ErrNoRegistry = errors.New("no registry given")

// Document is one registry document.
type Document struct {
	// URI is the document's canonical URI, with the version it resolved to
	// (none for an unversioned file).
	URI URI
	// File is where the document came from, for error messages: the file
	// path as the registry directory was given, or the URI for a document
	// added from Go.
	File string
	// Value is the parsed document. It is shared: Clone it before a change.
	Value jsonv.Value
}

// Target is what a URI with a fragment resolved to.
type Target struct {
	Document *Document
	Pointer  jsonv.Pointer // where in the document
	Value    jsonv.Value   // the value at Pointer (shared)
}

// Registry maps "aug:" URIs to documents. The zero Registry is empty and
// ready for Add; Open reads a directory. A Registry is safe for concurrent
// use.
type Registry struct {
	fsys fs.FS  // the directory, or nil
	dir  string // the directory as given, to name files in errors

	mu   sync.Mutex
	docs map[key]*Document // read or added documents
}

// key names one document: an exact version, or 0 for the unversioned file.
type key struct {
	path    string
	version int
}

// Open returns a registry over the directory dir. Files are read when first
// needed, and only within dir: a symbolic link may point to another file
// of the registry, but one that leads out of it is refused like a missing
// file, whatever it points to (os.Root).
func Open(dir string) (*Registry, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("registry: %s is not a directory", dir)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	return &Registry{fsys: root.FS(), dir: dir}, nil
}

// NewFS returns a registry over fsys (such as an embed.FS); name stands for
// it in error messages.
func NewFS(fsys fs.FS, name string) *Registry {
	return &Registry{fsys: fsys, dir: name}
}

// Dir returns the directory the registry reads, or "".
func (r *Registry) Dir() string { return r.dir }

// Add puts a document in the registry under uri (without a fragment). It
// replaces a document of the same URI, file or not.
func (r *Registry) Add(uri string, v jsonv.Value) error {
	u, err := ParseURI(uri)
	if err != nil {
		return err
	}
	if u.Fragment != "" {
		return fmt.Errorf("registry: cannot add %s: a document URI has no fragment", uri)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.docs == nil {
		r.docs = make(map[key]*Document)
	}
	r.docs[key{u.Path, u.Version}] = &Document{URI: u, File: u.String(), Value: v}
	return nil
}

// Document returns the document uri names; a fragment is ignored.
func (r *Registry) Document(uri string) (*Document, error) {
	u, err := ParseURI(uri)
	if err != nil {
		return nil, err
	}
	return r.document(u)
}

func (r *Registry) document(u URI) (*Document, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.docs == nil {
		r.docs = make(map[key]*Document)
	}
	k := key{u.Path, u.Version}
	if d, ok := r.docs[k]; ok {
		return d, nil
	}
	if d, err := r.read(k); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return d, err
	}
	if u.Version > 0 {
		why := fmt.Sprintf("no file %s", r.filename(u.File()))
		if vs := r.versions(u.Path); len(vs) > 0 {
			why += fmt.Sprintf(" (versions present: %s)", strings.Join(vs, ", "))
		}
		return nil, r.notFound(u, why)
	}
	// The latest version: the highest @N, added or on disk.
	best := 0
	for kk := range r.docs {
		if kk.path == u.Path && kk.version > best {
			best = kk.version
		}
	}
	for _, n := range r.fileVersions(u.Path) {
		best = max(best, n)
	}
	if best == 0 {
		return nil, r.notFound(u, fmt.Sprintf("no file %s or %s", r.filename(u.Path+".json"), r.filename(u.Path+"@<N>.json")))
	}
	k = key{u.Path, best}
	if d, ok := r.docs[k]; ok {
		return d, nil
	}
	return r.read(k)
}

// read loads one file into the cache; r.mu is held.
func (r *Registry) read(k key) (*Document, error) {
	if r.fsys == nil {
		return nil, fs.ErrNotExist
	}
	u := URI{Path: k.path, Version: k.version}
	file := r.filename(u.File())
	// Read like any input: a regular file within schema.MaxBytes, so that a
	// registry entry linked to a device or a huge file is refused, not read.
	v, err := schema.ReadFileFS(r.fsys, u.File(), file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fs.ErrNotExist
	}
	if se, ok := errors.AsType[*schema.Error](err); ok && se.Err != nil && r.linksOut(u.File()) {
		// os.Root refused to follow it; say why in words, and nothing of
		// where it leads.
		return nil, &schema.Error{File: file, Message: "cannot read: it is a link out of the registry's directory"}
	}
	if err != nil {
		return nil, err
	}
	d := &Document{URI: u, File: file, Value: v}
	r.docs[k] = d
	return d, nil
}

// linksOut reports whether name, in the registry's directory, is a
// symbolic link that the registry's os.Root refuses to follow: one that
// leads out of the directory.
func (r *Registry) linksOut(name string) bool {
	if r.dir == "" {
		return false
	}
	fi, err := os.Lstat(filepath.Join(r.dir, filepath.FromSlash(name)))
	return err == nil && fi.Mode()&fs.ModeSymlink != 0
}

// versions lists the versions of path present, added or on disk; r.mu is held.
func (r *Registry) versions(p string) []string {
	ns := r.fileVersions(p)
	for k := range r.docs {
		if k.path == p && k.version > 0 {
			ns = append(ns, k.version)
		}
	}
	slices.Sort(ns)
	ns = slices.Compact(ns)
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = strconv.Itoa(n)
	}
	return out
}

// fileVersions lists the N of every <path>@N.json on disk.
func (r *Registry) fileVersions(p string) []int {
	if r.fsys == nil {
		return nil
	}
	entries, err := fs.ReadDir(r.fsys, path.Dir(p))
	if err != nil {
		return nil
	}
	base := path.Base(p) + "@"
	var vs []int
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), base)
		if !ok || e.IsDir() {
			continue
		}
		if n, err := strconv.Atoi(strings.TrimSuffix(rest, ".json")); err == nil && n > 0 && strings.HasSuffix(rest, ".json") {
			vs = append(vs, n)
		}
	}
	return vs
}

func (r *Registry) filename(rel string) string {
	if r.dir == "" {
		return rel
	}
	return filepath.Join(r.dir, filepath.FromSlash(rel))
}

func (r *Registry) notFound(u URI, why string) error {
	where := "the registry"
	if r.fsys == nil {
		where = "the registry (no directory; documents are added from Go)"
	}
	return fmt.Errorf("%s is not in %s: %s: %w", u.Document(), where, why, ErrNotFound)
}

// Resolve returns what ref names: a document, or with a fragment the part
// of it the fragment addresses.
func (r *Registry) Resolve(ref string) (Target, error) {
	u, err := ParseURI(ref)
	if err != nil {
		return Target{}, err
	}
	d, err := r.document(u)
	if err != nil {
		return Target{}, err
	}
	p, err := Fragment(d.Value, u.Fragment)
	if err != nil {
		return Target{}, fmt.Errorf("%s: %w", u, err)
	}
	v, _ := d.Value.At(p)
	return Target{Document: d, Pointer: p, Value: v}, nil
}

// Fragment returns the pointer a URI fragment (without "#") addresses in
// doc: "" the whole document, "/…" a JSON Pointer, else the one property of
// that name. Properties are searched in every "properties" object except
// inside "$defs", which holds compiled copies of steps.
func Fragment(doc jsonv.Value, frag string) (jsonv.Pointer, error) {
	if frag == "" {
		return "", nil
	}
	if frag[0] == '/' {
		p, err := jsonv.ParsePointer(frag)
		if err != nil {
			return "", err
		}
		if _, err := doc.At(p); err != nil {
			return "", fmt.Errorf("fragment #%s: %w", frag, missing{err})
		}
		return p, nil
	}
	var found []jsonv.Pointer
	schema.Walk(doc, func(p jsonv.Pointer, s jsonv.Value) error {
		if strings.HasPrefix(string(p), "/$defs/") || strings.HasPrefix(string(p), "/definitions/") {
			return jsonv.SkipChildren
		}
		if schema.Properties(s).Has(frag) {
			found = append(found, p.Append("properties").Append(frag))
		}
		return nil
	})
	switch len(found) {
	case 0:
		return "", fmt.Errorf("no step named %q: %w", frag, ErrNotFound)
	case 1:
		return found[0], nil
	}
	paths := make([]string, len(found))
	for i, p := range found {
		paths[i] = string(p)
	}
	return "", fmt.Errorf("step name %q is ambiguous: it names %d properties (%s); use a JSON Pointer fragment", frag, len(found), strings.Join(paths, ", "))
}

// missing is a JSON Pointer that names nothing in a document: a
// jsonv.ErrNotFound, and an ErrNotFound of the registry too.
type missing struct{ err error }

func (m missing) Error() string   { return m.err.Error() }
func (m missing) Unwrap() []error { return []error{m.err, ErrNotFound} }

// Names lists the documents under folder (such as "instructions"), as paths
// relative to it without ".json" or "@N", sorted and without duplicates.
func (r *Registry) Names(folder string) []string {
	folder = strings.Trim(folder, "/")
	var names []string
	add := func(rel string) {
		rel = strings.TrimSuffix(rel, ".json")
		if i := strings.LastIndexByte(rel, '@'); i >= 0 {
			rel = rel[:i]
		}
		names = append(names, rel)
	}
	r.mu.Lock()
	for k := range r.docs {
		if rel, ok := strings.CutPrefix(k.path, folder+"/"); ok {
			add(rel)
		}
	}
	r.mu.Unlock()
	if r.fsys != nil {
		fs.WalkDir(r.fsys, folder, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".json") {
				add(strings.TrimPrefix(p, folder+"/"))
			}
			return nil
		})
	}
	slices.Sort(names)
	return slices.Compact(names)
}
