package console

import (
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"time"

	"github.com/augceo/vibe/internal/schemaform"
	"github.com/augceo/vibe/jsonv"
)

// funcs are the templates' functions. None of them returns HTML: what they
// give is text, which the templates escape.
var funcs = template.FuncMap{
	"json":       prettyJSON,
	"age":        age,
	"path":       pathEscape,
	"rate":       func(f float64) string { return fmt.Sprintf("%.1f/s", f) },
	"duration":   func(d time.Duration) string { return d.Round(time.Second).String() },
	"when":       func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
	"present":    func(v jsonv.Value) bool { return !v.IsNull() && !(v.Object() != nil && v.Len() == 0) },
	"add":        func(a, b int) int { return a + b },
	"statusText": http.StatusText,
	"kind":       func(v jsonv.Value) string { return v.Kind().String() },
	"members":    members,
	"answerArgs": func(f *answerForm, csrf string) answerArgs { return answerArgs{Form: f, CSRF: csrf} },
	"stamp":      stamp,
	"span":       span,
}

// answerArgs is what the answer form's template gets.
type answerArgs struct {
	Form *answerForm
	CSRF string
}

// members lists an object's members in order, for templates.
func members(v jsonv.Value) []jsonv.Member {
	var out []jsonv.Member
	for name, m := range v.Members() {
		out = append(out, jsonv.Member{Name: name, Value: m})
	}
	return out
}

// prettyJSON indents a value for a <pre>: an ordered jsonv.Value in its
// own order, anything else as encoding/json writes it.
func prettyJSON(v any) string {
	switch v := v.(type) {
	case jsonv.Value:
		return string(jsonv.MarshalIndent(v, "  "))
	case *jsonv.Value:
		if v == nil {
			return "null"
		}
		return string(jsonv.MarshalIndent(*v, "  "))
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// age is how long ago t was, roughly: "5s", "3m", "2h", "4d".
func age(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case t.IsZero():
		return ""
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(max(d.Seconds(), 0)))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// pathEscape makes an id one segment of a URL path.
func pathEscape(s string) string { return url.PathEscape(s) }

// serveScript serves the forms' script (schemaform.Script), which the
// pages load from the console itself: their policy runs no inline script.
func serveScript(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	fmt.Fprint(w, schemaform.Script)
}
