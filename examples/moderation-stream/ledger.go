package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"

	"github.com/augceo/vibe/action"
	"github.com/augceo/vibe/jsonv"
)

// LedgerFile is the ledger's file in the data directory.
const LedgerFile = "moderation-ledger.jsonl"

// decisionStep is the pipeline step whose value the action records: the
// step RecordDecision_Activity references, under which its input holds
// it (the minimal context, as for every server step without inputs).
const decisionStep = "step2_decide_moderation"

// An Entry is one line of the ledger: a decision, under the idempotency
// key of the action call that recorded it.
type Entry struct {
	Key        string `json:"key"`
	DecisionID string `json:"decisionId"`
	Decision   string `json:"decision"`
	Reason     string `json:"reason"`
}

// A Ledger is the record of moderation decisions: a JSONL file to which
// each decision is appended once per idempotency key. An action is
// delivered at least once — a retry, or a restart while it ran, calls it
// again under the same key — so a key already in the ledger is answered
// as it was the first time, and nothing is appended. It is safe for
// concurrent use.
type Ledger struct {
	path string

	mu  sync.Mutex
	f   *os.File
	ids map[string]string // decisionId by idempotency key
	// added counts the entries appended since Open, repeats the calls
	// answered from an entry already there.
	added, repeats int
}

// errBadCall is a call the ledger refuses: trying again will not help.
var errBadCall = errors.New("bad call")

// OpenLedger opens the ledger at path, creating it if needed, and reads
// the keys it holds.
func OpenLedger(path string) (*Ledger, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	l := &Ledger{path: path, f: f, ids: map[string]string{}}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		var e Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Key == "" {
			f.Close()
			return nil, fmt.Errorf("%s:%d: not a ledger entry (a JSON object with a \"key\")", path, line)
		}
		l.ids[e.Key] = e.DecisionID
	}
	if err := sc.Err(); err != nil {
		f.Close()
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return l, nil
}

// Close closes the ledger's file.
func (l *Ledger) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Close()
}

// Counts returns the entries appended since Open, the calls answered
// from an entry already there, and the entries in all.
func (l *Ledger) Counts() (added, repeats, held int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.added, l.repeats, len(l.ids)
}

// Record records the decision in the action's input under key, once: the
// result is the step's value, {"recorded": true, "decisionId": …}, the
// same for every call with that key. A call without a key or a decision
// is refused (errBadCall).
func (l *Ledger) Record(key string, in jsonv.Value) (jsonv.Value, error) {
	d := in.Lookup(decisionStep)
	e := Entry{Key: key, Decision: d.Lookup("decision").Str(), Reason: d.Lookup("reason").Str()}
	switch {
	case key == "":
		return jsonv.Value{}, fmt.Errorf("%w: no idempotency key", errBadCall)
	case e.Decision == "":
		return jsonv.Value{}, fmt.Errorf("%w: the input holds no %s.decision", errBadCall, decisionStep)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	id, ok := l.ids[key]
	if ok {
		l.repeats++
	} else {
		// The id comes from the key, not from the order in which calls
		// arrive: the same batch gives the same ids on any run.
		sum := sha256.Sum256([]byte(key))
		e.DecisionID = "d-" + hex.EncodeToString(sum[:6])
		b, _ := json.Marshal(e)
		// One write per line: a killed program leaves whole lines.
		if _, err := l.f.Write(append(b, '\n')); err != nil {
			return jsonv.Value{}, fmt.Errorf("write %s: %w", l.path, err)
		}
		id = e.DecisionID
		l.ids[key] = id
		l.added++
	}
	return jsonv.ObjectValue(
		jsonv.Member{Name: "recorded", Value: jsonv.BoolValue(true)},
		jsonv.Member{Name: "decisionId", Value: jsonv.StringValue(id)},
	), nil
}

// Action is the ledger as the Go action RecordDecision_Activity, keyed by
// the call's idempotency key.
func (l *Ledger) Action() action.Action {
	return action.Action{Name: "RecordDecision_Activity", Run: func(ctx context.Context, in jsonv.Value) (jsonv.Value, error) {
		out, err := l.Record(action.IdempotencyKey(ctx), in)
		if errors.Is(err, errBadCall) {
			return out, action.NonRetryable(err)
		}
		return out, err
	}}
}

// ServeHTTP is the ledger as an HTTP action, for an actions file: it
// takes the step's input as the JSON body of a POST, keyed by the
// Idempotency-Key header, and answers the step's value. A bad call is a
// 400, which the engine does not retry.
func (l *Ledger) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST the step's input", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	in, err := jsonv.Parse(body)
	if err != nil {
		http.Error(w, "the body is not JSON: "+err.Error(), http.StatusBadRequest)
		return
	}
	out, err := l.Record(r.Header.Get("Idempotency-Key"), in)
	switch {
	case errors.Is(err, errBadCall):
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(jsonv.Marshal(out))
}
