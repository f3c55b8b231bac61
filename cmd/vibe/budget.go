package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	goio "io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/llm/replay"
)

// budgetFlags are what a prompt budget needs beyond the process: the
// models' limits and the recorded answers that size their strings.
type budgetFlags struct {
	models, answers string
}

func (f *budgetFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.models, "models", os.Getenv("VIBE_MODELS"), "a models `FILE` of context windows and output limits ({\"models\": {MODEL: {\"context\": N, \"output\": N}}}) over the table vibe ships; default $VIBE_MODELS, else "+defaultModelsFile()+" when it exists")
	cmd.Flags().StringVar(&f.answers, "answers", "", "a recording `FILE` ($VIBE_LLM_RECORD's JSONL) whose answers size the strings and arrays that the schema does not bound")
}

// defaultModelsFile is vibe/models.json in the user's config directory.
func defaultModelsFile() string {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "~/.config/vibe/models.json"
	}
	return filepath.Join(dir, "vibe", "models.json")
}

// load reads the models' limits and the recorded sizes of prog's chunks.
func (f *budgetFlags) load(prog *compile.Program) (*llm.Models, *compile.Sizes, error) {
	models := llm.DefaultModels()
	file := f.models
	if file == "" {
		if _, err := os.Stat(defaultModelsFile()); err == nil {
			file = defaultModelsFile()
		}
	}
	if file != "" {
		m, err := llm.LoadModels(file)
		if err != nil {
			return nil, nil, err
		}
		models = m
	}
	if f.answers == "" {
		return models, nil, nil
	}
	sizes, err := recordedSizes(f.answers, prog)
	return models, sizes, err
}

// recordedSizes reads what a recording's answers to prog's LLM chunks
// show of their values: each step's part of a chunk's answer, of a
// multiplexed answer's items too.
func recordedSizes(file string, prog *compile.Program) (*compile.Sizes, error) {
	fh, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	steps := map[string][]string{}
	for _, ch := range prog.Chunks {
		for _, s := range ch.Steps {
			steps[ch.Name] = append(steps[ch.Name], s.Name)
		}
	}
	z := &compile.Sizes{}
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		var e replay.Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("%s:%d: not a recorded answer: %w", file, n, err)
		}
		names, ok := steps[e.Step]
		if !ok {
			continue
		}
		answer, err := llm.ParseAnswer(e.Response.Content)
		if err != nil {
			continue
		}
		items := []jsonv.Value{answer}
		if _, multiplexed := answer.Get(compile.ItemKey(0, 1)); multiplexed {
			items = items[:0]
			for i := 1; ; i++ {
				if _, ok := answer.Get(compile.ItemKey(0, i)); !ok {
					break
				}
				items = append(items, compile.Demultiplex(answer, names, i, nil)[i-1].Value)
			}
		}
		for _, it := range items {
			for _, s := range names {
				if v, ok := it.Get(s); ok {
					z.Observe(s, v)
				}
			}
		}
	}
	return z, sc.Err()
}

// budgetModel is the model and form a budget counts for, from --llm: its
// model name, and OpenAI's strict form for openai: without a base URL.
func budgetModel(spec, baseURL string) (model string, strict bool) {
	kind, name, ok := strings.Cut(spec, ":")
	if !ok {
		return spec, false
	}
	return name, kind == "openai" && baseURL == ""
}

// printBudget prints b as a table, then how it was counted.
func printBudget(w goio.Writer, b *llm.Budget, k int) error {
	switch {
	case b.Model == "":
		fmt.Fprintln(w, "no model (--llm): tokens estimated, no limits to check")
	case b.Window == 0:
		fmt.Fprintf(w, "model %s: limits not known (add it to a models file: --models)\n", b.Model)
	default:
		fmt.Fprintf(w, "model %s: context window %d tokens, output limit %d\n", b.Model, b.Window, b.MaxOutput)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHUNK\tITEMS\tSYSTEM\tSCHEMA\tTEXT\tCONTEXT~\tPROMPT\tOUTPUT~\tMAX K")
	for _, c := range b.Chunks {
		maxK := "-"
		if n := c.Cap.MaxK(); n > 0 {
			maxK = fmt.Sprint(n)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", c.Chunk, c.Items, c.System, c.Schema, c.Text, c.Context, c.Prompt, c.Output, maxK)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	how := "tokens counted with " + b.Tokenizer + ", OpenAI's tokenizer"
	if !b.Exact {
		how = "tokens estimated at 4 bytes a token (no tokenizer of this model in Go)"
	}
	per := "one call of each chunk"
	if k > 1 {
		per = fmt.Sprintf("one call of each chunk at K=%d, cut within the provider's limits", k)
	}
	fmt.Fprintf(w, "Per %s; %s. ~ marks estimates: CONTEXT is the largest the chunk's references can bring, OUTPUT the answer's expected size (strings without maxLength at their longest recorded answer, else %d characters; arrays without maxItems at %d items). MAX K: the most items whose answers fit the output limit.\n",
		per, how, compile.DefaultStringChars, compile.DefaultArrayItems)
	return nil
}
