package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// markdownLink is a link or an image in Markdown: [text](target).
var markdownLink = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)\)`)

// TestDocsLinks: every relative link of the README, of docs/ and of the
// examples' READMEs leads to a file or a directory of the repository, and a
// #fragment to a heading of the page it names.
func TestDocsLinks(t *testing.T) {
	root := repoRoot(t)
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	examples, err := filepath.Glob(filepath.Join(root, "examples", "*", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append(append(pages, examples...), filepath.Join(root, "README.md"))
	anchors := map[string]map[string]bool{} // by page: its headings' anchors
	headings := func(page string) map[string]bool {
		if a, ok := anchors[page]; ok {
			return a
		}
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		a := map[string]bool{}
		seen := map[string]int{}
		for _, line := range proseLines(string(b)) {
			text, ok := strings.CutPrefix(line, "#")
			if !ok {
				continue
			}
			id := anchor(strings.TrimLeft(text, "#"))
			if n := seen[id]; n > 0 {
				a[id+"-"+strconv.Itoa(n)] = true
			} else {
				a[id] = true
			}
			seen[id]++
		}
		anchors[page] = a
		return a
	}
	checked := 0
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, page)
		for _, line := range proseLines(string(b)) {
			for _, m := range markdownLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				checked++
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, frag, _ := strings.Cut(target, "#")
				dest := page
				if path != "" {
					dest = filepath.Join(filepath.Dir(page), filepath.FromSlash(path))
					if _, err := os.Stat(dest); err != nil {
						t.Errorf("%s: the link %s leads nowhere", rel, target)
						continue
					}
				}
				if frag != "" && strings.HasSuffix(dest, ".md") && !headings(dest)[frag] {
					t.Errorf("%s: the link %s names no heading of %s", rel, target, filepath.Base(dest))
				}
			}
		}
	}
	if checked < len(pages) {
		t.Errorf("%d links in %d pages: the pages or the link pattern are not what this test reads", checked, len(pages))
	}
}

// proseLines are the lines of a Markdown page outside its fenced blocks.
func proseLines(page string) []string {
	var out []string
	fenced := false
	for _, line := range strings.Split(page, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out = append(out, line)
		}
	}
	return out
}

// anchor is the fragment GitHub gives a heading: lower case, without
// punctuation but hyphens, spaces as hyphens.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestDocsPackages: the package table of docs/architecture.md names every
// package of the module but the examples — the module's root as `vibe`,
// each internal package in the internal row — and names no package that
// is not there.
func TestDocsPackages(t *testing.T) {
	root := repoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	var table, internal string // the table's first cells; the internal row
	for _, line := range strings.Split(string(b), "\n") {
		cells := strings.Split(line, " | ")
		if !strings.HasPrefix(line, "| ") || len(cells) < 2 {
			continue
		}
		if strings.HasPrefix(line, "| `internal/…`") {
			internal = line
			continue
		}
		table += cells[0] + "\n"
	}
	if table == "" || internal == "" {
		t.Fatal("docs/architecture.md has no package table with an internal row")
	}

	packages := map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
			rel, _ := filepath.Rel(root, filepath.Dir(path))
			packages[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !packages["compile"] || !packages["internal/watch"] {
		t.Fatalf("the walk of %s found no package compile or internal/watch: %v", root, packages)
	}
	for pkg := range packages {
		switch {
		case pkg == "examples" || strings.HasPrefix(pkg, "examples/"):
		case pkg == ".":
			if !strings.Contains(table, "[`vibe`]") {
				t.Error("docs/architecture.md's package table has no row for the module's root, `vibe`")
			}
		case strings.HasPrefix(pkg, "internal/"):
			if !strings.Contains(internal, "`"+strings.TrimPrefix(pkg, "internal/")+"`") {
				t.Errorf("docs/architecture.md's internal row does not name %s", pkg)
			}
		case !strings.Contains(table, "[`"+pkg+"`]"):
			t.Errorf("docs/architecture.md's package table has no row for %s", pkg)
		}
	}
	for _, m := range regexp.MustCompile("\\[`([^`]+)`\\]").FindAllStringSubmatch(table, -1) {
		if pkg := m[1]; pkg != "vibe" && pkg != "examples" && !packages[pkg] {
			t.Errorf("docs/architecture.md's package table names %s, which is no package", pkg)
		}
	}
}
