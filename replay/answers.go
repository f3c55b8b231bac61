package replay

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/augceo/vibe/compile"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/replay/record"
)

// answers are the model's answers to changed chunks kept as they come
// (Options.Answers), so that a replay run again — after a kill — asks
// none of them again.
type answers struct {
	path string
	mu   sync.Mutex
	m    map[string]jsonv.Value
	// torn says the file ends in a line a kill tore: the next line is
	// begun on a line of its own.
	torn bool
}

// answerLine is one kept answer.
type answerLine struct {
	Key   string      `json:"key"`
	Value jsonv.Value `json:"value"`
}

// openAnswers reads the answers kept at path; none when path is "" or
// not there. A last line a kill tore is left out.
func openAnswers(path string) (*answers, error) {
	a := &answers{path: path, m: map[string]jsonv.Value{}}
	if path == "" {
		return a, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return a, nil
	}
	if err != nil {
		return nil, fmt.Errorf("replay answers: %w", err)
	}
	a.torn = len(data) > 0 && data[len(data)-1] != '\n'
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var l answerLine
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Key != "" {
			a.m[l.Key] = l.Value
		}
	}
	return a, nil
}

func (a *answers) get(key string) (jsonv.Value, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	v, ok := a.m[key]
	return v, ok
}

// put keeps answers, appended to the file and synced before it returns.
func (a *answers) put(lines []answerLine) error {
	if len(lines) == 0 {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, l := range lines {
		a.m[l.Key] = l.Value
	}
	if a.path == "" {
		return nil
	}
	var buf bytes.Buffer
	if a.torn {
		buf.WriteByte('\n')
	}
	enc := json.NewEncoder(&buf)
	for _, l := range lines {
		if err := enc.Encode(l); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Dir(a.path), 0o700); err != nil {
		return fmt.Errorf("replay answers: %w", err)
	}
	f, err := os.OpenFile(a.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("replay answers: %w", err)
	}
	_, werr := f.Write(buf.Bytes())
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		return fmt.Errorf("replay answers %s: %w", a.path, err)
	}
	a.torn = false
	return nil
}

// answerKey names the answer to chunk ch for the item of rec: what makes
// it — the item, the chunk's fingerprint, its context and the model.
func answerKey(rec *record.Record, ch *compile.ProgramChunk, mctx jsonv.Value, model string) string {
	h := sha256.New()
	for _, s := range []string{rec.ID, rec.Prompt, record.Fingerprint(ch, rec.System), string(jsonv.Marshal(mctx)), model} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}
