package batch

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/augceo/vibe/jsonv"
)

// CalibrationStore keeps the K chosen for each LLM chunk on one model, in a
// directory (the data directory's "calibration"): by what makes the
// chunk's answers — the model and its endpoint, the chunk, the schema it
// is sent and the system text — so that an edited schema or another model
// is calibrated anew. A calibration's choice is asked again after Expiry;
// a batch whose calls of some size could not be answered whole remembers
// the size that passed (Remember), which caps the K chosen after.
type CalibrationStore struct {
	Dir             string
	Model, Endpoint string
	// Expiry is how long a calibration holds; 0 means 30 days.
	Expiry time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Choice is what the store holds of one chunk.
type Choice struct {
	Model    string    `json:"model"`
	Endpoint string    `json:"endpoint,omitempty"`
	Chunk    string    `json:"chunk"`
	K        int       `json:"k"`
	Floor    float64   `json:"floor,omitempty"`
	At       time.Time `json:"at"`
	Until    time.Time `json:"until"`
	// Passed, when set, is the largest call a batch saw answered whole
	// after a larger one was not; Why says why that one was not.
	Passed int    `json:"passed,omitempty"`
	Why    string `json:"why,omitempty"`
	// Rows are the calibration's, for whoever reads the file.
	Rows []CalibrationRow `json:"rows,omitempty"`
}

func (s *CalibrationStore) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// key names a chunk's choice: a hash of what makes its answers.
func (s *CalibrationStore) key(chunk string, schema jsonv.Value, system string) string {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(s.Model), []byte(s.Endpoint), []byte(chunk), jsonv.Marshal(schema), []byte(system)} {
		fmt.Fprintf(h, "%d:", len(part))
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil))[:24]
}

func (s *CalibrationStore) path(key string) string { return filepath.Join(s.Dir, key+".json") }

// load reads a chunk's choice; ok is false when there is none.
func (s *CalibrationStore) load(key string) (Choice, bool, error) {
	data, err := os.ReadFile(s.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return Choice{}, false, nil
	}
	if err != nil {
		return Choice{}, false, err
	}
	var c Choice
	if err := json.Unmarshal(data, &c); err != nil {
		return Choice{}, false, fmt.Errorf("%s: %w", s.path(key), err)
	}
	return c, true, nil
}

func (s *CalibrationStore) save(key string, c Choice) error {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return err
	}
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	tmp := s.path(key) + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, s.path(key))
}

// Save records the choices of a calibration's judged chunks.
func (s *CalibrationStore) Save(cal *Calibration) error {
	now := s.now()
	expiry := s.Expiry
	if expiry <= 0 {
		expiry = 30 * 24 * time.Hour
	}
	for _, cc := range cal.Chunks {
		if !cc.Judged {
			continue
		}
		c := Choice{Model: s.Model, Endpoint: s.Endpoint, Chunk: cc.Chunk, K: cc.ChosenK, Floor: cc.Floor, At: now, Until: now.Add(expiry), Rows: cc.Rows}
		if err := s.save(s.key(cc.Chunk, cc.Schema, cc.System), c); err != nil {
			return fmt.Errorf("record the calibration of %s: %w", cc.Chunk, err)
		}
	}
	return nil
}

// CalibratedK is the K the store holds for a chunk (Calibrations): the
// calibration's while it holds, capped by the largest call that passed
// after a larger one could not be answered whole.
func (s *CalibrationStore) CalibratedK(chunk string, schema jsonv.Value, system string) (int, bool) {
	c, ok, err := s.load(s.key(chunk, schema, system))
	if err != nil || !ok {
		return 0, false
	}
	k := 0
	if c.K > 0 && s.now().Before(c.Until) {
		k = c.K
	}
	if c.Passed > 0 && (k == 0 || c.Passed < k) {
		k = c.Passed
	}
	return k, k > 0
}

// Remember keeps that calls of a chunk larger than passed could not be
// answered whole (why), so that later batches on this model ask no more.
func (s *CalibrationStore) Remember(chunk string, schema jsonv.Value, system string, passed int, why string) error {
	key := s.key(chunk, schema, system)
	c, ok, err := s.load(key)
	if err != nil {
		return err
	}
	if !ok {
		c = Choice{Model: s.Model, Endpoint: s.Endpoint, Chunk: chunk, At: s.now()}
	}
	if c.Passed > 0 && c.Passed <= passed {
		return nil
	}
	c.Passed, c.Why = passed, why
	return s.save(key, c)
}
