package jsonv_test

import (
	"fmt"

	"github.com/augceo/vibe/jsonv"
)

// A value keeps its members in the order written and its numbers as
// written, through parsing, pointers and printing.
func ExampleParse() {
	v, err := jsonv.Parse([]byte(`{"zeta": 1.50, "alpha": {"b": true, "a": [10, 2e3]}}`))
	if err != nil {
		panic(err)
	}
	n, _ := v.At("/alpha/a/1")
	fmt.Println(n.Literal())
	v, _ = jsonv.SetAll(v, "/mid/x", jsonv.StringValue("new"))
	fmt.Println(string(jsonv.Marshal(v)))
	// Output:
	// 2e3
	// {"zeta":1.50,"alpha":{"b":true,"a":[10,2e3]},"mid":{"x":"new"}}
}
