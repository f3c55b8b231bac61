package llm

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/augceo/vibe/jsonv"
)

// ParseAnswer reads the JSON value in a model's answer, tolerating what
// models wrap it in: a Markdown code fence, prose before it, text after it.
// Member order and number literals are kept.
func ParseAnswer(content string) (jsonv.Value, error) {
	s := strings.TrimSpace(strings.TrimPrefix(content, "\ufeff"))
	if s == "" {
		return jsonv.Value{}, errors.New("the answer is empty")
	}
	if v, err := jsonv.Parse([]byte(s)); err == nil {
		return v, nil
	}
	if body, ok := fenced(s); ok {
		if v, err := jsonv.Parse([]byte(body)); err == nil {
			return v, nil
		}
	}
	// Prose around the value: try each place a value may start.
	var firstErr error
	for i, tries := 0, 0; i < len(s) && tries < 16; i++ {
		if s[i] != '{' && s[i] != '[' {
			continue
		}
		tries++
		v, err := jsonv.Decode(jsontext.NewDecoder(strings.NewReader(s[i:])))
		if err == nil {
			return v, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	if firstErr == nil {
		return jsonv.Value{}, fmt.Errorf("the answer holds no JSON object: %q", cut(s, 80))
	}
	_, err := jsonv.Parse([]byte(s))
	return jsonv.Value{}, err
}

// fenced returns the body of the first Markdown code fence in s.
func fenced(s string) (string, bool) {
	start := strings.Index(s, "```")
	if start < 0 {
		return "", false
	}
	rest := s[start+3:]
	nl := strings.IndexByte(rest, '\n')
	if nl < 0 {
		return "", false
	}
	rest = rest[nl+1:] // drop the info string ("json")
	end := strings.Index(rest, "```")
	if end < 0 {
		return rest, true
	}
	return rest[:end], true
}

func cut(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
