package console

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/augceo/vibe/batch"
	"github.com/augceo/vibe/compare"
	"github.com/augceo/vibe/internal/golden"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/llm"
	"github.com/augceo/vibe/process"
	"github.com/augceo/vibe/replay"
)

// fakeBatches serves batches by id and records how results were asked.
type fakeBatches struct {
	list    []batch.Status
	results map[string][]batch.Result
	asked   []string // "id failedOnly limit" of each Results call
}

func (f *fakeBatches) ListBatches(ctx context.Context) ([]batch.Status, error) { return f.list, nil }

func (f *fakeBatches) Batch(ctx context.Context, id string) (batch.Status, error) {
	for _, s := range f.list {
		if s.ID == id {
			return s, nil
		}
	}
	return batch.Status{}, fmt.Errorf("no such batch: %s", id)
}

func (f *fakeBatches) Results(ctx context.Context, id string, failedOnly bool, limit int) ([]batch.Result, error) {
	f.asked = append(f.asked, fmt.Sprint(id, " ", failedOnly, " ", limit))
	out := f.results[id]
	return out[:min(len(out), limit)], nil
}

// fakeBatchesFixture: batch-1 ended with failed items, batch-2 still runs.
func fakeBatchesFixture() *fakeBatches {
	at := func(s string) time.Time { t, _ := time.Parse(time.RFC3339, s); return t }
	ended := at("2026-11-23T11:40:40Z")
	return &fakeBatches{
		list: []batch.Status{
			{ID: "batch-2", Process: "moderate", Status: "running", Items: 400, Total: 1000, Done: 230, Failed: 0, Waiting: 5,
				Usage: llm.Usage{PromptTokens: 9000, CompletionTokens: 2100}, Requests: 9, StartedAt: at("2026-11-23T11:59:00Z")},
			{ID: "batch-1", Process: "invoices", Status: "failed", Items: 100, Done: 90, Failed: 10,
				Usage: llm.Usage{PromptTokens: 1000, CompletionTokens: 200}, Requests: 4, StartedAt: at("2026-11-23T11:40:00Z"), FinishedAt: &ended},
		},
		results: map[string][]batch.Result{"batch-1": {
			{Line: 3, ID: "invoices-0000bbbb", Status: "failed", Error: "step llmContext1.extract: the model's answer breaks the schema after 3 requests: /total: got string, want number"},
			{Line: 7, Status: "failed", Error: "line 7: /email: <b>not</b> an email"},
		}},
	}
}

func TestBatchList(t *testing.T) {
	f := fakeBatchesFixture()
	c := pagesAt(t, Options{Batches: f})
	status, page := fetch(t, c, "/batches")
	if status != 200 {
		t.Fatalf("%d\n%s", status, page)
	}
	golden.Check(t, "testdata/batches.html", []byte(page))
	// Newest first as listed; progress as items finished of the input's
	// lines while they are read (batch-2: 400 read of 1,000), then of items,
	// throughput as items finished a second (until the end, once ended).
	inOrder(t, page,
		`<a href="/batches/batch-2">`, "moderate", `<span class="badge running">running</span>`, "230 of 1000, 5 waiting", "3.8/s", "11100",
		`<a href="/batches/batch-1">`, "invoices", `<span class="badge partial">completed with failures</span>`, "100 of 100", "2.5/s", "<td class=\"num\">10</td>", "1200")
	// Totals of the batches' tokens; no cost without prices.
	inOrder(t, page, "Totals of the 2 batches: <strong>12300 tokens</strong> (10000 prompt + 2300 completion)</p>")
	if strings.Contains(page, "price") {
		t.Errorf("a console without prices speaks of them:\n%s", page)
	}
	// A batch whose every item failed is failed.
	f.list = append(f.list, batch.Status{ID: "batch-0", Process: "invoices", Status: "failed", Items: 3, Failed: 3, StartedAt: f.list[1].StartedAt, FinishedAt: f.list[1].FinishedAt})
	if _, page := fetch(t, c, "/batches"); !strings.Contains(page, `<a href="/batches/batch-0">batch-0</a></td><td>invoices</td><td><span class="badge failed">failed</span>`) {
		t.Errorf("a batch whose every item failed:\n%s", page)
	}
	f.list = nil
	if _, page := fetch(t, c, "/batches"); !strings.Contains(page, "No batches.") {
		t.Errorf("no batches:\n%s", page)
	}
	if status, _ := fetch(t, pagesAt(t, Options{}), "/batches"); status != 404 {
		t.Errorf("a console without batches answers /batches with %d", status)
	}
}

func TestBatchPage(t *testing.T) {
	f := fakeBatchesFixture()
	c := pagesAt(t, Options{Batches: f})
	status, page := fetch(t, c, "/batches/batch-1")
	if status != 200 {
		t.Fatalf("%d\n%s", status, page)
	}
	golden.Check(t, "testdata/batch.html", []byte(page))
	inOrder(t, page, "Batch batch-1", `<span class="badge partial">completed with failures</span>`, "started 2026-11-23 11:40:00 UTC", "finished 2026-11-23 11:40:40 UTC",
		"100 of 100", "(100%)", "<dd>90</dd>", "<dd>10</dd>", "2.5/s over 40s", "4 (1000 prompt + 200 completion tokens)",
		"Failed items",
		// An item's process is a link; a bad input line has none. Errors
		// are text.
		`<td class="num">3</td>`, `<a href="/processes/invoices-0000bbbb">invoices-0000bbbb</a>`, "/total: got string, want number",
		`<td class="num">7</td>`, "line 7: /email: &lt;b&gt;not&lt;/b&gt; an email")
	if strings.Contains(page, "<b>not</b>") {
		t.Error("an item's error is not escaped")
	}
	if strings.Join(f.asked, ";") != fmt.Sprint("batch-1 true ", failedLimit) {
		t.Errorf("results asked as %q: only the failed ones, at most %d", f.asked, failedLimit)
	}

	// A batch without failures does not read its results.
	f.asked = nil
	status, page = fetch(t, c, "/batches/batch-2")
	if status != 200 || len(f.asked) != 0 || !strings.Contains(page, "<h2>Failed items</h2>\n<p class=\"empty\">None.</p>") || !strings.Contains(page, `<dd><a href="/inbox">5</a>, answered in the inbox</dd>`) {
		t.Errorf("a batch without failures: %d, results asked %q\n%s", status, f.asked, page)
	}

	// As many failed items as the page shows: it says there may be more.
	many := make([]batch.Result, failedLimit+5)
	for i := range many {
		many[i] = batch.Result{Line: i + 1, Status: "failed", Error: "bad"}
	}
	f.results["batch-1"] = many
	if _, page := fetch(t, c, "/batches/batch-1"); !strings.Contains(page, fmt.Sprintf("The first %d are shown.", failedLimit)) ||
		strings.Count(page, `<td class="problem">bad</td>`) != failedLimit {
		t.Errorf("past the limit:\n%s", page)
	}
}

// TestBatchCost: with prices, the batch list and a batch's page show
// what its tokens cost, the batch discount taken off the part that went
// through the provider's Batch API, the cached share, and the provider
// batches.
func TestBatchCost(t *testing.T) {
	at := func(s string) time.Time { t, _ := time.Parse(time.RFC3339, s); return t }
	since := at("2026-11-23T12:00:10Z")
	// 1,000,000 prompt tokens (400,000 cached) and 100,000 completion
	// tokens, all batched: (600,000×0.15 + 400,000×0.075 + 100,000×0.6) /
	// 1e6 = 0.18 USD, half of it with the discount.
	u := llm.Usage{PromptTokens: 1_000_000, CachedPromptTokens: 400_000, CompletionTokens: 100_000}.AsBatched()
	f := &fakeBatches{list: []batch.Status{{ID: "pb", Process: "moderate", Status: "running", Items: 1000, Done: 640, Model: "gpt-4o-mini-2024-07-18",
		Usage: u, Requests: 32, StartedAt: at("2026-11-23T12:00:00Z"),
		Provider: &batch.ProviderState{Submitted: 1, Requests: 32, Flights: []batch.Flight{{ID: "batch_abc", Status: "in_progress", Requests: 12, Since: &since}}}}}}
	prices := &llm.Prices{Currency: "USD", Models: map[string]llm.Price{"gpt-4o-mini": {Input: 0.15, CachedInput: 0.075, Output: 0.6, BatchDiscount: 0.5}}}
	c := pagesAt(t, Options{Batches: f, Prices: prices})
	_, list := fetch(t, c, "/batches")
	inOrder(t, list, "Totals of the 1 batches: <strong>1100000 tokens</strong>", "· <strong>0.0900 USD</strong></p>",
		"<th class=\"num\">Cost</th>", `<a href="/batches/pb">`, "0.0900 USD")
	_, page := fetch(t, c, "/batches/pb")
	inOrder(t, page, "32 (1000000 prompt, 400000 of them cached + 100000 completion tokens; 1100000 of them through the provider's Batch API)",
		"<dt>Cost</dt><dd>0.0900 USD, the batch discount applied</dd>",
		"<dt>Provider batches</dt><dd>1 submitted with 32 requests", "batch_abc</span> in_progress · 12 requests · since 2026-11-23 12:00:10 UTC")
	if _, page := fetch(t, pagesAt(t, Options{Batches: f}), "/batches/pb"); strings.Contains(page, "Cost") {
		t.Error("a console without prices shows a cost")
	}
}

// waitingBatches are fakeBatches whose running batches have items waiting
// for a person (WaitingItems), by batch.
type waitingBatches struct {
	*fakeBatches
	waiting map[string][]string
	asked   []string // the batches asked for their waiting items
}

func (w *waitingBatches) WaitingItems(ctx context.Context, id string) ([]string, error) {
	w.asked = append(w.asked, id)
	return w.waiting[id], nil
}

// hostedItems are fakeProcesses that also read batch items by id, which
// they do not list: a batch's items are not among the processes.
type hostedItems struct {
	*fakeProcesses
	items map[string]*process.Info
}

func (h hostedItems) Get(ctx context.Context, id string) (*process.Info, error) {
	if in, ok := h.items[id]; ok {
		cp := *in
		return &cp, nil
	}
	return h.fakeProcesses.Get(ctx, id)
}

// TestInboxBatchItems: the inbox lists, after the waiting processes, the
// items of running batches that wait for a person — found through
// WaitingItems, since items are not listed among processes — each with its
// answer form; only batches that say they have waiting items are asked,
// and a later page does not list them again.
func TestInboxBatchItems(t *testing.T) {
	f := meetingFixture(t)
	proc, err := f.Get(context.Background(), "schedule-meeting-0000aaaa")
	if err != nil {
		t.Fatal(err)
	}
	item := *proc
	item.ID, item.Process = "batch-2-7", "moderate"
	gone := item
	gone.ID, gone.Status = "batch-2-9", process.Completed // answered since the batch was read
	b := &waitingBatches{fakeBatches: fakeBatchesFixture(), waiting: map[string][]string{"batch-2": {"batch-2-7", "batch-2-9"}, "batch-1": {"batch-1-3"}}}
	c := newTestConsole(t, Options{Processes: hostedItems{f, map[string]*process.Info{"batch-2-7": &item, "batch-2-9": &gone}}, Batches: b})
	status, body := get(t, c, "/inbox")
	if status != 200 {
		t.Fatalf("inbox: %d\n%s", status, body)
	}
	for _, id := range []string{"schedule-meeting-0000aaaa", "batch-2-7"} {
		if !strings.Contains(body, `id="`+id+`"`) || !strings.Contains(body, `action="/processes/`+id+`/answer"`) {
			t.Errorf("the inbox has no form for %s\n%s", id, body)
		}
	}
	if strings.Contains(body, `id="batch-2-9"`) {
		t.Error("the inbox lists an item that no longer waits")
	}
	if strings.Index(body, `id="batch-2-7"`) < strings.Index(body, `id="schedule-meeting-0000aaaa"`) {
		t.Error("the batch's item comes before the waiting process")
	}
	if len(b.asked) != 1 || b.asked[0] != "batch-2" {
		t.Errorf("batches asked for their waiting items: %v, want the running one with waiting items", b.asked)
	}
	if _, body := get(t, c, "/inbox?cursor=1"); strings.Contains(body, `id="batch-2-7"`) {
		t.Error("a later page lists the batch's items again")
	}
}

// TestReplayBatch: a replay's record is listed with the batches, its kind
// beside its process; its page says it is a replay and how many items
// changed, and reads no result lines (a replay's report is its
// command's).
func TestReplayBatch(t *testing.T) {
	f := fakeBatchesFixture()
	ended := f.list[1].StartedAt.Add(10 * time.Second)
	f.list = append(f.list, batch.Status{ID: "moderate-replay-3f2a9c1e4b5d", Process: "moderate", Kind: batch.KindReplay, Status: "failed",
		Items: 201, Done: 200, Failed: 1, Changed: 104, Requests: 7, StartedAt: f.list[1].StartedAt, FinishedAt: &ended})
	reports := fakeReplays{"moderate-replay-3f2a9c1e4b5d": {Items: []replay.Item{
		{Line: 1, ID: "moderate-1", Outcome: replay.Same},
		{Line: 2, ID: "moderate-2", Changed: true, Outcome: replay.Changed, Changes: []compare.Change{
			{Path: "/assess/sentiment", Before: jsonv.StringValue("negative"), After: jsonv.StringValue("neutral")}}},
		{Line: 3, ID: "moderate-3", Changed: true, Outcome: replay.Failed, Error: "chunk assess: <b>refused</b>"},
	}}}
	c := pagesAt(t, Options{Batches: f, Replays: reports})
	status, page := fetch(t, c, "/batches")
	if status != 200 {
		t.Fatalf("%d\n%s", status, page)
	}
	inOrder(t, page, `<a href="/batches/moderate-replay-3f2a9c1e4b5d">moderate-replay-3f2a9c1e4b5d</a></td><td>moderate <span class="id">replay</span></td>`,
		`<span class="badge partial">completed with failures</span>`, "201 of 201")
	if strings.Count(page, `<span class="id">replay</span>`) != 1 {
		t.Errorf("a batch's row says replay:\n%s", page)
	}
	status, page = fetch(t, c, "/batches/moderate-replay-3f2a9c1e4b5d")
	if status != 200 {
		t.Fatalf("%d\n%s", status, page)
	}
	inOrder(t, page, "<h1>Replay moderate-replay-3f2a9c1e4b5d", "<dt>Changed</dt><dd>104 of the items replayed",
		"7 (0 prompt + 0 completion tokens)",
		// The items that changed, how, and why one failed; not those that
		// came out the same.
		"<h2>Items that changed</h2>", `<td class="num">2</td><td>moderate-2</td><td>changed</td><td><code>/assess/sentiment</code>: &#34;negative&#34; → &#34;neutral&#34;`,
		`<td class="num">3</td><td>moderate-3</td><td>failed</td>`, "chunk assess: &lt;b&gt;refused&lt;/b&gt;",
		"what its vibe replay wrote (--out)")
	if len(f.asked) != 0 || strings.Contains(page, "Failed items") || strings.Contains(page, "moderate-1<") {
		t.Errorf("a replay's page read results %q, or shows an item that did not change:\n%s", f.asked, page)
	}
	// A replay whose report was not kept (it runs) shows its record.
	delete(reports, "moderate-replay-3f2a9c1e4b5d")
	if status, page := fetch(t, c, "/batches/moderate-replay-3f2a9c1e4b5d"); status != 200 || strings.Contains(page, "Items that changed") {
		t.Errorf("a replay without a report: %d\n%s", status, page)
	}
}

// fakeReplays are replays' reports by id.
type fakeReplays map[string]*replay.Report

func (f fakeReplays) ReplayReport(ctx context.Context, id string) (*replay.Report, error) {
	if rep, ok := f[id]; ok {
		return rep, nil
	}
	return nil, replay.ErrNoReport
}
