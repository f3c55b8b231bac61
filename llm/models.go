package llm

import (
	_ "embed"
	"strings"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/schema"
)

// ModelLimits are what one model takes and gives, in tokens.
type ModelLimits struct {
	// Context is the context window: the prompt and the answer together;
	// 0 when not known.
	Context int
	// Output is the most tokens one answer may have; 0 when not known.
	Output int
	// Tokenizer names the model's tiktoken encoding ("o200k_base"); ""
	// for a model whose tokens are estimated.
	Tokenizer string
}

// Models are the limits of models by name (LoadModels).
type Models struct {
	// File is where they were read; "" for the table Vibe ships.
	File   string
	Models map[string]ModelLimits
}

//go:embed models.json
var shippedModels []byte

// DefaultModels is the table of common models Vibe ships (llm/models.json):
// their context windows and output limits as their providers published
// them. Limits change; a models file overrides them (LoadModels).
func DefaultModels() *Models {
	m, err := parseModels("models.json", shippedModels)
	if err != nil {
		panic(err) // the shipped file is tested
	}
	m.File = ""
	return m
}

// Limits are model's limits: its own, else those of the longest name in
// the table that model starts with followed by "-" (a dated snapshot,
// "gpt-4o-mini-2024-07-18", of a model the table names); the zero value
// when neither. A nil table knows no model.
func (m *Models) Limits(model string) ModelLimits {
	if m == nil {
		return ModelLimits{}
	}
	if l, ok := m.Models[model]; ok {
		return l
	}
	best := ""
	for name := range m.Models {
		if strings.HasPrefix(model, name+"-") && len(name) > len(best) {
			best = name
		}
	}
	return m.Models[best]
}

// LoadModels reads a models file over the shipped table: a JSON object
//
//	{"models": {"my-model": {"context": 32768, "output": 4096, "tokenizer": "o200k_base"}, …}}
//
// whose models replace the shipped ones of the same name. Every mistake is
// an error naming the file and its JSON path.
func LoadModels(file string) (*Models, error) {
	doc, err := schema.ReadFile(file)
	if err != nil {
		return nil, err
	}
	own, err := parseValue(file, doc)
	if err != nil {
		return nil, err
	}
	m := DefaultModels()
	m.File = file
	for name, l := range own.Models {
		m.Models[name] = l
	}
	return m, nil
}

func parseModels(file string, data []byte) (*Models, error) {
	doc, err := schema.Parse(file, data)
	if err != nil {
		return nil, err
	}
	return parseValue(file, doc)
}

func parseValue(file string, doc jsonv.Value) (*Models, error) {
	var errs schema.ErrorList
	m := &Models{File: file, Models: map[string]ModelLimits{}}
	if doc.Object() == nil {
		errs.Add(file, "", "a models file is an object: {\"models\": {MODEL: {\"context\": …, \"output\": …}}}, not %s", doc.Kind())
		return nil, errs
	}
	for k, v := range doc.Members() {
		at := jsonv.PointerTo(k)
		switch k {
		case "$comment":
		case "models":
			if v.Object() == nil {
				errs.Add(file, at, "models must be an object from model names to limits, not %s", v.Kind())
				continue
			}
			for model, mv := range v.Members() {
				m.Models[model] = loadLimits(&errs, file, at.Append(model), mv)
			}
		default:
			errs.Add(file, at, "unknown key %q (want models)", k)
		}
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return m, nil
}

// loadLimits reads one model's limits.
func loadLimits(errs *schema.ErrorList, file string, at jsonv.Pointer, v jsonv.Value) ModelLimits {
	var l ModelLimits
	if v.Object() == nil {
		errs.Add(file, at, "a model's limits are an object: {\"context\": …, \"output\": …}, not %s", v.Kind())
		return l
	}
	for k, fv := range v.Members() {
		switch k {
		case "context", "output":
			n, ok := fv.Int()
			if !ok || n <= 0 || n > 1<<31 {
				errs.Add(file, at.Append(k), "%s must be a whole number of tokens above 0, not %s", k, jsonv.Marshal(fv))
				continue
			}
			if k == "context" {
				l.Context = int(n)
			} else {
				l.Output = int(n)
			}
		case "tokenizer":
			if fv.Kind() != jsonv.KindString || (fv.Str() != "o200k_base" && fv.Str() != "cl100k_base") {
				errs.Add(file, at.Append(k), "tokenizer must be \"o200k_base\" or \"cl100k_base\" (OpenAI's), not %s", jsonv.Marshal(fv))
				continue
			}
			l.Tokenizer = fv.Str()
		default:
			errs.Add(file, at.Append(k), "unknown key %q (want context, output, tokenizer)", k)
		}
	}
	return l
}
