package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/internal/golden"
	"github.com/augceo/vibe/internal/llmtest"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/llm/openai"
	"github.com/augceo/vibe/llm/replay"
)

// The recording's answers are written by a rule, not a model: judge reads
// a comment's words and gives its sentiment and the decision. With
// `go test ./examples/moderation-stream -run TestRecording -update` the
// rule answers the batch's multiplexed calls at the OpenAI wire protocol
// (internal/llmtest), through Vibe's real OpenAI provider, and the replay
// recorder writes what came back to answers.jsonl.

// A verdict is the rule's answer for one comment: the values of its two
// model steps.
type verdict struct {
	Assess struct {
		Reason    string  `json:"_reason"`
		Sentiment string  `json:"sentiment"`
		Toxicity  float64 `json:"toxicity"`
	}
	Decide struct {
		Decision string `json:"decision"`
		Reason   string `json:"reason"`
	}
}

// The rule's words: a comment's word counts when it starts with one.
var (
	positiveWords = []string{"love", "great", "excellent", "perfect", "amazing", "recommend", "best", "happy", "thank", "worth",
		"отличн", "спасибо", "gut", "buena", "gracias"}
	negativeWords = []string{"broke", "stopped", "disappoint", "worst", "terrible", "refund", "cracked", "weak", "delayed", "missing",
		"сломал", "kaputt"}
	toxicWords    = []string{"idiot", "moron", "clown", "stupid", "pathetic", "loser", "dumb"}
	escalateWords = []string{"fire", "shock", "lawyer", "court", "swelling", "hurt", "smoke"}
)

// matches returns the words of text that start with one of keys.
func matches(words []string, keys []string) []string {
	var out []string
	for _, w := range words {
		for _, k := range keys {
			if strings.HasPrefix(w, k) {
				out = append(out, w)
				break
			}
		}
	}
	return out
}

// judge is the rule: a safety or legal matter is escalated, a link is
// spam and hidden, an insult is hidden, everything else — criticism
// included — is published; the sentiment is whichever of praise and
// complaint has more words.
func judge(comment string) verdict {
	text := strings.ToLower(comment)
	words := strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	pos, neg := matches(words, positiveWords), matches(words, negativeWords)
	toxic, danger := matches(words, toxicWords), matches(words, escalateWords)
	link := strings.Contains(text, "http://") || strings.Contains(text, "https://") || strings.Contains(text, "www.")
	var v verdict
	a, d := &v.Assess, &v.Decide
	switch {
	case len(toxic) > 0:
		a.Sentiment, a.Toxicity, a.Reason = "negative", 0.9, "insults: "+strings.Join(toxic, ", ")
	case len(pos) > len(neg):
		a.Sentiment, a.Reason = "positive", "praise: "+strings.Join(pos, ", ")
	case len(neg) > len(pos):
		a.Sentiment, a.Toxicity, a.Reason = "negative", 0.2, "complaint: "+strings.Join(neg, ", ")
	case len(pos) > 0:
		a.Sentiment, a.Toxicity, a.Reason = "neutral", 0.05, "mixed: "+strings.Join(pos, ", ")+" against "+strings.Join(neg, ", ")
	default:
		a.Sentiment, a.Toxicity, a.Reason = "neutral", 0.05, "a plain question or remark"
	}
	switch {
	case len(danger) > 0:
		d.Decision, d.Reason = "escalate", "It reports a safety or legal matter ("+strings.Join(danger, ", ")+"): a person must look at it."
	case link:
		d.Decision, d.Reason = "hide", "It links to an outside offer: spam."
	case len(toxic) > 0:
		d.Decision, d.Reason = "hide", "It insults people, against the community rules."
	case a.Sentiment == "negative":
		d.Decision, d.Reason = "publish", "Criticism of the product is published."
	default:
		d.Decision, d.Reason = "publish", "Nothing in it is against the rules."
	}
	return v
}

// answer is the test model's value of a step for a comment.
func answer(step, prompt string, _ bool) string {
	v := judge(prompt)
	var part any = struct{}{}
	switch step {
	case "step1_assess_sentiment":
		part = v.Assess
	case "step2_decide_moderation":
		part = v.Decide
	}
	b, _ := json.Marshal(part)
	return string(b)
}

// The comments' generator: a comment of each kind is a template with its
// blanks filled, all picked by a fixed sequence of numbers.
var (
	products = []string{"headphones", "coffee grinder", "desk lamp", "running shoes", "backpack", "phone case", "blender", "keyboard",
		"water bottle", "tent", "e-reader", "smart watch", "air fryer", "office chair", "cordless drill", "rice cooker", "yoga mat",
		"electric kettle", "camera bag", "bike light"}
	devices = []string{"headphones", "e-reader", "smart watch", "cordless drill", "bike light", "electric kettle", "air fryer", "desk lamp"}
	blanks  = map[string][]string{
		"{detail}": {"Setup took two minutes.", "Quiet and well made.", "The colour is lovely.", "Thank you for the quick delivery.",
			"Packaging was fully recyclable.", "Worth every penny.", "My whole family uses it.", "Five stars."},
		"{flaw}": {"The buttons stick.", "The zip gave up on day one.", "The app keeps crashing.", "It rattles when you move it.",
			"The manual has half its pages missing.", "It is louder than a lawnmower."},
		"{who}":    {"sister", "dad", "flatmate", "grandmother", "son", "partner", "colleague"},
		"{with}":   {"an iPhone 15", "Linux", "a 110 V socket", "Bluetooth 5.0", "my old charger", "Android 14", "a car adapter"},
		"{colour}": {"black", "navy blue", "a larger size", "forest green", "white", "a travel size"},
		"{day}":    {"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"},
		"{link}": {"http://bit.ly/4xQ{n}", "https://cheap-deals.example/{n}", "www.free-prizes.example/?ref={n}",
			"https://t.me/earn{n}", "http://replica-shop.example/{n}"},
	}
	kinds = []struct {
		weight    int
		templates []string
	}{
		{28, []string{"Love this {product}! {detail}", "Best {product} I have owned. {detail}",
			"Great {product}, arrived early and does exactly what it says.", "Excellent value for the price. The {product} feels solid.",
			"Bought the {product} for my {who} and they are very happy with it.", "Would recommend the {product} to anyone. {detail}",
			"Second {product} from this shop, still perfect after a year.", "Amazing! The {product} is even better than the photos."}},
		{18, []string{"My {product} stopped working after {days} days. Really disappointed.",
			"The {product} arrived cracked and support has not answered in a week.",
			"Worst purchase this year: the {product} broke the second time I used it.",
			"Asked for a refund for the {product} {days} days ago and still nothing.", "Terrible {product}. {flaw}",
			"Disappointed: the {product} is much smaller than the pictures suggest.",
			"The delivery of my {product} was delayed three times. Not ordering again."}},
		{14, []string{"Will the {product} work with {with}?", "Is the {product} available in {colour}?",
			"How long is the warranty on the {product}?", "Can the {product} go in the dishwasher?",
			"What are the dimensions of the {product}?", "Anyone taken the {product} on a long trip? How does it hold up?"}},
		{10, []string{"Arrived on {day}, box slightly dented but the {product} is fine.", "Ordered the {product} in {colour}, it looks as described.",
			"Still testing the {product}, will update in a month.", "Got the {product} as a gift, have not opened it yet.",
			"The {product} came with a spare part, nice touch."}},
		{7, []string{"Great {device}, but the battery is weak.", "Love the design of the {product}, but it broke after a month.",
			"The {product} is excellent, but the delivery was delayed."}},
		{9, []string{"Make ${n} a day from home!!! Details at {link}", "Cheap {product} replicas at {link}, 90% off today only",
			"Win a free {product}: click {link}", "Earn crypto fast, sign up at {link}", "Lowest prices on every {product}: {link}"}},
		{7, []string{"Only an idiot would buy this {product}.", "You people are clowns. Fix your {product}.",
			"Whoever designed this {product} is a moron.", "Pathetic company, stupid {product}.",
			"Give me my refund, you losers.", "The staff at this shop are dumb as rocks."}},
		{5, []string{"The {device} caught fire on my desk last night. Someone could get hurt.",
			"My {device} gave me an electric shock when I plugged it in.", "I have passed the {product} issue to my lawyer. See you in court.",
			"The battery of my {device} is swelling and hot to the touch.", "My son hurt his hand on a sharp edge of the {product}.",
			"The {device} started to smoke while charging."}},
		{2, []string{"Отличная вещь, спасибо!", "Сломалось через неделю, очень жаль.", "Sehr gut, schnelle Lieferung!",
			"Leider nach zwei Tagen kaputt.", "¿Tiene garantía en España?", "Muy buena calidad, gracias."}},
	}
)

// numbers is a fixed sequence of pseudo-random numbers (splitmix64): the
// same comments on every Go version.
type numbers uint64

func (s *numbers) next(n int) int {
	*s += 0x9e3779b97f4a7c15
	z := uint64(*s)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return int((z ^ (z >> 31)) % uint64(n))
}

// generate writes n comments, a JSON string a line.
func generate(n int) []byte {
	s := numbers(16)
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	total := 0
	for _, k := range kinds {
		total += k.weight
	}
	for range n {
		w := s.next(total)
		k := 0
		for ; w >= kinds[k].weight; k++ {
			w -= kinds[k].weight
		}
		text := kinds[k].templates[s.next(len(kinds[k].templates))]
		for strings.Contains(text, "{") {
			i := strings.Index(text, "{")
			j := i + strings.Index(text[i:], "}") + 1
			var fill string
			switch blank := text[i:j]; blank {
			case "{product}":
				fill = products[s.next(len(products))]
			case "{device}":
				fill = devices[s.next(len(devices))]
			case "{days}":
				fill = fmt.Sprint(2 + s.next(40))
			case "{n}":
				fill = fmt.Sprint(100 + s.next(900))
			default:
				fill = blanks[blank][s.next(len(blanks[blank]))]
			}
			text = text[:i] + fill + text[j:]
		}
		enc.Encode(text)
	}
	return out.Bytes()
}

// TestComments: comments.jsonl is what the generator gives (-update
// writes it), 1,000 comments, each of its decisions among them.
func TestComments(t *testing.T) {
	got := generate(1000)
	if golden.Update() {
		if err := os.WriteFile("comments.jsonl", got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file, err := os.ReadFile("comments.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(file, got) {
		t.Fatal("comments.jsonl is not what the generator gives: go test ./examples/moderation-stream -run TestComments -update writes it")
	}
	seen := map[string]int{}
	for i, c := range lines(t, file) {
		var s string
		if err := json.Unmarshal([]byte(c), &s); err != nil || s == "" {
			t.Fatalf("line %d is not a comment: %s", i+1, c)
		}
		v := judge(s)
		seen[v.Decide.Decision]++
		seen[v.Assess.Sentiment]++
	}
	for _, k := range []string{"publish", "hide", "escalate", "positive", "neutral", "negative"} {
		if seen[k] < 30 {
			t.Errorf("%d comments are %s, want at least 30: %v", seen[k], k, seen)
		}
	}
	t.Logf("%v", seen)
}

func lines(t *testing.T, b []byte) []string {
	t.Helper()
	out := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(out) != 1000 {
		t.Fatalf("%d lines, want 1000", len(out))
	}
	return out
}

// TestRecording runs the whole batch from answers.jsonl on the embedded
// engine, as `go run` does: ⌈1000/32⌉ = 32 model calls, every comment
// completed with the rule's decision, each decision in the ledger once;
// run again on the same data, it reads the batch back, asking the model
// nothing and running no action. A change to a prompt or a schema that
// the recording no longer matches fails it; -update records the rule's
// answers again, from the wire.
func TestRecording(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 1,000 comments on the embedded engine")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if golden.Update() {
		// The answers name the rule as their model, wherever they show.
		const rule = "keyword-rule-written-for-this-example"
		model := llmtest.NewServer(t, llmtest.Multiplexed(answer), llmtest.Options{Tokens: true, Model: rule})
		path := filepath.Join(t.TempDir(), "answers.jsonl")
		rec, err := replay.Record(openai.New(openai.Options{Model: rule, BaseURL: model.URL, APIKey: "none", MaxRetries: -1}), path)
		if err != nil {
			t.Fatal(err)
		}
		// One group at a time: the recording's lines follow the input's.
		if _, err := run(ctx, config{Data: t.TempDir(), Out: io.Discard, Concurrency: 1, Model: rec}, io.Discard); err != nil {
			t.Fatal(err)
		}
		rec.Close()
		if model.Requests() != 32 {
			t.Fatalf("recorded %d calls, want 32", model.Requests())
		}
		b, _ := os.ReadFile(path)
		if err := os.WriteFile("answers.jsonl", b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var model llm.Provider // the embedded recording
	if golden.Update() {   // the embedded copy is the one before the update
		p, err := replay.Open("answers.jsonl")
		if err != nil {
			t.Fatal(err)
		}
		model = p
	}

	data := t.TempDir()
	var out bytes.Buffer
	var log strings.Builder
	rep, err := run(ctx, config{Data: data, Out: &out, Model: model}, &log)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	t.Logf("\n%s", log.String())
	s := rep.Summary
	// Each comment's decision is appended once (a retried call would be a
	// repeat, answered from the ledger).
	if rep.Calls != 32 || s.Requests != 32 || s.Done != 1000 || s.Failed != 0 || rep.Added != 1000 {
		t.Errorf("%d calls made, %d decisions recorded; summary %+v", rep.Calls, rep.Added, s)
	}
	for _, want := range []string{"replayed from a recording (examples/moderation-stream/answers.jsonl) written for this example, not asked of a live model",
		"1000 comments: 1000 ok, 0 failed", "1000 decisions recorded by this run; it holds 1000."} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log lacks %q", want)
		}
	}

	if !regexp.MustCompile(`\nModel: 32 calls for the batch, [1-9]\d* prompt \+ [1-9]\d* completion tokens\.\n`).MatchString(log.String()) {
		t.Errorf("the log does not say the batch's 32 calls and their tokens")
	}

	comments := lines(t, Comments())
	results := lines(t, out.Bytes())
	ledger := readLedger(t, filepath.Join(data, LedgerFile))
	id := BatchID(Comments(), batch.DefaultSize)
	for i, line := range results {
		var r batch.Result
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		var comment string
		json.Unmarshal([]byte(comments[i]), &comment)
		want := judge(comment)
		v, _ := jsonv.Parse(r.Output)
		sentiment := v.Lookup("step1_assess_sentiment").Lookup("sentiment").Str()
		decision := v.Lookup("step2_decide_moderation").Lookup("decision").Str()
		recorded := v.Lookup("step3_record_decision_Activity")
		key := "vibe:" + batch.ItemID(id, i+1) + ":step3_record_decision_Activity"
		if r.Line != i+1 || r.Status != batch.StatusCompleted || sentiment != want.Assess.Sentiment || decision != want.Decide.Decision {
			t.Fatalf("line %d, %s: %s; want %s, %s", i+1, comment, line, want.Assess.Sentiment, want.Decide.Decision)
		}
		if e := ledger[key]; e.Decision != decision || e.DecisionID != recorded.Lookup("decisionId").Str() || !recorded.Lookup("recorded").Bool() {
			t.Fatalf("line %d: recorded %s; the ledger holds %+v under %s", i+1, jsonv.Marshal(recorded), e, key)
		}
	}
	if len(ledger) != 1000 {
		t.Errorf("the ledger holds %d decisions, want 1000", len(ledger))
	}

	// Again, on the same data: the batch is read back.
	var again bytes.Buffer
	log.Reset()
	rep, err = run(ctx, config{Data: data, Out: &again, Model: model}, &log)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if rep.Calls != 0 || rep.Added != 0 || rep.Repeats != 0 || rep.Summary.Done != 1000 {
		t.Errorf("run again: %d calls made, %d decisions recorded, %d repeats; summary %+v", rep.Calls, rep.Added, rep.Repeats, rep.Summary)
	}
	if !bytes.Equal(again.Bytes(), out.Bytes()) {
		t.Errorf("run again, the results differ")
	}
	if !strings.Contains(log.String(), "all made by an earlier run: this run read their results back.") || !strings.Contains(log.String(), "0 decisions recorded by this run; it holds 1000.") {
		t.Errorf("the log of the second run:\n%s", log.String())
	}
	if n := len(readLedger(t, filepath.Join(data, LedgerFile))); n != 1000 {
		t.Errorf("the ledger holds %d decisions after a second run", n)
	}
}

// readLedger reads a ledger's entries by key, failing on a key twice.
func readLedger(t *testing.T, path string) map[string]Entry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]Entry{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		if _, dup := out[e.Key]; dup {
			t.Errorf("the ledger holds %s twice", e.Key)
		}
		out[e.Key] = e
	}
	return out
}

// TestLedger: a decision is appended once per key, across reopening, and
// a repeated call gets the first call's id; calls without a key or a
// decision are refused, over HTTP with a 400.
func TestLedger(t *testing.T) {
	path := filepath.Join(t.TempDir(), LedgerFile)
	l, err := OpenLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	in, _ := jsonv.Parse([]byte(`{"step2_decide_moderation": {"decision": "hide", "reason": "spam"}}`))
	first, err := l.Record("vibe:b-1:step3", in)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if l, err = OpenLedger(path); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	srv := httptest.NewServer(l)
	defer srv.Close()
	post := func(key, body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	body := string(jsonv.Marshal(in))
	cases := []struct {
		name, key, body string
		status          int
		answer          string
	}{
		{"again after reopening", "vibe:b-1:step3", body, 200, string(jsonv.Marshal(first))},
		{"another key", "vibe:b-2:step3", body, 200, `{"recorded":true,"decisionId":"d-`},
		{"no key", "", body, 400, "bad call: no idempotency key"},
		{"no decision", "vibe:b-3:step3", `{"step2_decide_moderation": {}}`, 400, "bad call: the input holds no step2_decide_moderation.decision"},
		{"not JSON", "vibe:b-4:step3", `{`, 400, "the body is not JSON"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, answer := post(c.key, c.body)
			if status != c.status || !strings.HasPrefix(answer, c.answer) {
				t.Errorf("%d %s, want %d %s…", status, answer, c.status, c.answer)
			}
		})
	}
	if added, repeats, held := l.Counts(); added != 1 || repeats != 1 || held != 2 {
		t.Errorf("%d added, %d repeats, %d held; want 1, 1, 2", added, repeats, held)
	}
	if got := readLedger(t, path); len(got) != 2 || got["vibe:b-1:step3"].Reason != "spam" {
		t.Errorf("the ledger holds %+v", got)
	}
}
