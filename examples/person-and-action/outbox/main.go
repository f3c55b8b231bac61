// Command outbox is the endpoint of the action SendReply_Activity: it
// sends a drafted reply once a person has decided to, prints each call it
// takes, and answers with what it did.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"sync"
)

var (
	mu      sync.Mutex
	replies = map[string]string{} // by idempotency key: a call retried sends nothing twice
)

func sendReply(w http.ResponseWriter, r *http.Request) {
	// What the action receives: the results its step references, each
	// under the step's name.
	var in struct {
		Reply    struct{ Subject, Body string } `json:"step2_draft_reply"`
		Approval struct{ Decision string }      `json:"step3_approve_reply_User"`
	}
	body, err := io.ReadAll(r.Body)
	if err == nil {
		err = json.Unmarshal(body, &in)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest) // a 4xx fails the step; a 5xx is retried
		return
	}
	key := r.Header.Get("Idempotency-Key") // the same on every attempt of one call
	mu.Lock()
	defer mu.Unlock()
	if _, seen := replies[key]; !seen {
		var shown bytes.Buffer
		json.Indent(&shown, body, "", "  ")
		fmt.Printf("Idempotency-Key: %s\n%s\n", key, shown.Bytes())
		// What it returns: the step's result. A real outbox sends in.Reply here.
		replies[key] = `{"sent": false}`
		if in.Approval.Decision == "send" {
			replies[key] = fmt.Sprintf(`{"sent": true, "ticket": "T-%d"}`, 1000+len(replies))
		}
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, replies[key])
}

func main() {
	log.Fatal(http.ListenAndServe(os.Args[1], http.HandlerFunc(sendReply)))
}
