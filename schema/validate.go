package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/augceo/vibe/jsonv"
)

// A Loader returns the document an absolute URI names, for "$ref"s that a
// schema keeps (registry URIs such as "aug:instructions/x"). Flattened
// schemas have none and need no loader.
type Loader func(uri string) (jsonv.Value, error)

// ValidatorOptions configures NewValidator. The zero value asserts formats
// and loads no remote references.
type ValidatorOptions struct {
	// Loader resolves "aug:" references; nil refuses them.
	Loader Loader
	// IgnoreFormat treats "format" as an annotation only. By default a value
	// that breaks its format ("date-time", "email", …) is invalid: a model's
	// "tomorrow 9am" in a date-time field should be repaired, not passed on.
	IgnoreFormat bool
}

// Validator checks instances against one compiled schema. It is safe for
// concurrent use.
type Validator struct {
	s *jsonschema.Schema
}

// Invalid is one way an instance breaks a schema.
type Invalid struct {
	Path    jsonv.Pointer `json:"path"`    // where in the instance
	Message string        `json:"message"` // what is wrong
}

func (i Invalid) String() string { return i.Path.String() + ": " + i.Message }

// ValidationError lists everything wrong with an instance, by instance path.
type ValidationError struct {
	Problems []Invalid
}

func (e *ValidationError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "; ")
}

var resourceSeq atomic.Int64

// NewValidator compiles schema s. A schema that is not a valid draft 2020-12
// schema gives an ErrorList naming file and the JSON paths of the problems.
func NewValidator(file string, s jsonv.Value, opts ValidatorOptions) (*Validator, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if !opts.IgnoreFormat {
		c.AssertFormat()
	}
	loaders := jsonschema.SchemeURLLoader{"aug": augLoader(opts.Loader)}
	c.UseLoader(loaders)
	// Each compile gets its own resource URL: the compiler caches by URL.
	url := fmt.Sprintf("vibe:///schema/%d.json", resourceSeq.Add(1))
	if err := c.AddResource(url, ToAny(s)); err != nil {
		return nil, &Error{File: file, Message: "invalid schema: " + err.Error(), Err: err}
	}
	compiled, err := c.Compile(url)
	if err != nil {
		return nil, compileError(file, err)
	}
	return &Validator{s: compiled}, nil
}

// cache holds compiled validators by the schema's bytes: a batch or a
// process validates many values against the same few schemas, and
// compiling costs far more than validating. It is reset when full, which
// bounds it without bookkeeping.
var cache struct {
	sync.Mutex
	m map[string]*Validator
}

const maxCached = 512

// Cached returns a validator for s with the zero ValidatorOptions, compiled
// once per distinct schema. Errors are NewValidator's, with file "schema".
func Cached(s jsonv.Value) (*Validator, error) {
	key := string(jsonv.Marshal(s))
	cache.Lock()
	v, ok := cache.m[key]
	cache.Unlock()
	if ok {
		return v, nil
	}
	v, err := NewValidator("schema", s, ValidatorOptions{})
	if err != nil {
		return nil, err
	}
	cache.Lock()
	if cache.m == nil || len(cache.m) >= maxCached {
		cache.m = make(map[string]*Validator)
	}
	cache.m[key] = v
	cache.Unlock()
	return v, nil
}

// Check validates x against s and returns what is wrong with it, by
// instance path; nil when it fits. The validator comes from Cached.
func Check(s, x jsonv.Value) ([]Invalid, error) {
	v, err := Cached(s)
	if err != nil {
		return nil, err
	}
	if err := v.Validate(x); err != nil {
		return err.(*ValidationError).Problems, nil
	}
	return nil, nil
}

type augLoader Loader

func (l augLoader) Load(url string) (any, error) {
	if l == nil {
		return nil, fmt.Errorf("no registry to load %s", url)
	}
	v, err := l(url)
	if err != nil {
		return nil, err
	}
	return ToAny(v), nil
}

// compileError turns the compiler's error into located errors: the first
// problem at each place. The metaschema allows some keywords more than one
// form ("type" is a type name or an array of them), and a value that fits
// neither breaks both; the first says what was meant ("value must be one
// of 'array', …"), the others only that it is not the other form ("got
// string, want array").
func compileError(file string, err error) error {
	var sv *jsonschema.SchemaValidationError
	var ve *jsonschema.ValidationError
	if errors.As(err, &sv) && errors.As(sv.Err, &ve) {
		var list ErrorList
		for _, p := range problems(ve) {
			if n := len(list); n > 0 && list[n-1].Path == p.Path {
				continue // problems come sorted by place
			}
			list.Add(file, p.Path, "not a valid JSON Schema: %s", p.Message)
		}
		return list
	}
	return &Error{File: file, Message: "invalid schema: " + err.Error(), Err: err}
}

// Validate checks x; it returns nil or a *ValidationError.
func (v *Validator) Validate(x jsonv.Value) error {
	err := v.s.Validate(ToAny(x))
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return &ValidationError{Problems: []Invalid{{Message: err.Error()}}}
	}
	return &ValidationError{Problems: problems(ve)}
}

var printer = message.NewPrinter(language.English)

// problems flattens a validation error tree to its leaves, in instance
// order.
func problems(ve *jsonschema.ValidationError) []Invalid {
	var out []Invalid
	var visit func(e *jsonschema.ValidationError)
	visit = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			out = append(out, Invalid{
				Path:    jsonv.PointerTo(e.InstanceLocation...),
				Message: e.ErrorKind.LocalizedString(printer),
			})
			return
		}
		for _, c := range e.Causes {
			visit(c)
		}
	}
	visit(ve)
	slices.SortStableFunc(out, func(a, b Invalid) int { return strings.Compare(string(a.Path), string(b.Path)) })
	return slices.Compact(out)
}

// ToAny converts v to the plain Go form encoding/json produces
// (map[string]any, []any, json.Number, string, bool, nil). Member order is
// lost: use it only where order does not matter, such as validation.
func ToAny(v jsonv.Value) any {
	switch v.Kind() {
	case jsonv.KindBool:
		return v.Bool()
	case jsonv.KindNumber:
		return json.Number(v.Literal())
	case jsonv.KindString:
		return v.Str()
	case jsonv.KindArray:
		arr := make([]any, v.Len())
		for i, e := range v.Array() {
			arr[i] = ToAny(e)
		}
		return arr
	case jsonv.KindObject:
		m := make(map[string]any, v.Len())
		for name, e := range v.Members() {
			m[name] = ToAny(e)
		}
		return m
	}
	return nil
}
