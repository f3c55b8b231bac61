package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	goldenfile "github.com/augceo/vibe/internal/golden"
)

// run calls Main in-process and returns its status and output.
func run(t *testing.T, stdin string, args ...string) (status int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("vibe %s panicked: %v", strings.Join(args, " "), p)
		}
	}()
	status = Main(args, strings.NewReader(stdin), &out, &errOut)
	return status, out.String(), errOut.String()
}

// golden compares got with the file name, or rewrites it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	goldenfile.Check(t, name, []byte(got))
}

// located is the shape of every error line: "FILE: /json/path: message" or,
// for a pipeline expression, "FILE:LINE:COLUMN: message".
var located = regexp.MustCompile(`^(\S[^:]*: /\S*: \S.*|<pipeline>:\d+:\d+: \S.*)$`)

// TestBadInputs runs every input of the bad-input catalogue
// (testdata/bad/<command>/<case>.{json,pipe,args}) through the command line
// and checks that it exits 1, prints nothing on stdout, prints every error
// on its own line naming the file and the JSON path (or line and column),
// and prints exactly the expected errors in <case>.err. A case with a
// <case>.status file is a bad command line instead: it exits with that
// status (2) and prints the usage error.
func TestBadInputs(t *testing.T) {
	inputs, err := filepath.Glob("testdata/bad/*/*")
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{} // case path without extension → input file
	for _, in := range inputs {
		ext := filepath.Ext(in)
		stem := strings.TrimSuffix(in, ext)
		switch ext {
		case ".args":
			cases[stem] = in // an .args file decides the command line
		case ".json", ".pipe":
			if _, ok := cases[stem]; !ok {
				cases[stem] = in
			}
		}
	}
	names := make([]string, 0, len(cases))
	for stem := range cases {
		names = append(names, stem)
	}
	sort.Strings(names)
	if len(names) < 30 {
		t.Errorf("the catalogue has %d cases, want at least 30", len(names))
	}
	for _, stem := range names {
		in := cases[stem]
		command := filepath.Base(filepath.Dir(in))
		t.Run(command+"/"+filepath.Base(stem), func(t *testing.T) {
			var args []string
			switch filepath.Ext(in) {
			case ".args":
				b, _ := os.ReadFile(in)
				args = strings.Fields(string(b))
			case ".pipe":
				b, _ := os.ReadFile(in)
				args = []string{command, "--registry", "testdata/registry", "--pipeline", strings.TrimSuffix(string(b), "\n")}
			default:
				args = []string{command, "--registry", "testdata/registry", in}
			}
			want := exitError
			if b, err := os.ReadFile(stem + ".status"); err == nil {
				if want, err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
					t.Fatal(err)
				}
			}
			status, stdout, stderr := run(t, "", args...)
			if status != want {
				t.Errorf("exit status %d, want %d; stderr:\n%s", status, want, stderr)
			}
			if stdout != "" {
				t.Errorf("printed on stdout:\n%s", stdout)
			}
			lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
			for _, l := range lines {
				if want == exitError && !located.MatchString(l) {
					t.Errorf("error line does not name a file and a JSON path (or line:column): %q", l)
				}
			}
			golden(t, stem+".err", stderr)
		})
	}
}
