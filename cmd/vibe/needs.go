package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// needs is what a process started by vibe run needs of a worker to go
// on: its actions file and its model, kept in the data directory (DATA/
// needs/ID.json) so that a later command on that directory — vibe answer
// ID J typed without the flags — starts a worker able to finish it. It
// names the variable that holds the model's key, never the key.
type needs struct {
	// ActionsFile is the actions file's absolute path.
	ActionsFile string `json:"actionsFile,omitempty"`
	// LLM is the model (--llm, a recording's file made absolute), and
	// LLMBaseURL its endpoint; Strict, Tools and Inline the flags that
	// say how it is asked.
	LLM        string `json:"llm,omitempty"`
	LLMBaseURL string `json:"llmBaseURL,omitempty"`
	Strict     bool   `json:"llmStrict,omitempty"`
	Tools      bool   `json:"llmTools,omitempty"`
	Inline     bool   `json:"inlineSchemas,omitempty"`
	// KeyVar names the environment variable that held the model's key;
	// "" when none did.
	KeyVar string `json:"keyVar,omitempty"`
}

// needsFile is where the needs of process id are kept in data.
func needsFile(data, id string) string {
	return filepath.Join(data, "needs", filepath.Base(id)+".json")
}

// batchNeedsFile is where the needs of batch id's items are kept in data:
// one record for them all, beside the processes' and apart from them.
func batchNeedsFile(data, id string) string {
	return filepath.Join(data, "needs", "batches", filepath.Base(id)+".json")
}

// itemBatch is the batch whose item id names (batch.ItemID: the batch's
// id, '-', the item's input line), when it names one.
func itemBatch(id string) (string, bool) {
	i := strings.LastIndexByte(id, '-')
	if i <= 0 {
		return "", false
	}
	line := id[i+1:]
	if line == "" || line[0] == '0' || strings.Trim(line, "0123456789") != "" {
		return "", false
	}
	return id[:i], true
}

// needsOf are the needs the worker flags give: nil when they give
// neither actions nor a model.
func needsOf(wf *workerFlags) (*needs, error) {
	if wf.actionsFile == "" && wf.llm.spec == "" {
		return nil, nil
	}
	n := &needs{LLM: wf.llm.spec, LLMBaseURL: wf.llm.baseURL, Strict: wf.llm.strict, Tools: wf.llm.tools, Inline: wf.llm.inline}
	if wf.actionsFile != "" {
		abs, err := filepath.Abs(wf.actionsFile)
		if err != nil {
			return nil, err
		}
		n.ActionsFile = abs
	}
	kind, arg, _ := strings.Cut(wf.llm.spec, ":")
	switch kind {
	case "replay":
		abs, err := filepath.Abs(arg)
		if err != nil {
			return nil, err
		}
		n.LLM = "replay:" + abs
	case "openai", "anthropic":
		for _, v := range []string{"VIBE_LLM_API_KEY", strings.ToUpper(kind) + "_API_KEY"} {
			if os.Getenv(v) != "" {
				n.KeyVar = v
				break
			}
		}
	}
	return n, nil
}

// recordNeeds keeps in data what process id needs of a worker (needsOf
// wf): nothing when it needs neither actions nor a model.
func recordNeeds(data, id string, wf *workerFlags) error {
	return writeNeeds(needsFile(data, id), wf)
}

// recordBatchNeeds keeps in data what the items of batch id need of a
// worker (needsOf wf), for them all: nothing when they need neither
// actions nor a model. vibe answer ITEM finds it by the item's id.
func recordBatchNeeds(data, id string, wf *workerFlags) error {
	return writeNeeds(batchNeedsFile(data, id), wf)
}

// writeNeeds writes needsOf wf to file, when there are any.
func writeNeeds(file string, wf *workerFlags) error {
	n, err := needsOf(wf)
	if n == nil || err != nil {
		return err
	}
	b, err := json.MarshalIndent(n, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return err
	}
	return os.WriteFile(file, append(b, '\n'), 0o600)
}

// loadNeeds fills in the worker flags that were not given from what
// process id recorded it needs in data (recordNeeds), so that the worker
// can do its work. What cannot be had — an actions file gone, a key's
// variable unset — is a *needsError: the command goes no further, and
// the process waits as it did. A process with no record leaves wf as it
// is. A batch's item with no record of its own takes its batch's
// (recordBatchNeeds).
func loadNeeds(data, id string, wf *workerFlags) error {
	file := needsFile(data, id)
	b, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		if batch, ok := itemBatch(id); ok {
			file = batchNeedsFile(data, batch)
			b, err = os.ReadFile(file)
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var n needs
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	var missing []string
	if wf.actionsFile == "" && n.ActionsFile != "" {
		if _, err := os.Stat(n.ActionsFile); err != nil {
			missing = append(missing, "its actions file "+n.ActionsFile+" ("+errText(err)+")")
		} else {
			wf.actionsFile = n.ActionsFile
		}
	}
	if wf.llm.spec == "" && n.LLM != "" {
		if n.KeyVar != "" && os.Getenv(n.KeyVar) == "" {
			missing = append(missing, "the key of its model "+n.LLM+" in $"+n.KeyVar+" (unset)")
		} else {
			wf.llm.spec, wf.llm.baseURL = n.LLM, n.LLMBaseURL
			wf.llm.strict, wf.llm.tools, wf.llm.inline = n.Strict, n.Tools, n.Inline
		}
	}
	if len(missing) > 0 {
		return &needsError{ID: id, Missing: missing, Needs: n}
	}
	return nil
}

// errText is what went wrong of a file's error, without the path.
func errText(err error) string {
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		return pe.Err.Error()
	}
	return err.Error()
}

// needsError says that a process needs what this command cannot have,
// and how to give it.
type needsError struct {
	ID      string
	Missing []string
	Needs   needs
}

func (e *needsError) Error() string {
	return fmt.Sprintf("%s needs %s: nothing was sent, and it waits as it did; give them with --actions-file FILE, --llm MODEL and its key's variable set, as the command that started it had them", e.ID, strings.Join(e.Missing, " and "))
}

// andList names the actions: "the action A", "the actions A and B", "the
// actions A, B and C".
func andList(names []string) string {
	if len(names) == 1 {
		return "the action " + names[0]
	}
	return "the actions " + strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
