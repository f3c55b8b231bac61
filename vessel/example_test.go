package vessel_test

import (
	"fmt"

	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/vessel"
)

// A delegate call's isolated sub-request, as seed 004 prints it for
// speaker_EN: the delegate's own context, the parent data its scopes
// select for the call's instance, and the call's parameters with the
// delegate's input schema — which need not match.
func ExampleSubRequest() {
	stored, _ := jsonv.Parse([]byte(`{"name": "speaker_EN",
		"context": [{"type": "system", "message": "You are an expert in English messaging."}],
		"schema": {"type": "object", "properties": {"recipientId": {"type": "string"}, "messageBody": {"type": "string"}}}}`))
	d, err := vessel.ParseDelegate("aug:requests/speaker_EN", "speaker_EN.json", stored)
	if err != nil {
		panic(err)
	}
	parent, _ := jsonv.Parse([]byte(`[
		{"type": "state", "_instance": "A", "data": {"locale": "en-GB", "secret": "a"}},
		{"type": "state", "_instance": "B", "data": {"locale": "en-US", "secret": "b"}}]`))
	msgs, _ := vessel.ParseContext("request", "", parent)
	states, _ := vessel.InitialStates(msgs)
	scoped, err := vessel.Scoped([]string{"state.locale"}, msgs, states["A"], "A")
	if err != nil {
		panic(err)
	}
	params, _ := jsonv.Parse([]byte(`{"userId": "u_123", "text": "Hello, world!"}`))
	for _, m := range vessel.SubRequest(d, scoped, params).Array() {
		fmt.Println(string(jsonv.Marshal(m)))
	}
	// Output:
	// {"type":"system","message":"You are an expert in English messaging."}
	// {"type":"state","data":{"locale":"en-GB"}}
	// {"type":"input","input":{"userId":"u_123","text":"Hello, world!"},"schema":{"type":"object","properties":{"recipientId":{"type":"string"},"messageBody":{"type":"string"}}}}
}
