package api

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/registry"
)

// TestRefusedAtStart: what can be checked when a process or a batch is
// given is checked then — the process compiles, its schema is one the
// validator takes, its URI's fragment names something, one process is
// given — and refused with the located error, as 4xx; a batch so refused
// leaves nothing in the spool directory. The handler runs on the real
// process client and batch runner without an engine: a start that got past
// the checks would panic.
func TestRefusedAtStart(t *testing.T) {
	var reg registry.Registry
	if err := reg.Add("aug:processes/effect", mustJSON(t, `{"title": "Effect", "properties": {
		"draft": {"type": "object", "properties": {"text": {"type": "string"}}}}}`)); err != nil {
		t.Fatal(err)
	}
	pc := &process.Client{Registry: &reg}
	spool := filepath.Join(t.TempDir(), "batches")
	opts := quiet()
	opts.Batches = &batch.Runner{Client: &batch.Client{Processes: pc}, Dir: spool, Logger: slogDiscard()}
	h := Handler(pc, opts)

	inline := func(prop string) string {
		return `{"title": "T", "properties": {"a": {"type": "object", "properties": {"b": ` + prop + `}}}}`
	}
	tests := []struct {
		name    string
		process string // the "process" member, or "" for none
		extra   string // more members
		code    int
		msg     string // in the error
		file    string // the first detail's
		at      string
	}{
		{"a fragment that names nothing", `"aug:processes/effect#/nope/x"`, "", 404, `aug:processes/effect#/nope/x: fragment #/nope/x: /nope: no member "nope"`, "", ""},
		{"a step name that names nothing", `"aug:processes/effect#nope"`, "", 404, `no step named "nope"`, "", ""},
		{"a fragment that names no schema", `"aug:processes/effect#/title"`, "", 422, `aug:processes/effect#/title names a string, not a process schema`, "aug:processes/effect", "/title"},
		{"a pattern that is no regular expression", inline(`{"type": "string", "pattern": "(["}`), "", 422, `not a valid JSON Schema: '([' is not valid regex`, "process", "/properties/a/properties/b/pattern"},
		{"a type that is no type", inline(`{"type": "strng"}`), "", 422, `not a valid JSON Schema:`, "process", "/properties/a/properties/b/type"},
		{"a minimum that is no number", inline(`{"type": "integer", "minimum": "5"}`), "", 422, `not a valid JSON Schema: got string, want number`, "process", "/properties/a/properties/b/minimum"},
		{"a step named \"\"", `{"properties": {"": {"type": "object"}}}`, "", 422, `a step's name is empty`, "process", "/properties/"},
		{"a process that does not compile", `{"properties": {"a": {"references": ["nowhere"]}}}`, "", 422, `step "a" references "nowhere", which names no step`, "process", "/properties/a/references/0"},
		{"a pipeline that does not compile", "", `"pipeline": "\"x\" | Nope"`, 422, `unknown instruction "Nope"`, "<pipeline>", "1:7"},
		{"a process and a pipeline", `"aug:processes/effect"`, `"pipeline": "\"x\" | Draft"`, 400, `not both`, "", "/pipeline"},
	}
	for _, tt := range tests {
		var members []string
		if tt.process != "" {
			members = append(members, `"process": `+tt.process)
		}
		if tt.extra != "" {
			members = append(members, tt.extra)
		}
		for _, path := range []string{"/v1/processes", "/v1/batches"} {
			t.Run(tt.name+" "+path, func(t *testing.T) {
				body := "{" + strings.Join(members, ", ")
				if path == "/v1/batches" {
					body += `, "items": ["a comment"]`
				}
				body += "}"
				code, out, raw := call(t, h, "POST", path, body, "")
				if code != tt.code || !strings.Contains(fmt.Sprint(out["error"]), tt.msg) || out["path"] != tt.at {
					t.Errorf("%d %s\nwant %d %q at %q", code, raw, tt.code, tt.msg, tt.at)
				}
				if details, _ := out["details"].([]any); tt.file != "" && (len(details) == 0 || details[0].(map[string]any)["file"] != tt.file) {
					t.Errorf("details %v, want the first in file %q", details, tt.file)
				}
			})
		}
	}
	// The same over JSONL, the process in the query.
	for query, want := range map[string]string{
		"process=aug:processes/effect%23/nope/x":  "404 #/nope/x",
		"process=aug:processes/effect&pipeline=x": "400 not both",
		"pipeline=%22x%22+%7C+Nope":               "422 unknown instruction",
	} {
		req := httptest.NewRequest("POST", "http://127.0.0.1:8080/v1/batches?"+query, strings.NewReader("\"a comment\"\n"))
		req.Header.Set("Content-Type", "application/x-ndjson")
		rec := serve(t, h, req)
		code, msg, _ := strings.Cut(want, " ")
		if fmt.Sprint(rec.Code) != code || !strings.Contains(rec.Body.String(), msg) {
			t.Errorf("JSONL ?%s: %d %s, want %s", query, rec.Code, rec.Body, want)
		}
		decoded(t, rec)
	}
	if _, err := os.Stat(spool); !os.IsNotExist(err) {
		t.Errorf("a refused batch made the spool directory: %v", err)
	}
}
