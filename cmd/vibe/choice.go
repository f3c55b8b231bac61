package main

import (
	"bufio"
	"errors"
	"fmt"
	goio "io"
	"strconv"
	"strings"

	"github.com/augceo/vibe/jsonv"
)

// question is one choice a person's answer is made of: where it goes in
// the answer, what the schema says of it, and its options — an enum's
// values, or yes and no for a boolean.
type question struct {
	path        []string
	description string
	options     []jsonv.Value // nil: a boolean, asked y/n
}

// choiceQuestions reads a schema that asks for choices: an enum, a
// boolean, or an object whose properties are each one of these (or such
// an object), in the schema's order. ok is false for any other schema — a
// free text, a number, a list — which is asked as JSON.
func choiceQuestions(s jsonv.Value) (qs []question, ok bool) {
	return appendQuestions(nil, s, nil)
}

func appendQuestions(qs []question, s jsonv.Value, path []string) ([]question, bool) {
	desc := s.Lookup("description").Str()
	if desc == "" {
		desc = s.Lookup("title").Str()
	}
	if c, ok := s.Get("const"); ok {
		return append(qs, question{path: path, description: desc, options: []jsonv.Value{c}}), true
	}
	if e := s.Lookup("enum").Array(); len(e) > 0 {
		return append(qs, question{path: path, description: desc, options: e}), true
	}
	switch s.Lookup("type").Str() {
	case "boolean":
		return append(qs, question{path: path, description: desc}), true
	case "object":
		props := s.Lookup("properties").Object()
		if props == nil || props.Len() == 0 {
			return nil, false
		}
		for name, sub := range props.All() {
			var ok bool
			if qs, ok = appendQuestions(qs, sub, append(path[:len(path):len(path)], name)); !ok {
				return nil, false
			}
		}
		return qs, true
	}
	return nil, false
}

// askChoices asks each question on out and reads its answer from in — an
// option's number or text, y or n — until it is one; a question of one
// option is not asked. It returns the answer the questions make up.
func askChoices(in *bufio.Scanner, out goio.Writer, qs []question) (jsonv.Value, error) {
	answer := jsonv.NullValue()
	for _, q := range qs {
		v, err := askChoice(in, out, q)
		if err != nil {
			return jsonv.Value{}, err
		}
		answer = setAt(answer, q.path, v)
	}
	return answer, nil
}

func askChoice(in *bufio.Scanner, out goio.Writer, q question) (jsonv.Value, error) {
	if len(q.options) == 1 {
		return q.options[0], nil
	}
	name := strings.Join(q.path, ".")
	if name == "" {
		name = "answer"
	}
	if q.description != "" {
		name += " — " + q.description
	}
	if q.options == nil {
		for {
			fmt.Fprintf(out, "%s [y/n]> ", name)
			line, err := readLine(in)
			if err != nil {
				return jsonv.Value{}, err
			}
			switch strings.ToLower(line) {
			case "y", "yes", "true":
				return jsonv.BoolValue(true), nil
			case "n", "no", "false":
				return jsonv.BoolValue(false), nil
			}
			fmt.Fprintln(out, "  answer y or n")
		}
	}
	fmt.Fprintln(out, name+":")
	for i, o := range q.options {
		fmt.Fprintf(out, "  %d) %s\n", i+1, optionText(o))
	}
	for {
		fmt.Fprintf(out, "choose 1-%d> ", len(q.options))
		line, err := readLine(in)
		if err != nil {
			return jsonv.Value{}, err
		}
		if n, err := strconv.Atoi(line); err == nil && n >= 1 && n <= len(q.options) {
			return q.options[n-1], nil
		}
		for _, o := range q.options {
			if optionText(o) == line {
				return o, nil
			}
		}
		fmt.Fprintf(out, "  give a number from 1 to %d, or an option as written\n", len(q.options))
	}
}

// optionText is an option as a person reads it: a string bare, anything
// else as JSON.
func optionText(v jsonv.Value) string {
	if v.Kind() == jsonv.KindString {
		return v.Str()
	}
	return string(jsonv.Marshal(v))
}

// readLine reads the next line that is not blank, trimmed.
func readLine(in *bufio.Scanner) (string, error) {
	for in.Scan() {
		if line := strings.TrimSpace(in.Text()); line != "" {
			return line, nil
		}
	}
	if err := in.Err(); err != nil {
		return "", err
	}
	return "", errors.New("no answer given")
}

// setAt returns v with x at path, making the objects on the way.
func setAt(v jsonv.Value, path []string, x jsonv.Value) jsonv.Value {
	if len(path) == 0 {
		return x
	}
	o := v.Object()
	if o == nil {
		o = jsonv.NewObject(1)
	}
	child, _ := o.Get(path[0])
	o.Set(path[0], setAt(child, path[1:], x))
	return o.Value()
}
