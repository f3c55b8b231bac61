package llmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
)

// do sends a request to srv and decodes its JSON answer into out (when
// not nil); it returns the status.
func do(t *testing.T, method, url, contentType string, body []byte, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, url, err, b)
		}
	}
	return res.StatusCode
}

// upload uploads contents as a request file named name; it returns the
// file's id.
func upload(t *testing.T, srv *Server, name, contents string) string {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.WriteField("purpose", "batch")
	fw, _ := mw.CreateFormFile("file", name)
	io.WriteString(fw, contents)
	mw.Close()
	var f struct{ ID string }
	if code := do(t, "POST", srv.URL+"/files", mw.FormDataContentType(), buf.Bytes(), &f); code != 200 {
		t.Fatalf("upload: HTTP %d", code)
	}
	return f.ID
}

// openAIBatch is what the tests read of an OpenAI batch object.
type openAIBatch struct {
	ID            string
	Status        string
	OutputFileID  string                                 `json:"output_file_id"`
	ErrorFileID   string                                 `json:"error_file_id"`
	RequestCounts struct{ Total, Completed, Failed int } `json:"request_counts"`
	Errors        struct {
		Data []lineError
	}
}

func create(t *testing.T, srv *Server, fileID string) openAIBatch {
	t.Helper()
	var b openAIBatch
	body := fmt.Sprintf(`{"input_file_id":%q,"endpoint":"/v1/chat/completions","completion_window":"24h","metadata":{"vibe_key":"k"}}`, fileID)
	if code := do(t, "POST", srv.URL+"/batches", "application/json", []byte(body), &b); code != 200 {
		t.Fatalf("create: HTTP %d", code)
	}
	return b
}

func get(t *testing.T, srv *Server, id string) openAIBatch {
	t.Helper()
	var b openAIBatch
	do(t, "GET", srv.URL+"/batches/"+id, "", nil, &b)
	return b
}

// line is a request file's line asking body.
func line(id, body string) string {
	return fmt.Sprintf(`{"custom_id":%q,"method":"POST","url":"/v1/chat/completions","body":%s}`+"\n", id, body)
}

const chatBody = `{"model":"m","messages":[{"role":"user","content":"Hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"s","schema":{"type":"object","properties":{"b":{},"a":{}}}}}}`

// TestOpenAIValidation: a request file that breaks OpenAI's rules fails
// its batch at the first step, each error on its line.
func TestOpenAIValidation(t *testing.T) {
	srv := NewWith(t, func(string, string) string { return "{}" })
	file := line("a", chatBody) + line("a", chatBody) +
		`{"custom_id":"c","method":"GET","url":"/v1/chat/completions","body":{}}` + "\n" +
		`{"custom_id":"d","method":"POST","url":"/v1/embeddings","body":{}}` + "\n" +
		line("e", `{"messages":[]}`) + line("f", strings.Replace(chatBody, `"m"`, `"n"`, 1))
	b := create(t, srv, upload(t, srv, "bad.jsonl", file))
	if b.Status != "validating" {
		t.Errorf("created as %s", b.Status)
	}
	b = get(t, srv, b.ID)
	var got []string
	for _, e := range b.Errors.Data {
		got = append(got, fmt.Sprintf("%d %s", e.Line, e.Code))
	}
	want := "[2 duplicate_custom_id 3 invalid_value 4 mismatched_endpoint 5 invalid_request 6 mismatched_model]"
	if b.Status != "failed" || fmt.Sprint(got) != want {
		t.Errorf("status %s, errors %v; want failed, %s", b.Status, got, want)
	}
	if b.OutputFileID != "" || b.ErrorFileID != "" || srv.Batches.Answered() != 0 {
		t.Errorf("a failed batch answered: %+v", b)
	}
	// A batch over no batch file is refused at once.
	if code := do(t, "POST", srv.URL+"/batches", "application/json", []byte(`{"input_file_id":"file-none","endpoint":"/v1/chat/completions","completion_window":"24h"}`), nil); code != 400 {
		t.Errorf("a batch over no file: HTTP %d", code)
	}
}

// TestOpenAIClock: a batch moves one step per poll, not while held,
// answers Pace requests a step, and Advance moves it without a poll; its
// answers are the answer func's, as a direct request's, and direct
// requests are counted apart.
func TestOpenAIClock(t *testing.T) {
	srv := NewWith(t, func(_, body string) string { return fmt.Sprintf(`{"b":%q}`, Read(body).Prompts[0]) })
	srv.Batches.Pace(1)
	b := create(t, srv, upload(t, srv, "k.jsonl", line("x", chatBody)+line("y", chatBody)))
	var steps []string
	srv.Batches.Hold()
	steps = append(steps, get(t, srv, b.ID).Status)
	srv.Batches.Release()
	for range 5 {
		g := get(t, srv, b.ID)
		steps = append(steps, fmt.Sprintf("%s:%d", g.Status, g.RequestCounts.Completed))
	}
	if want := "[validating in_progress:0 in_progress:1 finalizing:2 completed:2 completed:2]"; fmt.Sprint(steps) != want {
		t.Errorf("steps %v, want %s", steps, want)
	}
	b2 := create(t, srv, upload(t, srv, "k2.jsonl", line("z", chatBody)))
	srv.Batches.Hold()
	if !srv.Batches.Advance(b2.ID) || srv.Batches.Status(b2.ID) != "in_progress" {
		t.Errorf("advanced to %s", srv.Batches.Status(b2.ID))
	}
	// The answer in the output file is what a direct request gets.
	b = get(t, srv, b.ID)
	var out bytes.Buffer
	res, _ := http.Get(srv.URL + "/files/" + b.OutputFileID + "/content")
	io.Copy(&out, res.Body)
	res.Body.Close()
	var direct json.RawMessage
	do(t, "POST", srv.URL+"/chat/completions", "application/json", []byte(chatBody), &direct)
	var first struct {
		CustomID string `json:"custom_id"`
		Response struct {
			StatusCode int             `json:"status_code"`
			Body       json.RawMessage `json:"body"`
		}
	}
	json.Unmarshal(bytes.SplitN(out.Bytes(), []byte("\n"), 2)[0], &first)
	if first.CustomID != "x" || first.Response.StatusCode != 200 || !bytes.Equal(first.Response.Body, direct) {
		t.Errorf("output line %s, direct answer %s", out.Bytes(), direct)
	}
	if srv.Requests() != 1 || srv.Batches.Answered() != 2 || srv.Batches.ResultsRead() != 1 {
		t.Errorf("%d direct requests, %d batch answers, %d results read", srv.Requests(), srv.Batches.Answered(), srv.Batches.ResultsRead())
	}
	if got := srv.Batches.Submitted(); got["x"] != 1 || got["y"] != 1 || got["z"] != 1 {
		t.Errorf("submitted %v", got)
	}
}

// TestOpenAIFaults: a whole batch expires with its requests, a failed
// request's answer is an error, and OnEvent and Await hear each step.
func TestOpenAIFaults(t *testing.T) {
	var events []string
	srv := NewServer(t, func(string, string) string { return "{}" }, Options{OnEvent: func(e Event) { events = append(events, e.Kind) }})
	srv.Batches.Fail("x", "bad request")
	created := srv.Batches.Await(EventBatch)
	b := create(t, srv, upload(t, srv, "k.jsonl", line("x", chatBody)+line("y", chatBody)))
	if e := <-created; e.ID != b.ID {
		t.Errorf("awaited %+v", e)
	}
	get(t, srv, b.ID) // in_progress
	get(t, srv, b.ID) // x failed, y answered
	if !srv.Batches.ExpireBatch(b.ID) {
		t.Fatal("no batch to expire")
	}
	b = get(t, srv, b.ID)
	if b.Status != "expired" || b.RequestCounts.Completed != 1 || b.RequestCounts.Failed != 1 {
		t.Errorf("expired as %+v", b)
	}
	b2 := create(t, srv, upload(t, srv, "k2.jsonl", line("p", chatBody)+line("q", chatBody)))
	srv.Batches.ExpireBatch(b2.ID)
	b2 = get(t, srv, b2.ID)
	res, _ := http.Get(srv.URL + "/files/" + b2.ErrorFileID + "/content")
	errs, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if b2.Status != "expired" || b2.OutputFileID != "" || strings.Count(string(errs), `"code":"batch_expired"`) != 2 {
		t.Errorf("a batch expired before it ran: %+v, error file %s", b2, errs)
	}
	res, _ = http.Get(srv.URL + "/files/" + b.ErrorFileID + "/content")
	errs, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(errs), `"status_code":400`) || !strings.Contains(string(errs), "bad request") {
		t.Errorf("error file %s", errs)
	}
	if want := "[upload batch poll poll poll upload batch poll results results]"; fmt.Sprint(events) != want {
		t.Errorf("events %v, want %s", events, want)
	}
}

// TestOpenAILists: batches listed newest first in pages; files by purpose.
func TestOpenAILists(t *testing.T) {
	srv := NewWith(t, func(string, string) string { return "{}" })
	var ids []string
	for i := range 5 {
		ids = append(ids, create(t, srv, upload(t, srv, fmt.Sprintf("k%d.jsonl", i), line("x", chatBody))).ID)
	}
	var page struct {
		Data []struct {
			ID       string
			Filename string
		}
		HasMore bool   `json:"has_more"`
		LastID  string `json:"last_id"`
	}
	var seen []string
	after := ""
	for {
		do(t, "GET", srv.URL+"/batches?limit=2"+after, "", nil, &page)
		for _, d := range page.Data {
			seen = append(seen, d.ID)
		}
		if !page.HasMore {
			break
		}
		after = "&after=" + page.LastID
	}
	if want := fmt.Sprint([]string{ids[4], ids[3], ids[2], ids[1], ids[0]}); fmt.Sprint(seen) != want {
		t.Errorf("listed %v, want %s", seen, want)
	}
	srv.Batches.Advance(ids[0])
	srv.Batches.Advance(ids[0])
	srv.Batches.Advance(ids[0])
	srv.Batches.Advance(ids[0]) // completed: an output file
	do(t, "GET", srv.URL+"/files?purpose=batch", "", nil, &page)
	if len(page.Data) != 5 || page.Data[0].Filename != "k4.jsonl" {
		t.Errorf("batch files %+v", page.Data)
	}
	do(t, "GET", srv.URL+"/files?purpose=batch_output", "", nil, &page)
	if len(page.Data) != 1 {
		t.Errorf("output files %+v", page.Data)
	}
}

// TestAnthropicBatches: creation refuses bad requests at once; results
// are there only once a batch ended; FailBatch errors what is left; a
// cancel ends it with the rest canceled.
func TestAnthropicBatches(t *testing.T) {
	srv := NewAnthropic(t, func(string, string) string { return `{"a":1}` }, Options{})
	params := `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"Hi"}],"tools":[{"name":"s","input_schema":{"type":"object"}}]}`
	body := func(ids ...string) []byte {
		var reqs []string
		for _, id := range ids {
			reqs = append(reqs, fmt.Sprintf(`{"custom_id":%q,"params":%s}`, id, params))
		}
		return []byte(`{"requests":[` + strings.Join(reqs, ",") + `]}`)
	}
	for _, bad := range [][]byte{body("a", "a"), body("a b"), body(), []byte(`{"requests":[{"custom_id":"a","params":{}}]}`)} {
		if code := do(t, "POST", srv.URL+"/v1/messages/batches", "application/json", bad, nil); code != 400 {
			t.Errorf("%s: HTTP %d", bad, code)
		}
	}
	type batch struct {
		ID               string
		ProcessingStatus string         `json:"processing_status"`
		RequestCounts    map[string]int `json:"request_counts"`
		ResultsURL       *string        `json:"results_url"`
	}
	var b batch
	do(t, "POST", srv.URL+"/v1/messages/batches", "application/json", body("a", "b", "c"), &b)
	if code := do(t, "GET", srv.URL+"/v1/messages/batches/"+b.ID+"/results", "", nil, nil); code != 400 {
		t.Errorf("results of a batch in progress: HTTP %d", code)
	}
	srv.Batches.Pace(1)
	do(t, "GET", srv.URL+"/v1/messages/batches/"+b.ID, "", nil, &b)
	srv.Batches.FailBatch(b.ID, "overloaded")
	do(t, "GET", srv.URL+"/v1/messages/batches/"+b.ID, "", nil, &b)
	res, _ := http.Get(*b.ResultsURL)
	lines, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if b.ProcessingStatus != "ended" || strings.Count(string(lines), `"type":"errored"`) != 2 || strings.Count(string(lines), `"type":"tool_use"`) != 1 {
		t.Errorf("%+v: %s", b, lines)
	}
	do(t, "POST", srv.URL+"/v1/messages/batches", "application/json", body("a", "b"), &b)
	do(t, "POST", srv.URL+"/v1/messages/batches/"+b.ID+"/cancel", "", nil, &b)
	if b.ProcessingStatus != "canceling" {
		t.Errorf("cancelled to %s", b.ProcessingStatus)
	}
	do(t, "GET", srv.URL+"/v1/messages/batches/"+b.ID, "", nil, &b)
	if b.ProcessingStatus != "ended" || b.RequestCounts["canceled"] != 2 {
		t.Errorf("cancelled as %+v", b)
	}
	if code := do(t, "POST", srv.URL+"/v1/messages/batches/"+b.ID+"/cancel", "", nil, nil); code != 409 {
		t.Errorf("cancelling an ended batch: HTTP %d", code)
	}
	if srv.Batches.Created() != 2 || srv.Batches.Cancels() != 2 || srv.Requests() != 0 {
		t.Errorf("%d batches, %d cancels, %d direct requests", srv.Batches.Created(), srv.Batches.Cancels(), srv.Requests())
	}
}

// TestReadAnthropic: Read reads an Anthropic Messages body as it reads an
// OpenAI chat body, so one answer func serves both wires.
func TestReadAnthropic(t *testing.T) {
	schema := `{"type":"object","properties":{"zz":{},"aa":{}}}`
	anthropic := `{"model":"m","max_tokens":10,"system":[{"type":"text","text":"Fill it."}],` +
		`"messages":[{"role":"user","content":[{"type":"text","text":"Item one\nmore"}]},{"role":"assistant","content":"{}"}],` +
		`"tools":[{"name":"step","input_schema":` + schema + `}]}`
	chat := `{"model":"m","messages":[{"role":"system","content":"Fill it."},{"role":"user","content":"Item one\nmore"},{"role":"assistant","content":"{}"}],` +
		`"response_format":{"type":"json_schema","json_schema":{"name":"step","schema":` + schema + `}}}`
	a, c := Read(anthropic), Read(chat)
	if fmt.Sprint(a) != fmt.Sprint(c) || fmt.Sprint(a.Props) != "[zz aa]" || a.Prompts[0] != "Item one" || !a.Repair {
		t.Errorf("anthropic %+v, chat %+v", a, c)
	}
	if schemaName([]byte(anthropic)) != "step" {
		t.Errorf("name %q", schemaName([]byte(anthropic)))
	}
	if got := FirstValue("", anthropic); got != `{"zz":null,"aa":null}` {
		t.Errorf("first value %s", got)
	}
}
