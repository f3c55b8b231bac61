package compose_test

import (
	"context"
	"fmt"
	"log"

	"github.com/augceo/vibe/compose"
	"github.com/augceo/vibe/jsonv"
	"github.com/augceo/vibe/registry"
	"github.com/augceo/vibe/schema"
)

// A mixin wraps an instruction: its slot "default" takes the
// instruction's properties, in the slot's place.
func ExampleFlatten() {
	reg := &registry.Registry{}
	mixin, _ := jsonv.Parse([]byte(`{"title": "Introspect", "type": "object",
		"properties": {"_plan": {"type": "string"}, "default": {"type": "object"}, "_review": {"type": "string"}},
		"required": ["_plan", "default", "_review"]}`))
	reg.Add("aug:macros/Introspect", mixin)

	tool, _ := jsonv.Parse([]byte(`{"type": "object", "allOf": [
		{"$ref": "aug:macros/Introspect"},
		{"properties": {"default": {"properties": {"reply": {"type": "string"}, "tone": {"type": "string"}}}}}]}`))
	out, err := compose.Flatten(context.Background(), "tool.json", tool, compose.Options{Registry: reg})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(schema.Properties(out).Names())
	fmt.Println(schema.Required(out))
	// Output:
	// [_plan reply tone _review]
	// [_plan reply tone _review]
}

func ExamplePipeline() {
	reg := &registry.Registry{}
	for _, name := range []string{"IdentifyParticipants", "FetchAvailability"} {
		doc, _ := jsonv.Parse([]byte(`{"type": "object", "properties": {"x": {"type": "string"}}}`))
		reg.Add("aug:instructions/"+name, doc)
	}
	out, err := compose.Pipeline(context.Background(), `"Schedule a meeting" | IdentifyParticipants | FetchAvailability`, compose.Options{Registry: reg})
	if err != nil {
		log.Fatal(err)
	}
	for name, step := range schema.Properties(out).All() {
		fmt.Println(name, schema.Strings(step.Lookup("references")))
	}
	// Output:
	// step1_identify_participants []
	// step2_fetch_availability [step1_identify_participants]
}

func ExampleSplit() {
	filled, _ := jsonv.Parse([]byte(`{"_considerations": "short and polite", "reply": "Hello!", "$qualityScore": 8}`))
	parts := compose.Split(filled)
	fmt.Println(parts.Output)
	fmt.Println(parts.Thinking[0].Name, parts.Thinking[0].Value)
	fmt.Println(parts.Metrics[0].Name, parts.Metrics[0].Value)
	// Output:
	// {"reply":"Hello!"}
	// _considerations short and polite
	// $qualityScore 8
}
